// What the node driver has prepared, kept on disk so that a restarted daemon
// knows it (the kubelet does not send prepares again for running pods):
// <plugin-dir>/checkpoint.json, rewritten whole with WriteFileAtomically on
// every change. Each claim is recorded twice on its way in: PrepareStarted
// before any work (so a crash leaves a record of what to roll back), then
// PrepareCompleted with its devices. The file carries a CRC-32 of its
// contents (a torn or edited file is detected) and the boot id (after a
// reboot nothing prepared survives). Fields a newer daemon added are kept and
// written back. A corrupt file is moved aside with one line saying so —
// never a crash loop (NVIDIA's driver issue 1100). Not thread-safe: the
// driver holds its lock around it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::driver {

enum class PrepareState { kStarted, kCompleted };

struct CheckpointDevice {
  std::vector<std::string> requests;  // the claim's requests it serves
  std::string pool;
  std::string device;  // the ResourceSlice device name
  int gpu = -1;        // the host GPU index (the parent's, for MIG)
  std::vector<std::string> cdi_device_ids;
  // A share of the GPU's memory (consumable capacity): the allocation's
  // shareID, its bytes, the GPU's shareable bytes and the memoryIsolation it
  // was prepared with; empty and 0 for a whole device.
  std::string share_id;
  uint64_t memory = 0;
  uint64_t shareable = 0;
  std::string isolation;
  nlohmann::json unknown = nlohmann::json::object();  // fields of newer daemons
};

struct CheckpointClaim {
  std::string uid;
  std::string namespace_name;
  std::string name;
  PrepareState state = PrepareState::kStarted;
  std::vector<CheckpointDevice> devices;
  // The K8S reservation's user and pod, as the prepare recorded them in the
  // host store, so that the daemon can put it back as it was ("" in
  // checkpoints written before they were kept).
  std::string user;
  std::string pod;
  nlohmann::json unknown = nlohmann::json::object();
};

inline constexpr char kCheckpointFile[] = "checkpoint.json";
inline constexpr int kCheckpointVersion = 1;

class Checkpoint {
 public:
  // Reads <dir>/checkpoint.json (none: empty), first removing the
  // temporary files of its writes that a killed daemon left. A file that is not a valid
  // checkpoint of a version this daemon reads is renamed to
  // checkpoint.json.corrupt-<time> and the checkpoint starts empty; one
  // written under another boot id is emptied. Either way `note` gets one
  // line for the log and an Event. `moved_to`, when given, gets the path a
  // corrupt file was moved to ("" when none was). Errors only when the file
  // cannot be read or moved aside.
  static absl::StatusOr<Checkpoint> Load(const std::string& dir, const std::string& boot_id,
                                         const Clock& clock, std::string* note,
                                         std::string* moved_to = nullptr);

  const std::map<std::string, CheckpointClaim>& claims() const { return claims_; }
  const CheckpointClaim* Find(const std::string& uid) const;

  // Records `claim` (replacing one of the same uid) and writes the file
  // before returning; on error nothing changed, in memory or on disk.
  absl::Status Put(const CheckpointClaim& claim);
  // Forgets the claim and writes the file; OK when it was not there.
  absl::Status Remove(const std::string& uid);

 private:
  Checkpoint(std::string dir, std::string boot_id)
      : dir_(std::move(dir)), boot_id_(std::move(boot_id)) {}
  absl::Status Save(const std::map<std::string, CheckpointClaim>& claims);

  std::string dir_;
  std::string boot_id_;
  std::map<std::string, CheckpointClaim> claims_;
  nlohmann::json unknown_ = nlohmann::json::object();  // top-level fields of newer daemons
};

// The checksum a checkpoint document must carry (for tests that make
// documents a daemon could have written).
std::string CheckpointChecksum(const nlohmann::json& document);

// The file's text for `claims`.
std::string CheckpointText(const std::string& boot_id,
                           const std::map<std::string, CheckpointClaim>& claims,
                           const nlohmann::json& unknown = nlohmann::json::object());

}  // namespace canhazgpu::driver
