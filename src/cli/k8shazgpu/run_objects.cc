#include "cli/k8shazgpu/run_objects.h"

#include <algorithm>
#include <random>
#include <regex>

#include "core/strings.h"
#include "dra/devices.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

std::string NameOf(const json& object) {
  return object.value("/metadata/name"_json_pointer, std::string());
}

// The driver a class selects: its `device.driver == "X"` selector, else
// the one its name says (gpu.nvidia.com, mig.canhazgpu.dev -> the GPU
// driver of that vendor), else the name itself.
std::string DriverOf(const json& klass) {
  static const std::regex kDriver(R"re(device\.driver\s*==\s*["']([^"']+)["'])re");
  for (const json& s : klass.value("/spec/selectors"_json_pointer, json::array())) {
    const std::string expression = s.value("/cel/expression"_json_pointer, std::string());
    std::smatch m;
    if (std::regex_search(expression, m, kDriver)) return m[1];
  }
  const std::string name = NameOf(klass);
  if (name.starts_with("mig.")) return "gpu." + name.substr(4);
  return name;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

absl::StatusOr<ClassChoice> ChooseClass(const std::vector<json>& classes,
                                        const RunRequest& request) {
  std::vector<std::string> names;
  for (const json& c : classes) names.push_back(NameOf(c));
  std::sort(names.begin(), names.end());
  auto find = [&](const std::string& name) -> const json* {
    for (const json& c : classes) {
      if (NameOf(c) == name) return &c;
    }
    return nullptr;
  };
  if (!request.device_class.empty()) {
    const json* c = find(request.device_class);
    if (c == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("DeviceClass '", request.device_class, "' does not exist; the cluster has ",
                 names.empty() ? std::string("none") : Join(names, ", ")));
    }
    return ClassChoice{.name = request.device_class, .driver = DriverOf(*c)};
  }
  const bool mig = request.wants.mig_profile.has_value();
  const std::vector<std::string> preferred =
      mig ? std::vector<std::string>{kOurMigClass, kNvidiaMigClass}
          : std::vector<std::string>{kOurGpuClass, kNvidiaGpuClass};
  for (const std::string& name : preferred) {
    if (const json* c = find(name)) return ClassChoice{.name = name, .driver = DriverOf(*c)};
  }
  return absl::FailedPreconditionError(
      StrCat("no GPU DeviceClass in the cluster (looked for ", Join(preferred, " and "),
             "; it has ", names.empty() ? std::string("none") : Join(names, ", "),
             "); install a DRA driver or name a class with --class"));
}

std::string UserLabelValue(const std::string& user) {
  std::string out;
  for (char c : user) {
    out += (IsAlnum(c) || c == '-' || c == '_' || c == '.') ? c : '-';
    if (out.size() == 63) break;
  }
  while (!out.empty() && !IsAlnum(out.front())) out.erase(out.begin());
  while (!out.empty() && !IsAlnum(out.back())) out.pop_back();
  return out.empty() ? "user" : out;
}

std::string UserNamePart(const std::string& user) {
  std::string out;
  for (char c : UserLabelValue(user)) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    out += IsAlnum(c) ? c : '-';
  }
  // Room for "-<id>-gpus-<id>" in a 63-character label of the claim.
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "user" : out;
}

RunNames MakeRunNames(const RunRequest& request, const std::string& user, const std::string& id) {
  RunNames names{.run_id = id, .user = UserLabelValue(user), .pod = request.name, .claim = ""};
  const std::string short_id = id.substr(0, 5);
  if (names.pod.empty()) names.pod = StrCat(UserNamePart(user), "-", short_id);
  names.claim = request.share.empty() ? StrCat(names.pod, "-gpus-", short_id) : request.share;
  return names;
}

std::string EscapeDollars(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '$') out += '$';
  }
  return out;
}

absl::StatusOr<json> ClaimSpec(const RunRequest& request, const ClassChoice& klass) {
  absl::StatusOr<std::vector<std::string>> selectors = request.wants.Selectors(klass.driver);
  if (!selectors.ok()) return selectors.status();
  // The first selector is the device type (gpu or mig), which the class
  // already selects; a class of another driver may not have the attribute.
  json cel = json::array();
  for (size_t i = 1; i < selectors->size(); ++i) {
    cel.push_back({{"cel", {{"expression", (*selectors)[i]}}}});
  }
  if (request.pinned) {
    std::vector<std::string> any;
    for (int64_t index : request.pinned->indices) {
      any.push_back(StrCat("device.attributes[\"", klass.driver, "\"].index == ", index));
    }
    cel.push_back({{"cel", {{"expression", Join(any, " || ")}}}});
  }
  json exactly = {
      {"deviceClassName", klass.name}, {"allocationMode", "ExactCount"}, {"count", request.gpus}};
  if (!cel.empty()) exactly["selectors"] = cel;
  if (request.gpu_mem) {
    // KEP-5075: on a GPU published with allowMultipleAllocations this much
    // of its memory is consumed, and the rest stays for other claims; on
    // any other it only filters (and the run holds the GPU whole: said once
    // it runs, share_report.h).
    exactly["capacity"] = {
        {"requests", {{"memory", dra::FormatQuantity(static_cast<int64_t>(*request.gpu_mem))}}}};
  }
  json devices = {{"requests", {{{"name", kClaimName}, {"exactly", exactly}}}}};
  if (request.wants.mig_profile && request.gpus > 1) {
    devices["constraints"] = {
        {{"requests", {kClaimName}}, {"matchAttribute", StrCat(klass.driver, "/parentUUID")}}};
  }
  return json{{"devices", devices}};
}

// Ten characters of [a-z0-9]: the run label, unique enough to never meet
// another run's.
std::string NewRunId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device random;
  std::string id;
  for (int i = 0; i < 10; ++i) id += kAlphabet[random() % (sizeof(kAlphabet) - 1)];
  return id;
}

json Labels(const RunNames& names) { return {{kRunLabel, names.run_id}, {kUserLabel, names.user}}; }

json ClaimTemplateObject(const RunNames& names, const json& claim_spec) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", names.claim}, {"labels", Labels(names)}}},
          // The generated claim carries the labels too, for `status`.
          {"spec", {{"metadata", {{"labels", Labels(names)}}}, {"spec", claim_spec}}}};
}

json SharedClaimObject(const RunNames& names, const std::string& share, const json& claim_spec,
                       const std::vector<std::string>& share_with) {
  json labels = Labels(names);
  labels[kShareLabel] = share;
  json metadata = {{"name", share}, {"labels", labels}};
  if (!share_with.empty()) {
    metadata["annotations"] = {{kShareWithAnnotation, Join(share_with, ",")}};
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", metadata},
          {"spec", claim_spec}};
}

absl::Status MayJoinSharedClaim(const json& claim, const std::string& user) {
  const json metadata = claim.value("metadata", json::object());
  const json labels = metadata.value("labels", json::object());
  const json annotations = metadata.value("annotations", json::object());
  const std::string owner = labels.is_object() ? labels.value(kUserLabel, "") : "";
  if (owner == user) return absl::OkStatus();
  const std::string allowed =
      annotations.is_object() ? annotations.value(kShareWithAnnotation, "") : "";
  for (std::string_view who : Split(allowed, ',', /*skip_empty=*/true)) {
    if (Trim(who) == "*" || Trim(who) == user) return absl::OkStatus();
  }
  const std::string name = metadata.value("name", "");
  return absl::PermissionDeniedError(
      StrCat("the shared claim '", name, "' is ", owner.empty() ? "someone else" : owner,
             "'s, who has not let ", user, " join it (they can start it with --share-with ", user,
             ", or: kubectl annotate resourceclaim ", name, " ", kShareWithAnnotation, "=", user,
             "); nothing was created"));
}

json PodObject(const RunRequest& request, const RunNames& names) {
  json command = json::array();
  for (const std::string& arg : request.argv) command.push_back(EscapeDollars(arg));
  json container = {{"name", kContainerName},
                    {"image", request.image},
                    {"command", command},
                    {"resources", {{"claims", {{{"name", kClaimName}}}}}}};
  if (!request.env.empty()) {
    json env = json::array();
    for (const auto& [name, value] : request.env) {
      env.push_back({{"name", name}, {"value", EscapeDollars(value)}});
    }
    container["env"] = env;
  }
  if (request.port) {
    container["ports"] = {{{"containerPort", *request.port}, {"protocol", "TCP"}}};
  }
  json spec = {{"restartPolicy", "Never"}};
  json claim = {{"name", kClaimName}};
  claim[request.share.empty() ? "resourceClaimTemplateName" : "resourceClaimName"] = names.claim;
  spec["resourceClaims"] = json::array({claim});
  if (request.shared_memory) {
    // What `docker run --ipc=host` gives vLLM: a /dev/shm as large as
    // memory, for PyTorch's shared-memory tensors between workers.
    container["volumeMounts"] = {{{"name", "dshm"}, {"mountPath", "/dev/shm"}}};
    spec["volumes"] = {{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}};
  }
  spec["containers"] = json::array({container});
  // The scheduler places the pod (it allocates the claim on the way);
  // spec.nodeName would skip it and leave the claim unallocated.
  if (!request.node.empty()) spec["nodeSelector"] = {{"kubernetes.io/hostname", request.node}};
  if (request.timeout_seconds) spec["activeDeadlineSeconds"] = *request.timeout_seconds;
  json labels = Labels(names);
  if (request.reservation) labels[kKindLabel] = kReservationKind;
  json metadata = {{"name", names.pod}, {"labels", labels}};
  json annotations = json::object();
  if (!request.note.empty()) annotations[kNoteAnnotation] = request.note;
  if (request.ttl_seconds) annotations[kTtlAnnotation] = StrCat(*request.ttl_seconds);
  if (!annotations.empty()) metadata["annotations"] = annotations;
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}};
}

json OwnerReferenceTo(const json& pod) {
  return {{"apiVersion", "v1"},  {"kind", "Pod"},
          {"name", NameOf(pod)}, {"uid", pod.value("/metadata/uid"_json_pointer, std::string())},
          {"controller", false}, {"blockOwnerDeletion", false}};
}

}  // namespace canhazgpu::cli::k8s
