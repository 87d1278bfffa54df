#include "clusterview/view.h"

#include <charconv>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::clusterview {

using nlohmann::json;

std::string KeyOf(const json& object) {
  const json meta = object.value("metadata", json::object());
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  return ns.empty() ? name : StrCat(ns, "/", name);
}

int64_t VersionOf(const json& object) {
  const std::string rv = object.value("/metadata/resourceVersion"_json_pointer, std::string());
  int64_t v = 0;
  std::from_chars(rv.data(), rv.data() + rv.size(), v);
  return v;
}

std::map<std::string, json> ByKey(const std::vector<json>& objects) {
  std::map<std::string, json> out;
  for (const json& o : objects) out[KeyOf(o)] = o;
  return out;
}

SlicePools PoolsFromJson(const std::vector<json>& slices) {
  std::vector<kube::ResourceSlice> typed;
  std::vector<std::string> problems;
  for (const json& s : slices) {
    auto slice = kube::ResourceSlice::FromJson(s);
    if (!slice.ok()) {
      problems.push_back(StrCat("slice ", KeyOf(s), ": ", slice.status().message()));
      continue;
    }
    typed.push_back(*std::move(slice));
  }
  SlicePools pools = PoolsFromSlices(typed);
  pools.problems.insert(pools.problems.end(), problems.begin(), problems.end());
  return pools;
}

std::string NoteOf(const nlohmann::json& object) {
  return kube::StringField(object.value("/metadata/annotations"_json_pointer, nlohmann::json()),
                           kNoteAnnotation);
}

std::string LabelledUser(const std::string& user) {
  return user.empty() ? user : StrCat(user, " (from label)");
}

}  // namespace canhazgpu::clusterview
