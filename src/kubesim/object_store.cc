#include "kubesim/object_store.h"

#include <time.h>

#include <algorithm>
#include <random>

#include "absl/strings/escaping.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/strings.h"
#include "core/uuid.h"
#include "kubesim/object_metadata.h"
#include "kubesim/pod_groups.h"
#include "kubesim/validation.h"
#include "kubesim/workloads.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using object_metadata::HasFinalizers;
using object_metadata::Meta;
using object_metadata::MetaOf;
using object_metadata::Text;

constexpr char kSep = '\x1f';

std::string RandomUid() { return RandomUuid(); }

// generateName's suffix: five characters of the alphabet the server uses
// (no vowels, no look-alikes).
std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  thread_local std::mt19937 rng{std::random_device{}()};
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return out;
}

// The object without metadata and status: what a generation counts.
json SpecPart(const json& object) {
  json copy = object;
  copy.erase("metadata");
  copy.erase("status");
  copy.erase("apiVersion");
  copy.erase("kind");
  return copy;
}

bool ValidName(const std::string& name, bool allow_dots) {
  if (name.empty() || name.size() > 253) return false;
  if (!std::isalnum(static_cast<unsigned char>(name.front())) ||
      !std::isalnum(static_cast<unsigned char>(name.back()))) {
    return false;
  }
  for (char c : name) {
    const bool lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!lower && c != '-' && !(allow_dots && c == '.')) return false;
  }
  return true;
}

kube::ApiStatus MethodNotAllowed(const std::string& message) {
  return {.code = 405, .reason = "MethodNotAllowed", .message = message};
}

// The status a created object starts with.
void SetInitialStatus(const ResourceType& type, json& object) {
  if (type.resource == "namespaces") {
    object["status"] = {{"phase", "Active"}};
  } else if (type.has_status && type.resource != "pods") {
    // Status is the server's and controllers': a create keeps none, except
    // that a pod's phase starts Pending.
    object.erase("status");
  } else if (type.resource == "pods") {
    object["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
  }
  if (type.resource == "customresourcedefinitions") {
    object["status"] = {
        {"conditions",
         {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}},
          {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"}}}},
        {"acceptedNames", object.value("/spec/names"_json_pointer, json::object())},
        {"storedVersions", json::array()}};
  }
}

// What an update of `old` to `object` stores: the status subresource
// changes only the status, the object itself everything but the status and
// the fields that the server keeps.
json UpdatedObject(const ResourceType& type, const std::string& ns, const std::string& name,
                   const json& old, json object, bool status) {
  const json& old_meta = MetaOf(old);
  json updated;
  if (status) {
    // Only the status changes; everything else stays as stored.
    updated = old;
    if (object.contains("status")) {
      updated["status"] = object["status"];
    } else {
      updated.erase("status");
    }
  } else {
    updated = std::move(object);
    json& m = Meta(updated);
    for (const char* kept : {"uid", "creationTimestamp", "deletionTimestamp",
                             "deletionGracePeriodSeconds", "generation"}) {
      if (old_meta.contains(kept)) {
        m[kept] = old_meta[kept];
      } else {
        m.erase(kept);
      }
    }
    m["name"] = name;
    if (type.namespaced) m["namespace"] = ns;
    if (type.has_status) {
      if (old.contains("status")) {
        updated["status"] = old["status"];
      } else {
        updated.erase("status");
      }
    }
    if (Text(updated, "apiVersion").empty()) updated["apiVersion"] = type.api_version();
    if (Text(updated, "kind").empty()) updated["kind"] = type.kind;
    if (SpecPart(updated) != SpecPart(old)) {
      m["generation"] = old_meta.value("generation", 1) + 1;
    }
  }
  return updated;
}

}  // namespace

const Clock& ObjectStore::DefaultClock() { return RealClock(); }

std::string ObjectStore::Timestamp() const { return FormatTimestampSeconds(clock_.Now()); }

ObjectStore::ObjectStore(size_t event_window, const Clock& clock)
    : clock_(clock),
      types_(ResourceTypes::BuiltIn()),
      event_window_(std::max<size_t>(event_window, 1)) {
  const ResourceType* ns = types_.Find("", "v1", "namespaces");
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    CreateLocked(*ns, "",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  }
}

ObjectStore::Key ObjectStore::MakeKey(const std::string& type_key, const std::string& ns,
                                      const std::string& name) {
  return StrCat(type_key, std::string(1, kSep), ns, std::string(1, kSep), name);
}

std::optional<ResourceType> ObjectStore::FindType(const std::string& group,
                                                  const std::string& version,
                                                  const std::string& resource) const {
  MutexLock lock(mu_);
  const ResourceType* t = types_.Find(group, version, resource);
  if (t == nullptr) return std::nullopt;
  return *t;
}

std::vector<ResourceType> ObjectStore::Types() const {
  MutexLock lock(mu_);
  return types_.all();
}

int64_t ObjectStore::resource_version() const {
  MutexLock lock(mu_);
  return resource_version_;
}

void ObjectStore::set_collect_background_dependents(bool collect) {
  MutexLock lock(mu_);
  collect_background_dependents_ = collect;
}

void ObjectStore::set_event_window(size_t events) {
  MutexLock lock(mu_);
  event_window_ = std::max<size_t>(events, 1);
  while (events_.size() > event_window_) {
    oldest_resumable_ = events_.front().resource_version;
    events_.pop_front();
  }
}

void ObjectStore::RecordLocked(const std::string& event_type, const ResourceType& type,
                               const json& object) {
  const json& meta = MetaOf(object);
  events_.push_back({event_type, resource_version_, type.key(), Text(meta, "namespace"), object});
  while (events_.size() > event_window_) {
    // A watch from the dropped event's version would miss it.
    oldest_resumable_ = events_.front().resource_version;
    events_.pop_front();
  }
  ++generation_;
  changed_.notify_all();
}

Outcome ObjectStore::Create(const ResourceType& type, const std::string& ns, json object,
                            bool strict) {
  MutexLock lock(mu_);
  return CreateLocked(type, ns, std::move(object), strict);
}

std::optional<kube::ApiStatus> ObjectStore::Check(const ResourceType& type, json& object,
                                                  const json* old, bool strict) {
  Validation v = Validate(type, object, old);
  if (v.no_schema) {
    kube::ApiStatus refused;  // InternalError, 500: our bug, not the client's
    refused.reason = "InternalError";
    refused.message = *v.no_schema;
    return refused;
  }
  if (v.decode_error) {
    return kube::BadRequestStatus(StrCat(type.kind, " in version \"", type.version,
                                         "\" cannot be handled as a ", type.kind, ": ",
                                         *v.decode_error));
  }
  if (strict && !v.unknown_fields.empty()) {
    std::string fields;
    for (const std::string& f : v.unknown_fields) {
      fields += StrCat(fields.empty() ? "" : ", ", "unknown field \"", f, "\"");
    }
    return kube::BadRequestStatus(StrCat("strict decoding error: ", fields));
  }
  for (kube::StatusCause& cause : CheckWorkload(type, object)) v.causes.push_back(std::move(cause));
  if (!v.causes.empty()) {
    return kube::InvalidStatus(type.group, type.kind, Text(MetaOf(object), "name"),
                               std::move(v.causes));
  }
  return std::nullopt;
}

std::optional<kube::ApiStatus> ObjectStore::CheckWriteLocked(const ResourceType& type, json& object,
                                                             const json* old, bool strict) const {
  if (!generic_workload_) return Check(type, object, old, strict);
  std::vector<HeldSchedulingGroup> held = TakeSchedulingGroups(type, object);
  std::vector<kube::StatusCause> causes = CheckGenericWorkload(type, object, held, old);
  if (auto invalid = Check(type, object, old, strict)) return invalid;
  if (!causes.empty()) {
    return kube::InvalidStatus(type.group, type.kind, Text(MetaOf(object), "name"),
                               std::move(causes));
  }
  PutBackSchedulingGroups(object, std::move(held));
  return std::nullopt;
}

void ObjectStore::EnableGenericWorkload() {
  MutexLock lock(mu_);
  generic_workload_ = true;
  types_.Add(PodGroupType());
}

std::optional<kube::ApiStatus> ObjectStore::CheckAdminAccessLocked(const ResourceType& type,
                                                                   const std::string& ns,
                                                                   const json& object) const {
  if (type.group != "resource.k8s.io") return std::nullopt;
  const bool is_template = type.resource == "resourceclaimtemplates";
  if (!is_template && type.resource != "resourceclaims") return std::nullopt;
  const std::string prefix = is_template ? "spec.spec.devices.requests" : "spec.devices.requests";
  const json requests = object.value(is_template ? "/spec/spec/devices/requests"_json_pointer
                                                 : "/spec/devices/requests"_json_pointer,
                                     json::array());
  std::vector<kube::StatusCause> causes;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].value("/exactly/adminAccess"_json_pointer, json()) == true) {
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: admin access to devices requires the "
                        "`resource.kubernetes.io/admin-access: true` label on the containing "
                        "namespace",
                        StrCat(prefix, "[", i, "].exactly.adminAccess")});
    }
  }
  if (causes.empty()) return std::nullopt;
  auto it = objects_.find(MakeKey("/namespaces", "", ns));
  if (it != objects_.end() &&
      it->second.value("/metadata/labels/resource.kubernetes.io~1admin-access"_json_pointer,
                       std::string()) == "true") {
    return std::nullopt;
  }
  return kube::InvalidStatus(type.group, type.kind, Text(MetaOf(object), "name"),
                             std::move(causes));
}

Outcome ObjectStore::CreateLocked(const ResourceType& type, const std::string& ns, json object,
                                  bool strict) {
  if (!object.is_object()) return {kube::BadRequestStatus("the body must be a JSON object"), {}};
  json& meta = Meta(object);
  const std::string body_ns = Text(meta, "namespace");
  if (type.namespaced) {
    if (!body_ns.empty() && body_ns != ns) {
      return {kube::BadRequestStatus(
                  "the namespace of the provided object does not match the namespace sent on "
                  "the request"),
              {}};
    }
    if (!objects_.contains(MakeKey("/namespaces", "", ns))) {
      return {kube::NotFoundStatus("", "namespaces", ns), {}};
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  std::string name = Text(meta, "name");
  if (name.empty()) {
    const std::string generate = Text(meta, "generateName");
    if (generate.empty()) {
      return {kube::InvalidStatus(
                  type.group, type.kind, "",
                  {{"FieldValueRequired", "Required value: name or generateName is required",
                    "metadata.name"}}),
              {}};
    }
    do {
      name = generate + RandomSuffix();
    } while (objects_.contains(MakeKey(type.key(), ns, name)));
    meta["name"] = name;
  }
  if (!ValidName(name, type.resource != "namespaces")) {
    return {kube::InvalidStatus(
                type.group, type.kind, name,
                {{"FieldValueInvalid",
                  StrCat("Invalid value: \"", name,
                         "\": a lowercase RFC 1123 subdomain must consist of lower case "
                         "alphanumeric characters, '-' or '.', and must start and end with an "
                         "alphanumeric character"),
                  "metadata.name"}}),
            {}};
  }
  // Before defaulting: a Job's selector is made from its uid.
  meta["uid"] = RandomUid();
  DefaultWorkload(type, object);
  if (auto invalid = CheckWriteLocked(type, object, nullptr, strict))
    return {std::move(invalid), {}};
  if (auto forbidden = CheckAdminAccessLocked(type, ns, object)) return {std::move(forbidden), {}};
  const Key key = MakeKey(type.key(), ns, name);
  if (objects_.contains(key)) {
    return {kube::AlreadyExistsStatus(type.group, type.resource, name), {}};
  }
  if (Text(object, "apiVersion").empty()) object["apiVersion"] = type.api_version();
  if (Text(object, "kind").empty()) object["kind"] = type.kind;
  meta["creationTimestamp"] = Timestamp();
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta["resourceVersion"] = std::to_string(++resource_version_);
  SetInitialStatus(type, object);
  if (type.resource == "customresourcedefinitions") RegisterCrdLocked(object);
  objects_[key] = object;
  RecordLocked("ADDED", type, object);
  return {std::nullopt, object};
}

Outcome ObjectStore::Get(const ResourceType& type, const std::string& ns,
                         const std::string& name) const {
  MutexLock lock(mu_);
  auto it = objects_.find(MakeKey(type.key(), type.namespaced ? ns : "", name));
  if (it == objects_.end()) return {kube::NotFoundStatus(type.group, type.resource, name), {}};
  return {std::nullopt, it->second};
}

Outcome ObjectStore::List(const ResourceType& type, const std::string& ns,
                          const ListOptions& options) const {
  MutexLock lock(mu_);
  const std::string prefix =
      type.namespaced && !ns.empty() ? MakeKey(type.key(), ns, "") : type.key() + kSep;
  std::string start = prefix;
  if (!options.continue_token.empty()) {
    std::string decoded;
    if (!absl::WebSafeBase64Unescape(options.continue_token, &decoded) ||
        !decoded.starts_with(prefix)) {
      return {kube::BadRequestStatus("continue key is not valid: invalid continue token"), {}};
    }
    start = decoded + '\x01';  // just past the last key returned
  }
  json items = json::array();
  std::string last;
  bool more = false;
  for (auto it = objects_.lower_bound(start); it != objects_.end() && it->first.starts_with(prefix);
       ++it) {
    const json& object = it->second;
    if (!options.labels.Matches(MetaOf(object).value("labels", json()))) continue;
    if (!options.fields.Matches(object)) continue;
    if (options.limit > 0 && static_cast<int64_t>(items.size()) == options.limit) {
      more = true;
      break;
    }
    items.push_back(object);
    last = it->first;
  }
  json list = {{"apiVersion", type.api_version()},
               {"kind", type.kind + "List"},
               {"metadata", {{"resourceVersion", std::to_string(resource_version_)}}},
               {"items", std::move(items)}};
  if (more) list["metadata"]["continue"] = absl::WebSafeBase64Escape(last);
  return {std::nullopt, std::move(list)};
}

Outcome ObjectStore::Update(const ResourceType& type, const std::string& ns,
                            const std::string& name, json object, bool status, bool strict) {
  MutexLock lock(mu_);
  return UpdateLocked(type, ns, name, std::move(object), status, strict);
}

Outcome ObjectStore::UpdateLocked(const ResourceType& type, const std::string& ns,
                                  const std::string& name, json object, bool status, bool strict) {
  if (!object.is_object()) return {kube::BadRequestStatus("the body must be a JSON object"), {}};
  const std::string real_ns = type.namespaced ? ns : "";
  const Key key = MakeKey(type.key(), real_ns, name);
  auto it = objects_.find(key);
  if (it == objects_.end()) return {kube::NotFoundStatus(type.group, type.resource, name), {}};
  if (status && !type.has_status) {
    return {MethodNotAllowed(StrCat(type.resource, " has no status subresource")), {}};
  }
  const json& old = it->second;
  json& meta = Meta(object);
  const std::string body_name = Text(meta, "name");
  if (!body_name.empty() && body_name != name) {
    return {kube::BadRequestStatus(StrCat("the name of the object (", body_name,
                                          ") does not match the name on the URL (", name, ")")),
            {}};
  }
  const std::string rv = Text(meta, "resourceVersion");
  const json& old_meta = MetaOf(old);
  if (!rv.empty() && rv != Text(old_meta, "resourceVersion")) {
    return {kube::ConflictStatus(type.group, type.resource, name,
                                 "the object has been modified; please apply your changes to "
                                 "the latest version and try again"),
            {}};
  }
  json updated = UpdatedObject(type, real_ns, name, old, std::move(object), status);
  Meta(updated)["resourceVersion"] = Text(old_meta, "resourceVersion");
  if (auto invalid = CheckWriteLocked(type, updated, &old, strict)) return {std::move(invalid), {}};
  if (updated == old) return {std::nullopt, old};  // no change, no new version
  // Once the last finalizer of an object being deleted goes, the object
  // goes. (A pod in its grace period without finalizers waits for its
  // kubelet instead.)
  if (MetaOf(updated).contains("deletionTimestamp") && HasFinalizers(old) &&
      !HasFinalizers(updated)) {
    objects_[key] = updated;
    RemoveLocked(type, key, "Background");
    FinishForegroundDeletionsLocked();
    return {std::nullopt, updated};
  }
  if (MetaOf(old).contains("deletionTimestamp") && !MetaOf(updated).contains("deletionTimestamp")) {
    Meta(updated)["deletionTimestamp"] = old_meta["deletionTimestamp"];
  }
  Meta(updated)["resourceVersion"] = std::to_string(++resource_version_);
  if (type.resource == "customresourcedefinitions") RegisterCrdLocked(updated);
  it->second = updated;
  RecordLocked("MODIFIED", type, updated);
  return {std::nullopt, updated};
}

Outcome ObjectStore::BindPod(const std::string& ns, const std::string& name, json binding,
                             bool strict) {
  const ResourceType binding_type{
      .version = "v1", .resource = "bindings", .singular = "binding", .kind = "Binding"};
  if (auto invalid = Check(binding_type, binding, nullptr, strict)) return {std::move(invalid), {}};
  MutexLock lock(mu_);
  const ResourceType* type = types_.Find("", "v1", "pods");
  const json target = binding.is_object() ? binding.value("target", json::object()) : json();
  const std::string node = target.is_object() ? Text(target, "name") : "";
  if (node.empty()) {
    return {kube::InvalidStatus("", "Binding", name,
                                {{.reason = "FieldValueRequired",
                                  .message = "Required value",
                                  .field = "target.name"}}),
            {}};
  }
  if (const std::string kind = Text(target, "kind"); !kind.empty() && kind != "Node") {
    return {kube::BadRequestStatus(StrCat("Binding target kind must be Node, got ", kind)), {}};
  }
  auto it = objects_.find(MakeKey(type->key(), ns, name));
  if (it == objects_.end()) return {kube::NotFoundStatus("", "pods", name), {}};
  json& pod = it->second;
  json& meta = Meta(pod);
  const std::string uid = Text(binding.value("metadata", json::object()), "uid");
  if (!uid.empty() && uid != Text(meta, "uid")) {
    return {kube::ConflictStatus("", "pods/binding", name,
                                 StrCat("Precondition failed: UID in precondition: ", uid,
                                        ", UID in object meta: ", Text(meta, "uid"))),
            {}};
  }
  if (meta.contains("deletionTimestamp")) {
    return {kube::ConflictStatus(
                "", "pods/binding", name,
                StrCat("pod ", name, " is being deleted, cannot be assigned to a host")),
            {}};
  }
  json& spec = pod["spec"];
  if (const std::string assigned = Text(spec, "nodeName"); !assigned.empty()) {
    return {kube::ConflictStatus(
                "", "pods/binding", name,
                StrCat("pod ", name, " is already assigned to node \"", assigned, "\"")),
            {}};
  }
  spec["nodeName"] = node;
  json& conditions = pod["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  json scheduled = {{"type", "PodScheduled"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", Timestamp()}};
  auto found = std::find_if(conditions.begin(), conditions.end(),
                            [](const json& c) { return c.value("type", "") == "PodScheduled"; });
  if (found != conditions.end()) {
    *found = scheduled;
  } else {
    conditions.push_back(scheduled);
  }
  meta["resourceVersion"] = std::to_string(++resource_version_);
  RecordLocked("MODIFIED", *type, pod);
  return {std::nullopt,
          {{"kind", "Status"},
           {"apiVersion", "v1"},
           {"metadata", json::object()},
           {"status", "Success"},
           {"code", 201}}};
}

const ResourceType* ObjectStore::TypeOfKeyLocked(const Key& key) const {
  const size_t sep = key.find(kSep);
  const std::string type_key = key.substr(0, sep);
  for (const ResourceType& t : types_.all()) {
    if (t.key() == type_key) return &t;
  }
  return nullptr;
}

void ObjectStore::UnregisterCrdLocked(const json& crd) {
  const json spec = crd.value("spec", json::object());
  const std::string group = Text(spec, "group");
  const std::string plural = Text(spec.value("names", json::object()), "plural");
  const std::string type_key = group + "/" + plural;
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (it->first.starts_with(type_key + kSep)) {
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  while (types_.Remove(group, plural)) {
  }
}

bool ObjectStore::WaitForEvents(const ResourceType& type, const std::string& ns, int64_t after,
                                std::chrono::milliseconds wait, std::vector<WatchEvent>* out,
                                const std::function<bool()>& stop_waiting) const {
  MutexLock lock(mu_);
  const auto deadline = RealClock().MonoNow() + wait;
  while (true) {
    // Asked under the lock that WakeWatchers takes, so a wake-up that comes
    // between the caller's own look and this wait is not lost; and asked
    // first, so a dropped watch gets no event made after its drop.
    if (stop_waiting && stop_waiting()) return true;
    // An event after `after` has left the window: the watcher missed it.
    if (after < oldest_resumable_) return false;
    bool found = false;
    for (const WatchEvent& e : events_) {
      if (e.resource_version <= after || e.type_key != type.key()) continue;
      if (type.namespaced && !ns.empty() && e.namespace_name != ns) continue;
      out->push_back(e);
      found = true;
    }
    if (found) return true;
    const uint64_t seen = generation_;
    if (!changed_.wait_until(lock, deadline, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return generation_ != seen;
        }))
      return true;
  }
}

void ObjectStore::WakeWatchers() {
  MutexLock lock(mu_);
  ++generation_;
  changed_.notify_all();
}

}  // namespace canhazgpu::kubesim
