#include "gpu/fake_host.h"

#include <algorithm>
#include <set>

#include "core/file_read.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::gpu {
namespace {

using nlohmann::json;

// What a simulated host file may hold: a real host has at most a few dozen
// GPUs, 8 MIG memory slices and some hundreds of processes. Every number has
// a range, so nothing downstream overflows or loops for long on what a user
// (or a fuzzer) wrote.
constexpr size_t kMaxFileBytes = 4 << 20;
constexpr size_t kMaxStringBytes = 1024;
constexpr int64_t kMaxMemoryMiB = 16 << 20;  // 16 TiB
constexpr int64_t kMaxPid = 4 << 20;         // the kernel's PID_MAX_LIMIT
constexpr int64_t kMaxMinor = (1 << 20) - 1;
constexpr int64_t kMaxMigSlices = 64;
constexpr int64_t kMaxInstanceId = 1023;
constexpr int64_t kMaxProfileId = 1023;
constexpr size_t kMaxProcessesPerGpu = 1024;
constexpr size_t kMaxProcessesPerHost = 4096;
constexpr size_t kMaxXidEvents = 1024;
constexpr int64_t kMaxXid = 65535;

// Reads one JSON object with a fixed set of allowed keys, producing errors
// that name the file, the object's path and the field.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  absl::Status CheckKeys(const std::set<std::string>& allowed) const {
    if (!object_.is_object()) return Error("", "expected a JSON object");
    for (const auto& [key, value] : object_.items()) {
      if (!allowed.contains(key)) return Error("", StrCat("unknown field '", key, "'"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const std::string& key, std::optional<std::string> fallback) {
    if (!object_.contains(key)) return Missing(key, std::move(fallback));
    if (!object_[key].is_string()) return Error(key, "expected a string");
    std::string text = object_[key].get<std::string>();
    if (text.size() > kMaxStringBytes) {
      return Error(key, StrCat("longer than ", kMaxStringBytes, " bytes"));
    }
    if (text.find('\0') != std::string::npos) return Error(key, "contains a NUL byte");
    return text;
  }

  absl::StatusOr<bool> Bool(const std::string& key, bool fallback) const {
    if (!object_.contains(key)) return fallback;
    if (!object_[key].is_boolean()) return Error(key, "expected true or false");
    return object_[key].get<bool>();
  }

  absl::StatusOr<int64_t> Integer(const std::string& key, std::optional<int64_t> fallback,
                                  int64_t min, int64_t max) {
    if (!object_.contains(key)) return Missing(key, fallback);
    const json& v = object_[key];
    if (!v.is_number_integer()) return Error(key, "expected an integer");
    // An unsigned above INT64_MAX would wrap to a negative number.
    const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max);
    const int64_t n = huge ? max : v.get<int64_t>();
    if (huge || n < min || n > max) return Error(key, StrCat("must be from ", min, " to ", max));
    return n;
  }

  // The array under `key`, or null when absent; an error when it is not an
  // array or has more than `max` entries.
  absl::StatusOr<const json*> Array(const std::string& key, size_t max) const {
    if (!object_.contains(key)) return nullptr;
    const json& v = object_[key];
    if (!v.is_array()) return Error(key, "expected an array");
    if (v.size() > max) return Error(key, StrCat("more than ", max, " entries"));
    return &v;
  }
  absl::Status Error(const std::string& key, std::string_view message) const {
    return absl::InvalidArgumentError(
        StrCat(where_, key.empty() ? "" : StrCat(": field '", key, "'"), ": ", message));
  }
  const std::string& where() const { return where_; }

 private:
  template <typename T>
  absl::StatusOr<T> Missing(const std::string& key, std::optional<T> fallback) const {
    if (fallback) return *fallback;
    return Error(key, "is required");
  }

  const json& object_;
  std::string where_;
};

absl::StatusOr<MigMode> ParseMigMode(std::string_view text, const ObjectReader& reader) {
  if (text == "disabled") return MigMode::kDisabled;
  if (text == "enabled") return MigMode::kEnabled;
  if (text == "unsupported") return MigMode::kUnsupported;
  return reader.Error("mig_mode", "expected \"disabled\", \"enabled\" or \"unsupported\"");
}

absl::StatusOr<GpuProcess> ParseProcess(const json& object, std::string where) {
  ObjectReader r(object, std::move(where));
  RETURN_IF_ERROR(r.CheckKeys({"pid", "used_memory_mib"}));
  GpuProcess p;
  ASSIGN_OR_RETURN(p.pid, r.Integer("pid", std::nullopt, 1, kMaxPid));
  ASSIGN_OR_RETURN(int64_t used, r.Integer("used_memory_mib", std::nullopt, 0, kMaxMemoryMiB));
  p.used_memory_bytes = static_cast<uint64_t>(used) * kMiB;
  return p;
}

absl::StatusOr<MigInstance> ParseMigInstance(const json& object, std::string where, int slices,
                                             int position) {
  ObjectReader r(object, where);
  RETURN_IF_ERROR(r.CheckKeys({"uuid", "profile", "profile_id", "placement_start", "placement_size",
                               "memory_mib", "gpu_instance_id", "compute_instance_id"}));
  MigInstance m;
  ASSIGN_OR_RETURN(m.uuid, r.String("uuid", std::nullopt));
  ASSIGN_OR_RETURN(m.profile, r.String("profile", std::nullopt));
  ASSIGN_OR_RETURN(int64_t id, r.Integer("profile_id", std::nullopt, 0, kMaxProfileId));
  if (slices < 1) return r.Error("placement_start", "the GPU has no MIG memory slices");
  ASSIGN_OR_RETURN(int64_t start, r.Integer("placement_start", std::nullopt, 0, slices - 1));
  ASSIGN_OR_RETURN(int64_t size, r.Integer("placement_size", std::nullopt, 1, slices));
  ASSIGN_OR_RETURN(int64_t memory, r.Integer("memory_mib", std::nullopt, 1, kMaxMemoryMiB));
  if (start + size > slices) {
    return r.Error("placement_size", StrCat("slices ", start, "..", start + size - 1,
                                            " do not fit the GPU's ", slices, " memory slices"));
  }
  m.profile_id = static_cast<int>(id);
  m.placement_start = static_cast<int>(start);
  m.placement_size = static_cast<int>(size);
  m.memory_bytes = static_cast<uint64_t>(memory) * kMiB;
  // NVML numbers a GPU's instances from 1; a compute instance filling its
  // GPU instance is 0.
  ASSIGN_OR_RETURN(int64_t gi, r.Integer("gpu_instance_id", position + 1, 0, kMaxInstanceId));
  ASSIGN_OR_RETURN(int64_t ci, r.Integer("compute_instance_id", 0, 0, kMaxInstanceId));
  m.gpu_instance_id = static_cast<int>(gi);
  m.compute_instance_id = static_cast<int>(ci);
  return m;
}

absl::StatusOr<FakeGpuHealth> ParseHealth(ObjectReader& r) {
  FakeGpuHealth health;
  ASSIGN_OR_RETURN(health.lost, r.Bool("lost", false));
  ASSIGN_OR_RETURN(health.retired_pages_pending, r.Bool("retired_pages_pending", false));
  ASSIGN_OR_RETURN(health.events_supported, r.Bool("events_supported", true));
  ASSIGN_OR_RETURN(const json* xids, r.Array("xid_events", kMaxXidEvents));
  if (xids == nullptr) return health;
  for (size_t i = 0; i < xids->size(); ++i) {
    const json& v = (*xids)[i];
    const bool in_range = v.is_number_unsigned() && v.get<uint64_t>() >= 1 &&
                          v.get<uint64_t>() <= static_cast<uint64_t>(kMaxXid);
    if (!in_range) {
      return r.Error("xid_events", StrCat("entry ", i, " must be an integer from 1 to ", kMaxXid));
    }
    health.xid_events.push_back(v.get<uint64_t>());
  }
  return health;
}

absl::StatusOr<GpuInfo> ParseGpu(const json& object, int index, std::string where,
                                 const FakeHost& host, FakeGpuHealth& health) {
  ObjectReader r(object, where);
  RETURN_IF_ERROR(
      r.CheckKeys({"name", "uuid", "memory_total_mib", "processes", "pci_bus_id", "brand",
                   "architecture", "compute_capability", "mig_mode", "memory_reserved_mib", "error",
                   "minor", "pcie_root", "mig_memory_slices", "mig_instances", "xid_events", "lost",
                   "retired_pages_pending", "events_supported"}));
  ASSIGN_OR_RETURN(health, ParseHealth(r));
  GpuInfo g;
  g.index = index;
  ASSIGN_OR_RETURN(g.product_name, r.String("name", std::nullopt));
  ASSIGN_OR_RETURN(g.uuid, r.String("uuid", std::nullopt));
  ASSIGN_OR_RETURN(int64_t total, r.Integer("memory_total_mib", std::nullopt, 1, kMaxMemoryMiB));
  g.memory_total_bytes = static_cast<uint64_t>(total) * kMiB;
  char bus[32];
  snprintf(bus, sizeof(bus), "0000:%02x:00.0", (index + 1) & 0xff);
  ASSIGN_OR_RETURN(g.pci_bus_id, r.String("pci_bus_id", bus));
  ASSIGN_OR_RETURN(g.brand, r.String("brand", "NVIDIA"));
  ASSIGN_OR_RETURN(g.architecture, r.String("architecture", ""));
  ASSIGN_OR_RETURN(g.compute_capability, r.String("compute_capability", ""));
  ASSIGN_OR_RETURN(std::string mig, r.String("mig_mode", "disabled"));
  ASSIGN_OR_RETURN(g.mig_mode, ParseMigMode(mig, r));
  ASSIGN_OR_RETURN(int64_t reserved, r.Integer("memory_reserved_mib", 0, 0, kMaxMemoryMiB));
  ASSIGN_OR_RETURN(g.error, r.String("error", ""));
  ASSIGN_OR_RETURN(int64_t minor, r.Integer("minor", index, 0, kMaxMinor));
  g.minor = static_cast<int>(minor);
  ASSIGN_OR_RETURN(g.pcie_root, r.String("pcie_root", ""));
  ASSIGN_OR_RETURN(int64_t slices,
                   r.Integer("mig_memory_slices", g.mig_mode == MigMode::kUnsupported ? 0 : 8, 0,
                             kMaxMigSlices));
  g.mig_memory_slices = static_cast<int>(slices);
  // Each instance takes at least one slice of its own.
  ASSIGN_OR_RETURN(const json* instances,
                   r.Array("mig_instances", static_cast<size_t>(std::max<int64_t>(slices, 1))));
  if (instances != nullptr) {
    if (g.mig_mode != MigMode::kEnabled && !instances->empty()) {
      return r.Error("mig_instances", "needs \"mig_mode\": \"enabled\"");
    }
    std::vector<bool> used(static_cast<size_t>(g.mig_memory_slices), false);
    for (size_t i = 0; i < instances->size(); ++i) {
      ASSIGN_OR_RETURN(MigInstance m,
                       ParseMigInstance((*instances)[i], StrCat(where, ": mig_instances[", i, "]"),
                                        g.mig_memory_slices, static_cast<int>(i)));
      for (const MigInstance& other : g.mig_instances) {
        if (other.gpu_instance_id == m.gpu_instance_id) {
          return r.Error("mig_instances",
                         StrCat("instance ", i, " repeats gpu_instance_id ", m.gpu_instance_id));
        }
      }
      for (int s = m.placement_start; s < m.placement_start + m.placement_size; ++s) {
        if (used[static_cast<size_t>(s)]) {
          return r.Error("mig_instances", StrCat("instance ", i, " overlaps memory slice ", s));
        }
        used[static_cast<size_t>(s)] = true;
      }
      g.mig_instances.push_back(std::move(m));
    }
  }
  g.driver_version = host.driver_version;
  g.cuda_driver_version = host.cuda_driver_version;
  g.memory_used_bytes = static_cast<uint64_t>(reserved) * kMiB;
  ASSIGN_OR_RETURN(const json* processes, r.Array("processes", kMaxProcessesPerGpu));
  if (processes != nullptr) {
    for (size_t i = 0; i < processes->size(); ++i) {
      ASSIGN_OR_RETURN(GpuProcess p,
                       ParseProcess((*processes)[i], StrCat(where, ": processes[", i, "]")));
      g.memory_used_bytes += p.used_memory_bytes;
      g.processes.push_back(p);
    }
  }
  return g;
}

}  // namespace

absl::StatusOr<FakeHost> ParseFakeHost(std::string_view text, std::string_view source) {
  std::string prefix = StrCat("fake host ", source);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError(StrCat(prefix, ": not valid JSON"));
  ObjectReader r(doc, prefix);
  RETURN_IF_ERROR(r.CheckKeys({"gpus", "driver_version", "cuda_driver_version"}));
  FakeHost host;
  ASSIGN_OR_RETURN(host.driver_version, r.String("driver_version", "550.54.15"));
  ASSIGN_OR_RETURN(host.cuda_driver_version, r.String("cuda_driver_version", "12.4"));
  ASSIGN_OR_RETURN(const json* gpus, r.Array("gpus", static_cast<size_t>(kMaxGpus)));
  if (gpus == nullptr) return r.Error("gpus", "is required");
  std::set<std::string> uuids;
  size_t processes = 0;
  for (size_t i = 0; i < gpus->size(); ++i) {
    FakeGpuHealth health;
    ASSIGN_OR_RETURN(GpuInfo g, ParseGpu((*gpus)[i], static_cast<int>(i),
                                         StrCat(prefix, ": gpus[", i, "]"), host, health));
    // Every process is looked up in the process table on each query.
    if ((processes += g.processes.size()) > kMaxProcessesPerHost) {
      return r.Error("gpus", StrCat("more than ", kMaxProcessesPerHost, " processes in all"));
    }
    if (!uuids.insert(g.uuid).second) {
      return absl::InvalidArgumentError(
          StrCat(prefix, ": gpus[", i, "]: duplicate uuid '", g.uuid, "'"));
    }
    host.gpus.push_back(std::move(g));
    host.health.push_back(std::move(health));
  }
  return host;
}

absl::StatusOr<FakeHost> LoadFakeHost(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, kMaxFileBytes, "fake host"));
  return ParseFakeHost(text, path);
}

std::string DefaultFakeHostJson(int gpu_count) {
  json gpus = json::array();
  for (int i = 0; i < gpu_count; ++i) {
    char uuid[64];
    snprintf(uuid, sizeof(uuid), "GPU-fa4e0000-0000-4000-8000-%012x", i);
    char bus[32];
    snprintf(bus, sizeof(bus), "0000:%02x:00.0", (i + 1) & 0xff);
    gpus.push_back(json{{"name", "NVIDIA H100 80GB HBM3"},
                        {"uuid", uuid},
                        {"pci_bus_id", bus},
                        {"architecture", "Hopper"},
                        {"compute_capability", "9.0"},
                        {"memory_total_mib", 81559},
                        {"processes", json::array()}});
  }
  json doc = {{"driver_version", "550.54.15"}, {"cuda_driver_version", "12.4"}, {"gpus", gpus}};
  return doc.dump(2) + "\n";
}

absl::Status WriteDefaultFakeHost(const std::string& path, int gpu_count) {
  absl::Status written = WriteFileAtomically(path, DefaultFakeHostJson(gpu_count), 0644);
  if (written.ok()) return written;
  return absl::Status(written.code(), StrCat("fake host: ", written.message()));
}

absl::StatusOr<std::vector<GpuInfo>> FakeGpuProvider::Query() {
  ASSIGN_OR_RETURN(FakeHost host, LoadFakeHost(path_));
  return std::move(host.gpus);
}

}  // namespace canhazgpu::gpu
