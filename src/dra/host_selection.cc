#include "dra/host_selection.h"

#include <cstdio>
#include <set>

#include "cel/program.h"
#include "core/check.h"
#include "core/quantity.h"
#include "core/strings.h"
#include "dra/allocator.h"

namespace canhazgpu::dra {
namespace {

// A CEL string literal holding `text` exactly, so that user input can never
// change the expression around it.
std::string CelString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Attribute(std::string_view driver, std::string_view name) {
  return StrCat("device.attributes[\"", driver, "\"].", name);
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

absl::Status NotEmpty(const std::optional<std::string>& value, std::string_view flag) {
  if (value && value->empty()) return absl::InvalidArgumentError(StrCat(flag, " is empty"));
  return absl::OkStatus();
}

std::string Plural(size_t n, std::string_view word) {
  return StrCat(n, " ", word, n == 1 ? "" : "s");
}

}  // namespace

std::string DeviceWants::Describe() const {
  std::vector<std::string> parts;
  // A selector may be 10 KiB over many lines: quoted as a bounded excerpt.
  for (const std::string& w : where) parts.push_back(StrCat("--where '", cel::Excerpt(w, 0), "'"));
  if (min_memory) parts.push_back(StrCat("--min-memory ", *min_memory));
  if (product) parts.push_back(StrCat("--product '", *product, "'"));
  if (mig_profile) parts.push_back(StrCat("--mig ", *mig_profile));
  return Join(parts, " ");
}

absl::StatusOr<std::vector<std::string>> DeviceWants::Selectors(std::string_view driver) const {
  for (auto [value, flag] :
       {std::pair{&min_memory, "--min-memory"}, {&product, "--product"}, {&mig_profile, "--mig"}}) {
    if (absl::Status s = NotEmpty(*value, flag); !s.ok()) return s;
  }
  // Without --mig the store's unit, a whole GPU; with it, a MIG instance.
  std::vector<std::string> out = {
      StrCat(Attribute(driver, "type"), " == ", mig_profile ? "\"mig\"" : "\"gpu\"")};
  if (mig_profile)
    out.push_back(StrCat(Attribute(driver, "profile"), " == ", CelString(*mig_profile)));
  if (min_memory) {
    absl::StatusOr<Quantity> q = Quantity::Parse(*min_memory);
    if (!q.ok() || q->Sign() < 0) {
      return absl::InvalidArgumentError(StrCat("--min-memory '", *min_memory,
                                               "' is not a size; use a quantity like 40Gi or 80G"));
    }
    out.push_back(StrCat("device.capacity[\"", driver, "\"].memory.compareTo(quantity(",
                         CelString(*min_memory), ")) >= 0"));
  }
  if (product) {
    out.push_back(StrCat(Attribute(driver, "productName"), ".lowerAscii().contains(",
                         CelString(AsciiLower(*product)), ")"));
  }
  for (const std::string& w : where) {
    if (w.empty()) return absl::InvalidArgumentError("--where is empty");
    // Compiled here too, so that a bad selector is reported as the flag.
    if (absl::StatusOr<cel::Program> p = cel::Env::DraSelector().Compile(w); !p.ok()) {
      // The message quotes the selector around the error.
      return absl::InvalidArgumentError(StrCat("--where: ", p.status().message()));
    }
    out.push_back(w);
  }
  return out;
}

absl::StatusOr<HostSelection> SelectHostGpus(const std::vector<GpuInfo>& gpus,
                                             const std::string& node, const DeviceWants& wants,
                                             int count) {
  absl::StatusOr<std::vector<std::string>> selectors = wants.Selectors();
  if (!selectors.ok()) return selectors.status();
  DevicePool pool = BuildDevicePool(gpus, node);
  std::map<std::string, const Device*> by_name;
  for (const Device& d : pool.devices) by_name[d.name] = &d;

  // Every matching device at once: allocation mode All on a host where
  // nothing is held. Selector errors surface here, compile or runtime.
  // The device type is the class (as a cluster's DeviceClass would say
  // it), the rest are the request's selectors.
  DeviceClass type{.name = wants.mig_profile ? "mig.gpu.canhazgpu.dev" : "gpu.canhazgpu.dev",
                   .selectors = {selectors->front()}};
  std::vector<std::string> request_selectors(selectors->begin() + 1, selectors->end());
  absl::StatusOr<std::unique_ptr<Allocator>> allocator = Allocator::Create({type}, {pool});
  if (!allocator.ok()) return allocator.status();
  RequestSpec all{.device_class = type.name, .selectors = request_selectors, .all = true};
  Claim claim{.name = "request", .requests = {{.name = "gpu", .alternatives = {all}}}};
  Explanation why;
  absl::StatusOr<Allocation> every = (*allocator)->Allocate(claim, &why);
  HostSelection out;
  if (every.ok()) {
    std::set<int> eligible;
    for (const AllocatedDevice& a : every->devices) {
      const Device& d = *by_name.at(a.device);
      if (!eligible.insert(d.gpu_index).second) continue;  // one instance per GPU
      if (d.is_mig) {
        const AttributeValue* uuid = FindAttribute(d, kDriverName, "uuid");
        CANHAZGPU_CHECK(uuid != nullptr);  // every device we publish has one (devices.cc)
        out.mig_uuid[d.gpu_index] = uuid->string_value;
      }
    }
    out.eligible.assign(eligible.begin(), eligible.end());
  } else if (absl::IsInvalidArgument(every.status())) {
    std::string message(every.status().message());
    if (!why.error.empty()) message = why.error;
    return absl::InvalidArgumentError(StrCat(wants.Describe(), ": ", message));
  }
  if (static_cast<int>(out.eligible.size()) >= count) return out;

  // Too few: the allocator explains, selector by selector, what it rejected.
  std::string explanation;
  if (absl::StatusOr<std::unique_ptr<Allocator>> again = Allocator::Create({type}, {pool});
      again.ok()) {
    RequestSpec exact{.device_class = type.name, .selectors = request_selectors, .count = count};
    claim.requests[0].alternatives = {exact};
    Explanation because;
    if (!(*again)->Allocate(claim, &because).ok()) explanation = because.Text();
  }
  std::string unit = wants.mig_profile ? "GPU(s) with a matching MIG instance" : "GPU(s)";
  std::string summary =
      StrCat("no ", count, " ", unit, " on this host can ever match ", wants.Describe(), ": ",
             out.eligible.size(), " of ", Plural(gpus.size(), "GPU"), " do");
  if (explanation.empty()) return absl::InvalidArgumentError(summary);
  // Drop the trailing newline; Fail() adds one.
  if (explanation.back() == '\n') explanation.pop_back();
  return absl::InvalidArgumentError(StrCat(summary, "\n", explanation));
}

}  // namespace canhazgpu::dra
