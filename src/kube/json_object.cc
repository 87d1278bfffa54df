#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "kube/json_object_impl.h"

namespace canhazgpu::kube::json_internal {

// Our Abseil's StrCat takes absl::string_view, which is not std::string_view
// in Debian's build, hence the std::string arithmetic.
std::string Join(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) {
    out += '.';
  }
  return out.append(key);
}

std::string Index(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

// "PATH: MESSAGE", or MESSAGE alone at the root.
static absl::Status ErrorAt(std::string_view path, const std::string& message) {
  return absl::InvalidArgumentError(path.empty() ? message : std::string(path) + ": " + message);
}

absl::Status TypeError(std::string_view path, std::string_view expected, const Json& got) {
  return ErrorAt(path, "expected " + std::string(expected) + ", got " + got.type_name());
}

absl::Status Read(const Json& in, std::string_view path, std::string& out) {
  if (!in.is_string()) {
    return TypeError(path, "a string", in);
  }
  out = in.get_ref<const std::string&>();
  return absl::OkStatus();
}

absl::Status Read(const Json& in, std::string_view path, int64_t& out) {
  // Integers only: Kubernetes sends int64 fields as JSON integers, and a
  // float read here would come back as an integer, changing the document.
  if (!in.is_number_integer()) {
    return TypeError(path, "an integer", in);
  }
  if (in.is_number_unsigned() && in.get<uint64_t>() > uint64_t{INT64_MAX}) {
    return ErrorAt(path, "integer " + std::to_string(in.get<uint64_t>()) + " is out of range");
  }
  out = in.get<int64_t>();
  return absl::OkStatus();
}

absl::Status Read(const Json& in, std::string_view path, bool& out) {
  if (!in.is_boolean()) {
    return TypeError(path, "a boolean", in);
  }
  out = in.get<bool>();
  return absl::OkStatus();
}

absl::Status CheckDepth(const Json& in, std::string_view path, std::string_view key) {
  // An explicit stack: the point is not to recurse.
  std::vector<std::pair<const Json*, int>> pending = {{&in, 0}};
  while (!pending.empty()) {
    const auto [value, depth] = pending.back();
    pending.pop_back();
    if (!value->is_structured()) {
      continue;
    }
    if (depth >= kMaxKeptDepth) {
      return ErrorAt(key.empty() ? std::string(path) : Join(path, key),
                     "nested deeper than " + std::to_string(kMaxKeptDepth) + " levels");
    }
    for (const Json& child : *value) {
      pending.emplace_back(&child, depth + 1);
    }
  }
  return absl::OkStatus();
}

absl::Status Read(const Json& in, std::string_view path, Json& out) {
  RETURN_IF_ERROR(CheckDepth(in, path));
  out = in;
  return absl::OkStatus();
}

}  // namespace canhazgpu::kube::json_internal

namespace canhazgpu::kube {

std::optional<TimePoint> TimeAt(const nlohmann::json& object,
                                const nlohmann::json::json_pointer& pointer) {
  const std::string text = StringAt(object, pointer);
  absl::Time t;
  std::string why;
  if (text.empty() || !absl::ParseTime(absl::RFC3339_full, text, &t, &why)) return std::nullopt;
  return std::chrono::time_point_cast<TimePoint::duration>(absl::ToChronoTime(t));
}

}  // namespace canhazgpu::kube
