#include "simkubelet/pod_volumes.h"

#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string Text(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

mode_t ModeOf(const json& object, const char* key, mode_t fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? static_cast<mode_t>(it->get<int>())
                                                       : fallback;
}

// A path inside a volume: relative, and never climbing out of it.
bool IsInsideVolume(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (std::string_view part : Split(path, '/'))
    if (part == "..") return false;
  return true;
}

// The key's bytes from data or (base64) binaryData; nullopt when absent.
absl::StatusOr<std::optional<std::string>> KeyBytes(const json& config_map, const std::string& name,
                                                    const std::string& key) {
  const json data = config_map.value("data", json::object());
  if (auto it = data.find(key); it != data.end() && it->is_string()) return it->get<std::string>();
  const json binary = config_map.value("binaryData", json::object());
  auto it = binary.find(key);
  if (it == binary.end() || !it->is_string()) return std::nullopt;
  std::string bytes;
  if (!absl::Base64Unescape(it->get<std::string>(), &bytes)) {
    return absl::InvalidArgumentError(
        StrCat("configmap \"", name, "\": binaryData key ", key, " is not base64"));
  }
  return bytes;
}

absl::Status WriteVolumeFiles(const std::string& dir, const std::vector<VolumeFile>& files) {
  std::error_code ec;
  fs::remove_all(dir, ec);  // a retry writes the ConfigMaps' current contents
  for (const VolumeFile& f : files) {
    const std::string path = StrCat(dir, "/", f.path);
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return absl::UnavailableError(StrCat("cannot create ", dir, ": ", ec.message()));
    RETURN_IF_ERROR(WriteFileAtomically(path, f.bytes, f.mode, FileSync::kAtomicOnly));
  }
  fs::create_directories(dir, ec);  // (an optional, missing ConfigMap: empty)
  if (ec) return absl::UnavailableError(StrCat("cannot create ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

// The ConfigMap `source` names, or null when it does not exist.
absl::StatusOr<json> ReadConfigMap(const json& source, const VolumeContext& context) {
  absl::StatusOr<json> cm = context.client.Get(kube::kConfigMaps, context.ns, Text(source, "name"));
  if (cm.ok()) return *std::move(cm);
  if (kube::IsApiNotFound(cm.status())) return json();
  return absl::UnavailableError(cm.status().message());
}

absl::Status AppendConfigMapFiles(const json& source, mode_t default_mode,
                                  const VolumeContext& context, std::vector<VolumeFile>& files) {
  ASSIGN_OR_RETURN(json cm, ReadConfigMap(source, context));
  ASSIGN_OR_RETURN(std::vector<VolumeFile> more, ConfigMapFiles(source, cm, default_mode));
  for (VolumeFile& f : more) files.push_back(std::move(f));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<VolumeFile>> ProjectedFiles(const json& projected,
                                                       const VolumeContext& context) {
  const mode_t default_mode = ModeOf(projected, "defaultMode", 0644);
  std::vector<VolumeFile> files;
  for (const json& source : projected.value("sources", json::array())) {
    if (!source.contains("configMap")) {
      const std::string kind = source.empty() ? "(empty)" : source.begin().key();
      return absl::UnimplementedError(
          StrCat("projected source ", kind,
                 " is not supported by the simulated kubelet (only configMap)"));
    }
    RETURN_IF_ERROR(AppendConfigMapFiles(source["configMap"], default_mode, context, files));
  }
  return files;
}

// hostPath's type check, as the kubelet's hostPathTypeChecker does it.
absl::StatusOr<std::string> HostPath(const json& source, const VolumeContext& context) {
  const std::string path = Text(source, "path");
  const std::string type = Text(source, "type");
  const std::string node_path = context.root_dir + path;
  std::error_code ec;
  if (type == "DirectoryOrCreate" && !fs::exists(node_path, ec)) {
    fs::create_directories(node_path, ec);
  } else if (type == "FileOrCreate" && !fs::exists(node_path, ec)) {
    fs::create_directories(fs::path(node_path).parent_path(), ec);
    RETURN_IF_ERROR(WriteFileAtomically(node_path, "", 0644, FileSync::kAtomicOnly));
  }
  const fs::file_status status = fs::status(node_path, ec);
  auto check = [&](bool ok, const char* what) -> absl::StatusOr<std::string> {
    if (ok) return node_path;
    return absl::FailedPreconditionError(
        StrCat("hostPath type check failed: ", path, " is not a ", what));
  };
  if (type.empty()) return node_path;
  if (type == "Directory" || type == "DirectoryOrCreate")
    return check(fs::is_directory(status), "directory");
  if (type == "File" || type == "FileOrCreate") return check(fs::is_regular_file(status), "file");
  if (type == "Socket") return check(fs::is_socket(status), "socket file");
  if (type == "CharDevice") return check(fs::is_character_file(status), "character device");
  if (type == "BlockDevice") return check(fs::is_block_file(status), "block device");
  return absl::UnimplementedError(StrCat("hostPath type ", type, " is not known"));
}

absl::StatusOr<std::string> MaterializeVolume(const json& volume, const VolumeContext& context) {
  const std::string dir = StrCat(context.volumes_dir, "/", Text(volume, "name"));
  std::error_code ec;
  if (volume.contains("emptyDir")) {
    fs::create_directories(dir, ec);  // kept as it is when it exists
    if (ec) return absl::UnavailableError(StrCat("cannot create ", dir, ": ", ec.message()));
    return dir;
  }
  if (volume.contains("hostPath")) return HostPath(volume["hostPath"], context);
  std::vector<VolumeFile> files;
  if (volume.contains("configMap")) {
    const json& source = volume["configMap"];
    RETURN_IF_ERROR(
        AppendConfigMapFiles(source, ModeOf(source, "defaultMode", 0644), context, files));
  } else if (volume.contains("projected")) {
    ASSIGN_OR_RETURN(files, ProjectedFiles(volume["projected"], context));
  } else {
    std::string kind = "(none)";
    for (const auto& [key, value] : volume.items())
      if (key != "name") kind = key;
    return absl::UnimplementedError(
        StrCat("volume type ", kind,
               " is not supported by the simulated kubelet (emptyDir, hostPath, configMap, "
               "projected configMaps)"));
  }
  RETURN_IF_ERROR(WriteVolumeFiles(dir, files));
  return dir;
}

}  // namespace

absl::StatusOr<std::vector<VolumeFile>> ConfigMapFiles(const json& source, const json& config_map,
                                                       mode_t default_mode) {
  const std::string name = Text(source, "name");
  const bool optional = source.value("optional", false);
  if (!config_map.is_object()) {
    if (optional) return std::vector<VolumeFile>();
    return absl::NotFoundError(StrCat("configmap \"", name, "\" not found"));
  }
  // Which keys become which files: the items, or every key as itself.
  struct Wanted {
    std::string key, path;
    mode_t mode;
  };
  std::vector<Wanted> wanted;
  const json items = source.value("items", json::array());
  for (const json& item : items)
    wanted.push_back({Text(item, "key"), Text(item, "path"), ModeOf(item, "mode", default_mode)});
  if (items.empty()) {
    for (const char* field : {"data", "binaryData"}) {
      const json keys = config_map.value(field, json::object());
      for (const auto& [key, value] : keys.items()) wanted.push_back({key, key, default_mode});
    }
  }
  std::vector<VolumeFile> files;
  for (const Wanted& w : wanted) {
    ASSIGN_OR_RETURN(std::optional<std::string> bytes, KeyBytes(config_map, name, w.key));
    if (!bytes.has_value()) {
      if (optional) continue;
      return absl::NotFoundError(StrCat("configmap references non-existent config key: ", w.key));
    }
    if (!IsInsideVolume(w.path)) {
      return absl::InvalidArgumentError(StrCat("configmap \"", name, "\": item path \"", w.path,
                                               "\" must be relative and without '..'"));
    }
    files.push_back({.path = w.path, .bytes = *std::move(bytes), .mode = w.mode});
  }
  return files;
}

absl::StatusOr<VolumePaths> MaterializeVolumes(const json& pod, const VolumeContext& context) {
  VolumePaths paths;
  for (const json& volume : pod.value("/spec/volumes"_json_pointer, json::array())) {
    const std::string name = Text(volume, "name");
    absl::StatusOr<std::string> path = MaterializeVolume(volume, context);
    if (!path.ok()) {
      return absl::Status(path.status().code(), StrCat("MountVolume.SetUp failed for volume \"",
                                                       name, "\" : ", path.status().message()));
    }
    paths[name] = *std::move(path);
  }
  return paths;
}

void RemoveVolumes(const std::string& volumes_dir) {
  std::error_code ec;
  fs::remove_all(volumes_dir, ec);  // hostPaths live elsewhere: never removed
}

absl::StatusOr<std::vector<MountPoint>> ContainerMounts(const json& container,
                                                        const VolumePaths& volumes) {
  std::vector<MountPoint> mounts;
  for (const json& m : container.value("volumeMounts", json::array())) {
    const std::string name = Text(m, "name");
    auto volume = volumes.find(name);
    if (volume == volumes.end()) {
      return absl::InvalidArgumentError(
          StrCat("volumeMount ", name, ": the pod has no volume of that name"));
    }
    if (m.contains("subPathExpr")) {
      return absl::UnimplementedError(
          StrCat("volumeMount ", name, ": subPathExpr is not supported by the simulated kubelet"));
    }
    std::string host = volume->second;
    if (const std::string sub = Text(m, "subPath"); !sub.empty()) {
      if (!IsInsideVolume(sub)) {
        return absl::InvalidArgumentError(
            StrCat("volumeMount ", name, ": subPath \"", sub, "\" must be relative, without '..'"));
      }
      std::error_code ec;
      const bool directory = fs::is_directory(host, ec);
      host += "/" + sub;
      if (directory && !fs::exists(host, ec)) fs::create_directories(host, ec);
    }
    mounts.push_back({.mount_path = Text(m, "mountPath"), .host_path = std::move(host)});
  }
  return mounts;
}

std::string ResolveFromNodeRoot(const std::string& root_dir, const std::string& argv0) {
  if (root_dir.empty() || argv0.empty() || argv0.front() != '/') return argv0;
  std::error_code ec;
  const std::string candidate = root_dir + argv0;
  return fs::exists(candidate, ec) ? candidate : argv0;
}

}  // namespace canhazgpu::simkubelet
