#include "driver/cdi_spec.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "core/file_read.h"
#include "core/file_write.h"
#include "core/make_directories.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "mps/share_limits.h"
#include "nlohmann/json.hpp"
#include "yaml/yaml_json.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kControlNodes[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                         "/dev/nvidia-uvm-tools"};
constexpr const char* kLibraryDirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                        "/usr/lib64", "/usr/lib"};
constexpr const char* kLibraryPrefixes[] = {"libnvidia-", "libcuda.so", "libcudadebugger.so",
                                            "libnvcuvid.so", "libnvoptix.so"};
constexpr const char* kBinaryDirs[] = {"/usr/bin", "/usr/local/bin"};
constexpr const char* kBinaries[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                     "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
// The CDI devices holding a request's environment, "<uid>-request-<name>",
// and the whole claim's, "<uid>-claim-env" (device names are gpu-N...).
constexpr char kRequestEnvPrefix[] = "request-";
constexpr char kClaimEnvName[] = "claim-env";
// A spec file is small; anything bigger in a CDI directory is not one to read.
constexpr uintmax_t kMaxSpecBytes = 4 << 20;

json BindMount(const std::string& path) {
  return {
      {"hostPath", path}, {"containerPath", path}, {"options", {"ro", "nosuid", "nodev", "bind"}}};
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// How strong an isolation is: a request is told the weakest of its shares'.
int IsolationRank(const std::string& isolation) {
  return isolation == "mps-dmem" ? 2 : isolation == "mps" ? 1 : 0;
}

// The environment of one request's shares (RequestEnvironments), appended
// to `env`: per GPU in CUDA order, its shares' bytes added.
void AddSharesEnv(const std::vector<const CdiDevice*>& shares, std::vector<std::string>& env) {
  if (shares.empty()) return;
  struct SharedGpuOfRequest {
    std::string uuid;
    uint64_t memory = 0, total = 0, shareable = 0;
    std::string pipe_dir;
  };
  std::vector<SharedGpuOfRequest> gpus;
  std::string isolation = shares.front()->share->isolation;
  for (const CdiDevice* d : shares) {
    const CdiShare& s = *d->share;
    if (IsolationRank(s.isolation) < IsolationRank(isolation)) isolation = s.isolation;
    auto gpu = std::find_if(gpus.begin(), gpus.end(),
                            [&](const SharedGpuOfRequest& g) { return g.uuid == d->uuid; });
    if (gpu == gpus.end()) {
      gpus.push_back(SharedGpuOfRequest{
          .uuid = d->uuid, .total = s.total, .shareable = s.shareable, .pipe_dir = s.mps_pipe_dir});
      gpu = std::prev(gpus.end());
    }
    gpu->memory += s.memory;
  }
  std::vector<std::string> memory, total, limits;
  const SharedGpuOfRequest* first_mps = nullptr;
  for (const SharedGpuOfRequest& g : gpus) {
    memory.push_back(StrCat(g.memory));
    total.push_back(StrCat(g.total));
    if (g.pipe_dir.empty()) continue;
    if (first_mps == nullptr) first_mps = &g;
    limits.push_back(StrCat(g.uuid, "=", mps::MpsMemoryValue(g.memory)));
  }
  env.push_back(StrCat("CANHAZGPU_GPU_MEM=", absl::StrJoin(memory, ",")));
  if (std::none_of(gpus.begin(), gpus.end(),
                   [](const SharedGpuOfRequest& g) { return g.total == 0; })) {
    env.push_back(StrCat("CANHAZGPU_GPU_MEM_TOTAL=", absl::StrJoin(total, ",")));
  }
  env.push_back(StrCat("CANHAZGPU_MEMORY_ISOLATION=", isolation));
  if (first_mps == nullptr) return;
  // One process reaches one daemon: the first GPU's (the only one, as the
  // preparer allows).
  env.push_back(StrCat("CUDA_MPS_PIPE_DIRECTORY=", first_mps->pipe_dir));
  env.push_back(StrCat("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", absl::StrJoin(limits, ",")));
  env.push_back(StrCat("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=",
                       mps::ActiveThreadPercentage(first_mps->memory, first_mps->shareable)));
}

}  // namespace

std::string CdiDeviceId(const std::string& claim_uid, const std::string& device) {
  return StrCat(kCdiVendor, "/", kCdiClass, "=", claim_uid, "-", device);
}

std::string CdiShareName(const std::string& device, const std::string& share_id) {
  return share_id.empty() ? device : StrCat(device, "-share-", share_id);
}

std::string CdiSpecFileName(const std::string& claim_uid) {
  std::string id = claim_uid;
  std::replace(id.begin(), id.end(), '/', '_');
  return StrCat(kCdiVendor, "-", kCdiClass, "_", id, ".json");
}

std::vector<std::string> BaseRequestNames(const std::vector<std::string>& requests) {
  std::vector<std::string> base;
  for (const std::string& r : requests) {
    std::string name = r.substr(0, r.find('/'));
    if (std::find(base.begin(), base.end(), name) == base.end()) base.push_back(std::move(name));
  }
  return base;
}

std::string RequestEnvDeviceName(const std::string& claim_uid, const std::string& request) {
  return request.empty() ? StrCat(claim_uid, "-", kClaimEnvName)
                         : StrCat(claim_uid, "-", kRequestEnvPrefix, request);
}

std::vector<std::string> CdiDeviceIdsFor(const std::string& claim_uid, const std::string& device,
                                         const std::vector<std::string>& requests) {
  const std::string kind = StrCat(kCdiVendor, "/", kCdiClass, "=");
  std::vector<std::string> ids = {CdiDeviceId(claim_uid, device)};
  std::vector<std::string> base = BaseRequestNames(requests);
  if (base.empty()) base.push_back("");
  for (const std::string& request : base) {
    ids.push_back(StrCat(kind, RequestEnvDeviceName(claim_uid, request)));
  }
  return ids;
}

std::vector<RequestEnvironment> RequestEnvironments(const std::vector<CdiDevice>& devices) {
  struct Numbering {
    std::vector<std::string> cuda, uuids;
    int next_index = 0;
    std::vector<const CdiDevice*> shares;  // in CUDA order
  };
  std::vector<std::pair<std::string, Numbering>> by_request;
  for (const CdiDevice& d : devices) {
    std::vector<std::string> requests = BaseRequestNames(d.requests);
    if (requests.empty()) requests.push_back("");
    for (const std::string& request : requests) {
      auto it = std::find_if(by_request.begin(), by_request.end(),
                             [&](const auto& r) { return r.first == request; });
      if (it == by_request.end()) it = by_request.insert(it, {request, Numbering{}});
      Numbering& n = it->second;
      if (d.share) n.shares.push_back(&d);
      // Two shares of one GPU are one GPU to CUDA.
      if (d.share && std::find(n.uuids.begin(), n.uuids.end(), d.uuid) != n.uuids.end()) continue;
      // CUDA numbers the GPUs it can open from 0; a MIG instance is named by uuid.
      n.cuda.push_back(d.is_mig ? d.uuid : std::to_string(n.next_index++));
      n.uuids.push_back(d.uuid);
    }
  }
  std::vector<RequestEnvironment> out;
  for (const auto& [request, n] : by_request) {
    RequestEnvironment& r = out.emplace_back();
    r.request = request;
    r.env = {StrCat("CUDA_VISIBLE_DEVICES=", absl::StrJoin(n.cuda, ",")),
             StrCat("NVIDIA_VISIBLE_DEVICES=", absl::StrJoin(n.uuids, ","))};
    AddSharesEnv(n.shares, r.env);
  }
  return out;
}

json ClaimCdiSpec(const ClaimCdiInput& input) {
  json devices = json::array();
  for (const CdiDevice& d : input.devices) {
    json nodes = {{{"path", StrCat("/dev/nvidia", d.gpu_minor)}}};
    for (const std::string& extra : d.extra_device_nodes) nodes.push_back({{"path", extra}});
    json edits = {{"deviceNodes", nodes}};
    for (const std::string& dir : d.mounts) {
      edits["mounts"].push_back({{"hostPath", dir},
                                 {"containerPath", dir},
                                 {"options", {"rw", "nosuid", "nodev", "bind"}}});
    }
    devices.push_back({{"name", StrCat(input.claim_uid, "-", d.name)}, {"containerEdits", edits}});
  }
  for (const RequestEnvironment& r : RequestEnvironments(input.devices)) {
    devices.push_back({{"name", RequestEnvDeviceName(input.claim_uid, r.request)},
                       {"containerEdits", {{"env", r.env}}}});
  }
  json control = json::array();
  for (const char* node : kControlNodes) control.push_back({{"path", node}});
  json mounts = json::array();
  for (const std::string& lib : input.driver_files.libraries) mounts.push_back(BindMount(lib));
  for (const std::string& bin : input.driver_files.binaries) mounts.push_back(BindMount(bin));
  json edits = {{"env", {StrCat("CANHAZGPU_CLAIM=", input.claim_namespace, "/", input.claim_name)}},
                {"deviceNodes", control}};
  if (!mounts.empty()) edits["mounts"] = mounts;
  return {{"cdiVersion", kCdiVersion},
          {"kind", StrCat(kCdiVendor, "/", kCdiClass)},
          {"devices", devices},
          {"containerEdits", edits}};
}

bool IsCdiSpecFileName(std::string_view name) {
  const std::string prefix = StrCat(kCdiVendor, "-", kCdiClass, "_");
  return name.size() > prefix.size() + 5 && name.starts_with(prefix) && name.ends_with(".json");
}

absl::Status WriteCdiSpec(const std::string& dir, const std::string& claim_uid, const json& spec) {
  // Like the specs in it, readable by all (the runtime is root, but CDI
  // tools run by people list it too) and writable by root alone, whatever
  // the umask: a spec planted here would give a container any device.
  RETURN_IF_ERROR(MakeDirectories(dir, 0755));
  return WriteFileAtomically(StrCat(dir, "/", CdiSpecFileName(claim_uid)), spec.dump(2) + "\n",
                             0644);
}

absl::Status RemoveCdiSpec(const std::string& dir, const std::string& claim_uid) {
  const std::string path = StrCat(dir, "/", CdiSpecFileName(claim_uid));
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  return absl::OkStatus();
}

DriverFiles FindDriverFiles(const std::string& root) {
  DriverFiles files;
  std::error_code ec;
  for (const char* dir : kLibraryDirs) {
    std::set<std::string> found;  // sorted, so the spec is the same on every run
    for (const fs::directory_entry& e : fs::directory_iterator(root + dir, ec)) {
      const std::string name = e.path().filename();
      const bool wanted = std::any_of(std::begin(kLibraryPrefixes), std::end(kLibraryPrefixes),
                                      [&](const char* p) { return name.starts_with(p); });
      if (wanted && name.find(".so") != std::string::npos) found.insert(StrCat(dir, "/", name));
    }
    files.libraries.insert(files.libraries.end(), found.begin(), found.end());
  }
  for (const char* dir : kBinaryDirs) {
    for (const char* bin : kBinaries) {
      if (fs::exists(StrCat(root, dir, "/", bin), ec))
        files.binaries.push_back(StrCat(dir, "/", bin));
    }
  }
  return files;
}

std::vector<std::string> ToolkitDeviceIds(const std::vector<std::string>& spec_dirs,
                                          const std::vector<std::string>& uuids) {
  std::set<std::string> named;
  std::error_code ec;
  for (const std::string& dir : spec_dirs) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      const std::string ext = e.path().extension();
      if ((ext != ".yaml" && ext != ".json") || !e.is_regular_file(ec) ||
          e.file_size(ec) > kMaxSpecBytes) {
        continue;
      }
      // A malformed or unreadable file is another vendor's problem: skipped.
      absl::StatusOr<std::string> text = ReadRegularFile(e.path(), kMaxSpecBytes, "CDI spec");
      if (!text.ok()) continue;
      absl::StatusOr<nlohmann::json> spec = yaml::ToJson(*text, {.scalars_as_text = true});
      if (!spec.ok() || !spec->is_object() ||
          spec->value("kind", nlohmann::json()) != "nvidia.com/gpu") {
        continue;
      }
      const nlohmann::json devices = spec->value("devices", nlohmann::json::array());
      if (!devices.is_array()) continue;
      for (const nlohmann::json& device : devices) {
        if (device.is_object() && device.contains("name") && device["name"].is_string()) {
          named.insert(device["name"].get<std::string>());
        }
      }
    }
  }
  std::vector<std::string> ids;
  for (const std::string& uuid : uuids) {
    if (named.count(uuid) == 0) return {};
    ids.push_back(StrCat("nvidia.com/gpu=", uuid));
  }
  return ids;
}

}  // namespace canhazgpu::driver
