#include "driver/checkpoint.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"
#include "core/duration.h"
#include "core/file_read.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/temp_files.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

constexpr char kKind[] = "K8shazgpuNodeCheckpoint";
// Far more than thousands of prepared claims take; a bigger file is not ours.
constexpr size_t kMaxCheckpointBytes = 64 << 20;

uint32_t Crc32(std::string_view data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// The checksum covers the document without its "checksum" member, dumped
// canonically (nlohmann sorts keys), so fields added by a newer daemon are
// covered and verified like ours.
std::string ChecksumOf(const json& document) {
  json body = document;
  body.erase("checksum");
  return absl::StrFormat("crc32:%08x", Crc32(body.dump()));
}

const char* StateName(PrepareState s) {
  return s == PrepareState::kCompleted ? "PrepareCompleted" : "PrepareStarted";
}

json Strings(const std::vector<std::string>& list) { return json(list); }

json DeviceJson(const CheckpointDevice& d) {
  json j = d.unknown.is_object() ? d.unknown : json::object();
  j["requests"] = Strings(d.requests);
  j["pool"] = d.pool;
  j["device"] = d.device;
  j["gpu"] = d.gpu;
  j["cdiDeviceIds"] = Strings(d.cdi_device_ids);
  if (!d.share_id.empty()) {
    j["shareID"] = d.share_id;
    j["memory"] = d.memory;
    j["shareable"] = d.shareable;
    j["isolation"] = d.isolation;
  }
  return j;
}

json ClaimJson(const CheckpointClaim& c) {
  json j = c.unknown.is_object() ? c.unknown : json::object();
  j["namespace"] = c.namespace_name;
  j["name"] = c.name;
  j["state"] = StateName(c.state);
  if (!c.user.empty()) j["user"] = c.user;
  if (!c.pod.empty()) j["pod"] = c.pod;
  j["devices"] = json::array();
  for (const CheckpointDevice& d : c.devices) j["devices"].push_back(DeviceJson(d));
  return j;
}

// Reads a member, removing it from `rest`; false when it has the wrong type.
template <typename T>
bool Take(json& rest, const char* key, T& out) {
  if (!rest.contains(key)) return false;
  try {
    out = rest[key].get<T>();
  } catch (const json::exception&) {
    return false;
  }
  rest.erase(key);
  return true;
}

std::optional<CheckpointDevice> ParseDevice(json rest) {
  CheckpointDevice d;
  if (!rest.is_object() || !Take(rest, "requests", d.requests) || !Take(rest, "pool", d.pool) ||
      !Take(rest, "device", d.device) || !Take(rest, "gpu", d.gpu) ||
      !Take(rest, "cdiDeviceIds", d.cdi_device_ids)) {
    return std::nullopt;
  }
  // A share's fields: absent for a whole device and from older daemons.
  if (rest.contains("shareID") &&
      (!Take(rest, "shareID", d.share_id) || !Take(rest, "memory", d.memory) ||
       !Take(rest, "shareable", d.shareable) || !Take(rest, "isolation", d.isolation))) {
    return std::nullopt;
  }
  d.unknown = std::move(rest);
  return d;
}

std::optional<CheckpointClaim> ParseClaim(const std::string& uid, json rest) {
  CheckpointClaim c;
  c.uid = uid;
  std::string state;
  json devices;
  if (!rest.is_object() || !Take(rest, "namespace", c.namespace_name) ||
      !Take(rest, "name", c.name) || !Take(rest, "state", state) ||
      !Take(rest, "devices", devices) || !devices.is_array()) {
    return std::nullopt;
  }
  // Optional: absent from checkpoints of older daemons.
  for (auto [key, field] : {std::pair{"user", &c.user}, std::pair{"pod", &c.pod}}) {
    if (rest.contains(key) && !Take(rest, key, *field)) return std::nullopt;
  }
  if (state == "PrepareCompleted") {
    c.state = PrepareState::kCompleted;
  } else if (state != "PrepareStarted") {
    return std::nullopt;
  }
  for (json& d : devices) {
    std::optional<CheckpointDevice> device = ParseDevice(std::move(d));
    if (!device) return std::nullopt;
    c.devices.push_back(std::move(*device));
  }
  c.unknown = std::move(rest);
  return c;
}

// Why `text` is not a checkpoint this daemon reads, or "" when it is.
std::string Problem(const std::string& text, json& document) {
  document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) return "not JSON";
  if (document.value("kind", "") != kKind) return "not a k8shazgpu-node checkpoint";
  if (!document.contains("checksum") || !document["checksum"].is_string() ||
      document["checksum"] != ChecksumOf(document)) {
    return "its checksum does not match its contents";
  }
  if (!document.contains("version") || !document["version"].is_number_integer() ||
      document["version"].get<int64_t>() != kCheckpointVersion) {
    return StrCat("version ", document.value("version", json()).dump(), " is not ",
                  kCheckpointVersion);
  }
  return "";
}

}  // namespace

std::string CheckpointChecksum(const json& document) { return ChecksumOf(document); }

std::string CheckpointText(const std::string& boot_id,
                           const std::map<std::string, CheckpointClaim>& claims,
                           const json& unknown) {
  json document = unknown.is_object() ? unknown : json::object();
  document["kind"] = kKind;
  document["version"] = kCheckpointVersion;
  document["bootId"] = boot_id;
  document["claims"] = json::object();
  for (const auto& [uid, claim] : claims) document["claims"][uid] = ClaimJson(claim);
  document["checksum"] = ChecksumOf(document);
  return document.dump(1) + "\n";
}

absl::StatusOr<Checkpoint> Checkpoint::Load(const std::string& dir, const std::string& boot_id,
                                            const Clock& clock, std::string* note,
                                            std::string* moved_to) {
  Checkpoint checkpoint(dir, boot_id);
  note->clear();
  if (moved_to != nullptr) moved_to->clear();
  // What a daemon killed in a write left: nothing reads it, and only this
  // daemon writes here. One that cannot be removed is as harmless, so that
  // is not worth failing the start for (the next start tries again).
  (void)SweepTempFiles(dir, [](std::string_view target) { return target == kCheckpointFile; });
  const std::string path = StrCat(dir, "/", kCheckpointFile);
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxCheckpointBytes, "checkpoint");
  if (absl::IsNotFound(text.status())) return checkpoint;
  std::string problem;
  json document;
  if (!text.ok()) {
    // Too big, or not a regular file: as unusable as a corrupt one.
    if (!absl::IsInvalidArgument(text.status())) return text.status();
    problem = std::string(text.status().message());
  } else {
    problem = Problem(*text, document);
  }
  std::map<std::string, CheckpointClaim> claims;
  if (problem.empty()) {
    json& listed = document["claims"];
    if (!listed.is_object()) problem = "its claims are not a map";
    for (auto it = listed.begin(); problem.empty() && it != listed.end(); ++it) {
      std::optional<CheckpointClaim> claim = ParseClaim(it.key(), it.value());
      if (!claim) {
        problem = StrCat("claim ", it.key(), " is malformed");
      } else {
        claims.emplace(it.key(), std::move(*claim));
      }
    }
  }
  if (!problem.empty()) {
    std::string stamp = FormatTimestampSeconds(clock.Now());
    std::erase(stamp, ':');
    const std::string aside = StrCat(path, ".corrupt-", stamp);
    if (std::rename(path.c_str(), aside.c_str()) != 0) {
      return absl::UnavailableError(StrCat("checkpoint ", path, " is unusable (", problem,
                                           ") and cannot be moved aside: ", std::strerror(errno)));
    }
    if (moved_to != nullptr) *moved_to = aside;
    *note = StrCat("checkpoint ", path, " is unusable (", problem, "); moved to ", aside,
                   " and starting with nothing prepared");
    return checkpoint;
  }
  const std::string written_boot = document.value("bootId", "");
  if (written_boot != boot_id) {
    *note = StrCat("checkpoint ", path, " is from before the last reboot (boot ", written_boot,
                   ", now ", boot_id, "): its ", claims.size(),
                   " prepared claims are void and forgotten");
    RETURN_IF_ERROR(checkpoint.Save({}));
    return checkpoint;
  }
  document.erase("claims");
  for (const char* ours : {"kind", "version", "bootId", "checksum"}) document.erase(ours);
  checkpoint.unknown_ = std::move(document);
  checkpoint.claims_ = std::move(claims);
  return checkpoint;
}

const CheckpointClaim* Checkpoint::Find(const std::string& uid) const {
  auto it = claims_.find(uid);
  return it == claims_.end() ? nullptr : &it->second;
}

absl::Status Checkpoint::Save(const std::map<std::string, CheckpointClaim>& claims) {
  return WriteFileAtomically(StrCat(dir_, "/", kCheckpointFile),
                             CheckpointText(boot_id_, claims, unknown_), 0600);
}

absl::Status Checkpoint::Put(const CheckpointClaim& claim) {
  std::map<std::string, CheckpointClaim> next = claims_;
  next[claim.uid] = claim;
  RETURN_IF_ERROR(Save(next));
  claims_ = std::move(next);
  return absl::OkStatus();
}

absl::Status Checkpoint::Remove(const std::string& uid) {
  if (claims_.count(uid) == 0) return absl::OkStatus();
  std::map<std::string, CheckpointClaim> next = claims_;
  next.erase(uid);
  RETURN_IF_ERROR(Save(next));
  claims_ = std::move(next);
  return absl::OkStatus();
}

}  // namespace canhazgpu::driver
