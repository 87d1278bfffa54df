#include "driver/claim_preparer.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/cdi_spec.h"
#include "driver/shared_gpus.h"
#include "driver/temp_files.h"
#include "store/claim_reservations.h"

namespace canhazgpu::driver {
namespace {

const dra::Device* FindDevice(const dra::DevicePool& pool, const std::string& name) {
  for (const dra::Device& d : pool.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// The /dev/nvidia<minor> of the device's GPU (a MIG instance's parent).
int MinorOf(const dra::DevicePool& pool, const dra::Device& device) {
  for (const dra::Device& d : pool.devices) {
    if (d.gpu_index != device.gpu_index || d.is_mig) continue;
    auto it = d.attributes.find("minor");
    if (it != d.attributes.end()) return static_cast<int>(it->second.int_value);
  }
  return device.gpu_index;
}

// The kubelet names a claim by uid, namespace and name together; a request
// whose uid was prepared here for another claim is refused, not answered
// (nor undone) from the checkpoint on the strength of the uid alone.
absl::Status SameClaim(const ClaimRef& ref, const std::string& namespace_name,
                       const std::string& name) {
  if (namespace_name == ref.namespace_name && name == ref.name) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("claim ", ref.namespace_name, "/", ref.name, ": its uid ", ref.uid,
             " is that of claim ", namespace_name, "/", name,
             " on this node; a request must name the claim its uid belongs to"));
}

// What the claim holds in the host store: each GPU whole once (a MIG
// instance holds its GPU), each share by its id.
std::vector<store::ClaimGpu> ClaimGpusOf(const CheckpointClaim& claim) {
  std::vector<store::ClaimGpu> out;
  std::set<int> whole;
  for (const CheckpointDevice& d : claim.devices) {
    if (!d.share_id.empty()) {
      out.push_back(
          {.gpu = d.gpu, .memory = d.memory, .share = d.share_id, .shareable = d.shareable});
    } else if (whole.insert(d.gpu).second) {
      out.push_back({.gpu = d.gpu});
    }
  }
  return out;
}

// What a share's containers are told (docs/sharing.md): its memory, the
// GPU's and the isolation it gets, so that a program (vLLM) can size itself
// and nobody reads more into a share than there is.
CdiShare ShareOf(const CheckpointDevice& d, uint64_t total) {
  // A claim prepared before the node capped it may have recorded mps-dmem.
  return {.memory = d.memory,
          .total = total,
          .shareable = d.shareable,
          .isolation = PodShareIsolationName(d.isolation)};
}

// OK unless `a`'s device has a NoSchedule or NoExecute taint its allocation
// does not tolerate.
absl::Status RefuseTaints(const std::string& id, const AllocatedDevice& a,
                          const NodeDevices& node) {
  auto t = node.taints.find(a.device);
  if (t == node.taints.end()) return absl::OkStatus();
  for (const Taint& taint : t->second) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    const bool tolerated = std::any_of(
        a.tolerations.begin(), a.tolerations.end(),
        [&](const auto& tol) { return Tolerates(tol, taint.key, taint.value, taint.effect); });
    if (tolerated) continue;
    return absl::FailedPreconditionError(
        StrCat(id, ": ", a.device, " on node ", node.pool.pool, " is tainted ", taint.key,
               taint.value.empty() ? "" : "=" + taint.value, ":", taint.effect,
               taint.time_added.empty() ? "" : " since " + taint.time_added,
               " (the GPU reported a fault); delete the pod so it is scheduled on a healthy GPU"));
  }
  return absl::OkStatus();
}

// OK unless `a`'s device is prepared whole for another claim than `uid`,
// or whole now beside another's: shares of one GPU sit side by side, and
// the host store checks that they fit (saying who holds what when not).
absl::Status RefuseTwice(const std::string& id, const std::string& uid, const AllocatedDevice& a,
                         const std::string& pool,
                         const std::map<std::string, CheckpointClaim>& claims) {
  if (a.admin_access || !a.share_id.empty()) return absl::OkStatus();
  for (const auto& [other_uid, other] : claims) {
    if (other_uid == uid) continue;
    for (const CheckpointDevice& d : other.devices) {
      if (d.device != a.device || !d.share_id.empty()) continue;
      return absl::FailedPreconditionError(
          StrCat(id, ": ", a.device, " on node ", pool, " is already prepared for claim ",
                 other.namespace_name, "/", other.name,
                 "; the scheduler allocated it twice: delete this pod so it is scheduled again"));
    }
  }
  return absl::OkStatus();
}

// Whether a share of this isolation runs under its GPU's MPS daemon.
bool UsesMps(const CheckpointDevice& d) {
  return !d.share_id.empty() && (d.isolation == "mps" || d.isolation == "mps-dmem");
}

// OK unless one request of `claim` has MPS shares of two GPUs: a container
// naming it would need two MPS daemons, and a process has one
// CUDA_MPS_PIPE_DIRECTORY (each GPU has its own daemon), so one GPU would
// run without its limits. Refused before anything is reserved.
absl::Status RefuseTwoMpsGpusInARequest(const std::string& id, const CheckpointClaim& claim) {
  std::map<std::string, std::string> gpu_of_request;  // request -> its first MPS GPU
  for (const CheckpointDevice& d : claim.devices) {
    if (!UsesMps(d)) continue;
    std::vector<std::string> requests = BaseRequestNames(d.requests);
    if (requests.empty()) requests.push_back("");
    for (const std::string& request : requests) {
      auto [first, added] = gpu_of_request.emplace(request, d.device);
      if (added || first->second == d.device) continue;
      return absl::FailedPreconditionError(StrCat(
          id, ": ", request.empty() ? "it has" : StrCat("its request ", request, " has"),
          " shares of ", first->second, " and ", d.device,
          " under MPS, and a container's processes reach one GPU's MPS daemon "
          "(CUDA_MPS_PIPE_DIRECTORY); ask for each shared GPU in a request of its own, named by "
          "its own container"));
    }
  }
  return absl::OkStatus();
}

// The MPS shares of the claims prepared to completion.
std::vector<mps::MpsShare> LiveMpsShares(const std::map<std::string, CheckpointClaim>& claims,
                                         const NodeDevices& node) {
  std::vector<mps::MpsShare> live;
  for (const auto& [uid, claim] : claims) {
    if (claim.state != PrepareState::kCompleted) continue;
    for (const CheckpointDevice& d : claim.devices) {
      const dra::Device* device = FindDevice(node.pool, d.device);
      if (!UsesMps(d) || device == nullptr) continue;
      live.push_back({.gpu_uuid = device->StringAttribute("uuid"),
                      .share_id = d.share_id,
                      .share_bytes = d.memory,
                      .shareable_bytes = d.shareable});
    }
  }
  return live;
}

std::string DeviceList(const dra::DevicePool& pool) {
  std::string names;
  for (const dra::Device& d : pool.devices) names += StrCat(names.empty() ? "" : ", ", d.name);
  return names.empty() ? "none" : names;
}

}  // namespace

std::vector<PreparedDevice> PreparedDevicesOf(const CheckpointClaim& claim) {
  std::vector<PreparedDevice> out;
  for (const CheckpointDevice& d : claim.devices) {
    // As containers name them: the kubelet matches a container's request
    // to these exactly, and a container names "gpu", never "gpu/small".
    out.push_back(
        {.request_names = BaseRequestNames(d.requests),
         .pool = d.pool,
         .device = d.device,
         .cdi_device_ids = d.cdi_device_ids,
         .share_id = d.share_id.empty() ? std::nullopt : std::optional<std::string>(d.share_id)});
  }
  return out;
}

ClaimPreparer::ClaimPreparer(PreparerOptions options, ClaimSource& claims,
                             std::function<NodeDevices()> devices, store::StateStore& store,
                             Checkpoint& checkpoint, const Clock& clock)
    : options_(std::move(options)),
      claims_(claims),
      devices_(std::move(devices)),
      store_(store),
      checkpoint_(checkpoint),
      clock_(clock) {}

std::map<std::string, PrepareResult> ClaimPreparer::PrepareClaims(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  std::map<std::string, PrepareResult> out;
  for (const ClaimRef& ref : claims) {
    PrepareResult& r = out[ref.uid];
    // Once the kubelet has stopped waiting (its deadline, or it cancelled),
    // the claims not yet reached are left for its retry, each told why:
    // asking the API server for them would only delay everyone else's
    // requests behind the client's rate limit.
    if (absl::Status stop = bounds.Check(); !stop.ok()) {
      r.error =
          StrCat("claim ", ref.namespace_name, "/", ref.name, ": not prepared: ", stop.message(),
                 " before its turn; the kubelet retries it");
      r.out_of_time = true;
      continue;
    }
    absl::StatusOr<std::vector<PreparedDevice>> devices = Prepare(ref, bounds);
    if (devices.ok()) {
      r.devices = *std::move(devices);
    } else {
      r.error = std::string(devices.status().message());
      r.out_of_time = absl::IsDeadlineExceeded(devices.status());
    }
  }
  return out;
}

std::map<std::string, std::string> ClaimPreparer::UnprepareClaims(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  std::map<std::string, std::string> out;
  for (const ClaimRef& ref : claims) {
    const std::string cannot = StrCat("cannot unprepare claim ", ref.namespace_name, "/", ref.name);
    // Local work only, but thousands of claims add up.
    if (absl::Status stop = bounds.Check(); !stop.ok()) {
      out[ref.uid] =
          StrCat(cannot, ": ", stop.message(), " before its turn; the kubelet retries it");
      continue;
    }
    absl::Status s = Unprepare(ref);
    out[ref.uid] = s.ok() ? "" : StrCat(cannot, ": ", s.message());
  }
  return out;
}

absl::StatusOr<std::vector<PreparedDevice>> ClaimPreparer::Prepare(const ClaimRef& ref,
                                                                   const CallBounds& bounds) {
  {
    MutexLock lock(mu_);
    const CheckpointClaim* done = checkpoint_.Find(ref.uid);
    if (done != nullptr) RETURN_IF_ERROR(SameClaim(ref, done->namespace_name, done->name));
    if (done != nullptr && done->state == PrepareState::kCompleted) {
      return PreparedDevicesOf(*done);  // the kubelet asks again: same answer
    }
  }
  const std::string id = StrCat("claim ", ref.namespace_name, "/", ref.name);
  absl::StatusOr<kube::ResourceClaim> claim =
      claims_.GetClaim(ref.namespace_name, ref.name, ref.uid, bounds.deadline);
  if (!claim.ok()) {
    return absl::Status(claim.status().code(),
                        StrCat("cannot read ", id, ": ", claim.status().message()));
  }
  const NodeDevices node = devices_();
  ASSIGN_OR_RETURN(ClaimAllocation allocation,
                   OurAllocation(*claim, ref.uid, options_.driver, node.pool.pool));
  const std::string user =
      UserOf(ref.namespace_name, allocation.pods,
             std::min(bounds.deadline, RealClock().MonoNow() + options_.pod_lookup_timeout));
  MutexLock lock(mu_);
  return PrepareLocked(ref, allocation, node, user);
}

std::string ClaimPreparer::UserOf(const std::string& ns, const std::vector<std::string>& pods,
                                  ClaimSource::Deadline deadline) {
  for (const std::string& pod : pods) {
    if (RealClock().MonoNow() >= deadline) break;  // the kubelet's, on the real clock
    std::string user = claims_.UserOfPod(ns, pod, deadline);
    if (!user.empty()) return user;
  }
  return "";
}

absl::StatusOr<std::vector<PreparedDevice>> ClaimPreparer::PrepareLocked(
    const ClaimRef& ref, const ClaimAllocation& allocation, const NodeDevices& node,
    const std::string& user) {
  const std::string id = StrCat("claim ", ref.namespace_name, "/", ref.name);
  const std::string& pool = node.pool.pool;
  // A PrepareStarted leftover (a crash, or a failure last time): undo it first.
  if (const CheckpointClaim* half = checkpoint_.Find(ref.uid);
      half != nullptr && half->state == PrepareState::kStarted) {
    // Checked again: the record may have appeared since Prepare looked.
    RETURN_IF_ERROR(SameClaim(ref, half->namespace_name, half->name));
    RETURN_IF_ERROR(RollBackLocked(ref.uid));
  }
  CheckpointClaim record{.uid = ref.uid,
                         .namespace_name = ref.namespace_name,
                         .name = ref.name,
                         .user = user,
                         .pod = allocation.pods.empty() ? "" : allocation.pods.front()};
  for (const AllocatedDevice& a : allocation.devices) {
    const dra::Device* device = FindDevice(node.pool, a.device);
    if (device == nullptr) {
      return absl::FailedPreconditionError(StrCat(
          id, ": ", a.device, " is not a device of node ", pool, " (it has ", DeviceList(node.pool),
          "); the node changed after scheduling: delete the pod "
          "so it is scheduled again"));
    }
    RETURN_IF_ERROR(RefuseTaints(id, a, node));
    const bool share = !a.share_id.empty();
    auto shared = node.shared.find(a.device);
    if (share && (shared == node.shared.end() || a.memory == 0)) {
      return absl::FailedPreconditionError(
          StrCat(id, ": it was allocated share ", a.share_id, " of ", a.device, " on node ", pool,
                 a.memory == 0 ? ", which consumes no memory" : ", which this node does not share",
                 "; delete the pod so it is scheduled again"));
    }
    RETURN_IF_ERROR(RefuseTwice(id, ref.uid, a, pool, checkpoint_.claims()));
    record.devices.push_back(
        {.requests = a.requests,
         .pool = pool,
         .device = a.device,
         .gpu = device->gpu_index,
         .share_id = a.share_id,
         .memory = share ? a.memory : 0,
         .shareable = share ? shared->second.shareable : 0,
         .isolation = share ? device->StringAttribute(dra::kMemoryIsolationAttribute) : ""});
  }

  RETURN_IF_ERROR(RefuseTwoMpsGpusInARequest(id, record));
  RETURN_IF_ERROR(checkpoint_.Put(record));  // PrepareStarted: what to undo after a crash
  const KubeClaimRef claim_ref{
      .namespace_name = ref.namespace_name, .name = ref.name, .uid = ref.uid, .pod = record.pod};
  absl::Status reserved = store::ReserveClaimGpus(store_, ClaimGpusOf(record), claim_ref, user,
                                                  /*uid=*/0, clock_.Now());
  if (!reserved.ok()) {
    (void)checkpoint_.Remove(ref.uid);
    return absl::FailedPreconditionError(StrCat(
        id, ": a GPU it was allocated on node ", pool, " is held there: ", reserved.message(),
        "; the pod starts once it is released, or delete the pod to be scheduled elsewhere"));
  }
  for (CheckpointDevice& d : record.devices) {
    d.cdi_device_ids = CdiDeviceIdsFor(ref.uid, CdiShareName(d.device, d.share_id), d.requests);
  }
  record.state = PrepareState::kCompleted;
  if (absl::Status s = WriteSpec(record, node); !s.ok()) {
    return FailedAfterReserving(id, ref.uid, s);
  }
  if (options_.before_prepare_completed) options_.before_prepare_completed();
  if (absl::Status s = checkpoint_.Put(record); !s.ok()) {
    return FailedAfterReserving(id, ref.uid, s);
  }
  return PreparedDevicesOf(record);
}

absl::Status ClaimPreparer::WriteSpec(const CheckpointClaim& claim, const NodeDevices& node) {
  ClaimCdiInput input{
      .claim_uid = claim.uid, .claim_namespace = claim.namespace_name, .claim_name = claim.name};
  std::vector<std::string> uuids;
  std::optional<host::MigMinors> mig_minors;  // read once, for the first MIG device
  for (const CheckpointDevice& d : claim.devices) {
    const dra::Device* device = FindDevice(node.pool, d.device);
    if (device == nullptr) {
      return absl::FailedPreconditionError(
          StrCat(d.device, " is no longer a device of node ", node.pool.pool));
    }
    CdiDevice cdi{.name = CdiShareName(d.device, d.share_id),
                  .uuid = device->StringAttribute("uuid"),
                  .gpu_minor = MinorOf(node.pool, *device),
                  .is_mig = device->is_mig,
                  .requests = d.requests};
    if (device->is_mig) {
      ASSIGN_OR_RETURN(cdi.extra_device_nodes, MigNodes(*device, cdi.gpu_minor, mig_minors));
    }
    if (!d.share_id.empty()) {
      auto shared = node.shared.find(d.device);
      cdi.share = ShareOf(d, shared == node.shared.end() ? 0 : shared->second.total);
      RETURN_IF_ERROR(AddMps(d, *device, cdi));
    }
    input.devices.push_back(std::move(cdi));
    uuids.push_back(device->StringAttribute("uuid"));
  }
  // With the NVIDIA Container Toolkit's spec, it brings the driver's files.
  if (ToolkitDeviceIds(options_.toolkit_spec_dirs, uuids).empty()) {
    input.driver_files = FindDriverFiles(options_.driver_root);
  }
  return WriteCdiSpec(options_.cdi_dir, claim.uid, ClaimCdiSpec(input));
}

absl::Status ClaimPreparer::AddMps(const CheckpointDevice& d, const dra::Device& device,
                                   CdiDevice& cdi) {
  if (!UsesMps(d)) return absl::OkStatus();
  const std::string uuid = device.StringAttribute("uuid");
  if (options_.mps == nullptr) {
    return absl::FailedPreconditionError(StrCat("share ", d.share_id, " of ", d.device,
                                                " needs MPS, and this node runs no MPS daemons"));
  }
  // The same share again (a retried prepare, a restart) gets the same answer.
  // Its environment (share_limits.h) is its request's, with the other
  // shares of the request (RequestEnvironments): only the daemon's pipe
  // directory is needed here.
  RETURN_IF_ERROR(options_.mps
                      ->Acquire({.gpu_uuid = uuid,
                                 .share_id = d.share_id,
                                 .share_bytes = d.memory,
                                 .shareable_bytes = d.shareable})
                      .status());
  cdi.share->mps_pipe_dir = options_.mps->PipeDir(uuid);
  // The container reaches the daemon through its pipe directory.
  cdi.mounts.push_back(cdi.share->mps_pipe_dir);
  return absl::OkStatus();
}

absl::Status ClaimPreparer::ReleaseMpsLocked(const std::string& uid) {
  const CheckpointClaim* claim = checkpoint_.Find(uid);
  if (claim == nullptr || options_.mps == nullptr) return absl::OkStatus();
  for (const CheckpointDevice& d : claim->devices) {
    if (!UsesMps(d)) continue;
    absl::Status s = options_.mps->Release(d.share_id);
    // Never acquired (a prepare that failed first), or released already.
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ClaimPreparer::MigNodes(
    const dra::Device& device, int gpu_minor, std::optional<host::MigMinors>& minors) const {
  // Without them the container sees no usable GPU: refuse rather than start it so.
  const std::string cannot =
      StrCat("cannot give MIG device ", device.name, " its capability device nodes: ");
  if (device.mig_gpu_instance < 0 || device.mig_compute_instance < 0) {
    return absl::FailedPreconditionError(
        StrCat(cannot,
               "NVML did not report its GPU and compute instance ids; check the "
               "instance with nvidia-smi mig -lgi and -lci"));
  }
  if (!minors) {
    absl::StatusOr<host::MigMinors> read = host::MigMinors::Read(options_.mig_minors_path);
    if (!read.ok()) {
      return absl::FailedPreconditionError(StrCat(
          cannot, read.status().message(), "; is the NVIDIA driver loaded with MIG support?"));
    }
    minors = *std::move(read);
  }
  absl::StatusOr<std::vector<std::string>> nodes =
      minors->CapabilityNodes(gpu_minor, device.mig_gpu_instance, device.mig_compute_instance);
  if (!nodes.ok()) {
    return absl::FailedPreconditionError(StrCat(cannot, nodes.status().message()));
  }
  return nodes;
}

absl::Status ClaimPreparer::FailedAfterReserving(const std::string& id, const std::string& uid,
                                                 const absl::Status& failure) {
  absl::Status undone = RollBackLocked(uid);
  // What could not be undone is for the operator to see: the kubelet shows
  // it on the pod, and it retries.
  return absl::Status(failure.code(),
                      StrCat(id, ": ", failure.message(),
                             undone.ok() ? "" : StrCat("; undoing it failed: ", undone.message())));
}

absl::Status ClaimPreparer::RollBackLocked(const std::string& uid) {
  // Every step is tried whatever the others did: a CDI directory gone
  // read-only must not keep the claim's GPUs reserved, nor its record. Each
  // step is idempotent, so the kubelet's retry of a failed unprepare (or the
  // next prepare or start) finishes what failed here.
  absl::Status spec = RemoveCdiSpec(options_.cdi_dir, uid);
  // Before the record goes: it says which shares the claim held.
  absl::Status mps = ReleaseMpsLocked(uid);
  absl::Status reservation = store::ReleaseClaim(store_, uid, clock_.Now());
  absl::Status record = mps.ok() ? checkpoint_.Remove(uid) : absl::OkStatus();
  std::vector<std::string> failed;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (const absl::Status* s : {&spec, &mps, &reservation, &record}) {
    if (s->ok()) continue;
    if (code == absl::StatusCode::kOk) code = s->code();
    failed.emplace_back(s->message());
  }
  if (failed.empty()) return absl::OkStatus();
  return absl::Status(code, Join(failed, "; "));
}

absl::Status ClaimPreparer::Unprepare(const ClaimRef& ref) {
  MutexLock lock(mu_);
  if (const CheckpointClaim* recorded = checkpoint_.Find(ref.uid); recorded != nullptr) {
    RETURN_IF_ERROR(SameClaim(ref, recorded->namespace_name, recorded->name));
  } else {
    // No record (a failed write, a checkpoint moved aside): the GPUs the
    // store holds for the uid say whose claim it is.
    ASSIGN_OR_RETURN(std::vector<Reservation> held, store::ListClaimReservations(store_));
    for (const Reservation& r : held) {
      if (r.claim && r.claim->uid == ref.uid) {
        RETURN_IF_ERROR(SameClaim(ref, r.claim->namespace_name, r.claim->name));
      }
    }
  }
  // Whatever is left of the claim goes, recorded or not: idempotent.
  return RollBackLocked(ref.uid);
}

std::vector<std::string> ClaimPreparer::Restore() {
  MutexLock lock(mu_);
  // Specs half-written by a daemon that was killed: only ours, since other
  // drivers write into the same directory. (The checkpoint's went in Load.)
  std::vector<std::string> problems = SweepTempFiles(options_.cdi_dir, IsCdiSpecFileName);
  const NodeDevices node = devices_();
  const std::map<std::string, CheckpointClaim> claims = checkpoint_.claims();
  if (options_.mps != nullptr) {
    // A daemon killed with shares prepared: their MPS daemons are adopted,
    // those of shares it never completed (or of none) stopped and removed.
    if (absl::Status s = options_.mps->Recover(LiveMpsShares(claims, node)); !s.ok()) {
      problems.push_back(StrCat("MPS daemons: ", s.message()));
    }
  }
  for (const auto& [uid, claim] : claims) {
    absl::Status s =
        claim.state == PrepareState::kCompleted ? WriteSpec(claim, node) : RollBackLocked(uid);
    if (!s.ok()) {
      problems.push_back(
          StrCat("claim ", claim.namespace_name, "/", claim.name, " (", uid, "): ", s.message()));
    }
  }
  return problems;
}

std::map<std::string, CheckpointClaim> ClaimPreparer::CompletedClaims() {
  MutexLock lock(mu_);
  std::map<std::string, CheckpointClaim> out;
  for (const auto& [uid, claim] : checkpoint_.claims()) {
    if (claim.state == PrepareState::kCompleted) out.emplace(uid, claim);
  }
  return out;
}

std::vector<LostReservation> ClaimPreparer::ReassertReservations() {
  MutexLock lock(mu_);
  // Looked at with one read first: this runs at every commit to the store,
  // and a write transaction per claim would hold off local commands each time.
  std::set<std::tuple<int, std::string, std::string>> held;  // gpu, share, claim uid
  absl::StatusOr<std::vector<Reservation>> listed = store::ListClaimReservations(store_);
  if (listed.ok()) {
    for (const Reservation& r : *listed) held.emplace(r.gpu, r.share, r.claim ? r.claim->uid : "");
  }
  std::vector<LostReservation> out;
  for (const auto& [claim_uid, claim] : checkpoint_.claims()) {
    // A claim still being prepared has its reservation made (or not) by
    // that prepare, under this lock: only completed ones are owed one.
    if (claim.state != PrepareState::kCompleted) continue;
    const std::vector<store::ClaimGpu> gpus = ClaimGpusOf(claim);
    const std::string& uid = claim_uid;  // clang 14 cannot capture a structured binding
    const bool whole =
        listed.ok() && std::all_of(gpus.begin(), gpus.end(), [&](const store::ClaimGpu& g) {
          return held.contains({g.gpu, g.memory > 0 ? g.share : "", uid});
        });
    if (gpus.empty() || whole) continue;
    const KubeClaimRef ref{
        .namespace_name = claim.namespace_name, .name = claim.name, .uid = uid, .pod = claim.pod};
    absl::StatusOr<store::ClaimRestore> restored =
        store::RestoreClaimGpus(store_, gpus, ref, claim.user, clock_.Now());
    LostReservation lost{
        .claim = {.namespace_name = claim.namespace_name, .uid = uid, .name = claim.name}};
    if (!restored.ok()) {
      lost.error = std::string(restored.status().message());
    } else if (!restored->restored.empty() || !restored->conflicts.empty()) {
      lost.restored = std::move(restored->restored);
      lost.conflicts = Join(restored->conflicts, "; ");
    } else {
      continue;  // as it should be
    }
    out.push_back(std::move(lost));
  }
  return out;
}

}  // namespace canhazgpu::driver
