#include "cli/k8shazgpu/run_request.h"

#include <cctype>

#include "cli/common/device_flags.h"
#include "cli/k8shazgpu/run_objects.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

absl::Status Conflict(std::string_view a, std::string_view b, std::string_view why) {
  return absl::InvalidArgumentError(StrCat(a, " and ", b, " cannot be used together: ", why));
}

// A C identifier-ish env name, as the API server's validation accepts:
// letters, digits, '_', '-', '.', not starting with a digit.
bool ValidEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// --share NAME and --share-with USER,...: a claim other runs may use.
absl::Status ParseSharing(const ParsedFlags& flags, RunRequest& r) {
  if (auto v = flags.Value("share")) {
    if (!ValidObjectName(*v)) {
      return absl::InvalidArgumentError(StrCat(
          "--share '", *v, "' is not a valid claim name (lower-case letters, digits, '-', '.')"));
    }
    r.share = *v;
  }
  if (auto v = flags.Value("share-with")) {
    if (r.share.empty()) return absl::InvalidArgumentError("--share-with needs --share NAME");
    for (std::string_view user : Split(*v, ',', /*skip_empty=*/true)) {
      std::string name(Trim(user));
      if (name != "*" && UserLabelValue(name) != name) {
        return absl::InvalidArgumentError(StrCat(
            "--share-with: '", name, "' is not a user name (letters, digits, '.', '_', '-')"));
      }
      r.share_with.push_back(std::move(name));
    }
    if (r.share_with.empty()) return absl::InvalidArgumentError("--share-with names nobody");
  }
  return absl::OkStatus();
}

// One line of printable text, short enough to be an annotation people read.
absl::Status CheckNote(const std::string& note) {
  if (note.size() > 1024)
    return absl::InvalidArgumentError("--note is longer than 1024 characters");
  for (unsigned char c : note) {
    if (c < ' ' || c == 0x7f) {
      return absl::InvalidArgumentError("--note must be one line of printable text");
    }
  }
  return absl::OkStatus();
}

// --timeout, --detach, --keep, --ttl, --wait, --nonblock, --note.
absl::Status ParseLifecycle(const ParsedFlags& flags, RunRequest& r) {
  if (auto t = flags.Value("timeout")) {
    ASSIGN_OR_RETURN(r.timeout_seconds, DurationSeconds("timeout", *t));
  }
  r.detach = flags.Has("detach");
  r.keep = flags.Has("keep");
  if (r.keep && flags.Has("ttl")) {
    return Conflict("--keep", "--ttl", "--keep keeps the run until 'k8shazgpu cleanup'");
  }
  if (!r.keep) {
    ASSIGN_OR_RETURN(r.ttl_seconds,
                     DurationSeconds("ttl", flags.Value("ttl").value_or(kDefaultRunTtl)));
  }
  r.nonblock = flags.Has("nonblock");
  if (auto w = flags.Value("wait")) {
    if (r.nonblock) return Conflict("--wait", "--nonblock", "--nonblock does not wait at all");
    ASSIGN_OR_RETURN(r.wait_seconds, DurationSeconds("wait", *w));
  }
  if (r.nonblock && r.detach) {
    return Conflict("--nonblock", "--detach", "--detach returns once the pod is placed anyway");
  }
  if (auto n = flags.Value("note")) {
    RETURN_IF_ERROR(CheckNote(*n));
    r.note = *n;
  }
  return absl::OkStatus();
}

// --nodes, --gpus-per-node, --logs, --queue: a multi-node run (ADR 0019).
absl::Status ParseGang(const ParsedFlags& flags, RunRequest& r) {
  auto nodes = flags.Value("nodes");
  if (!nodes) {
    for (const char* only : {"gpus-per-node", "logs", "queue"}) {
      if (flags.Has(only))
        return absl::InvalidArgumentError(StrCat("--", only, " needs --nodes N"));
    }
    return absl::OkStatus();
  }
  r.nodes = std::stoi(*nodes);
  if (auto g = flags.Value("gpus-per-node")) {
    if (flags.Has("gpus")) {
      return Conflict("--gpus", "--gpus-per-node", "with --nodes, --gpus-per-node is the count");
    }
    r.gpus = std::stoi(*g);
  }
  // Each rank has its own claim on its own node.
  for (const char* single : {"share", "node", "gpu-ids", "port"}) {
    if (flags.Has(single)) {
      return Conflict("--nodes", StrCat("--", single),
                      "a multi-node run places one rank on each of N nodes, each with its own "
                      "claim");
    }
  }
  // The Service and the ranks' hostnames ("<name>-<rank>") are DNS labels.
  if (!r.name.empty() &&
      (r.name.size() > 56 || r.name.find('.') != std::string::npos || !isalpha(r.name[0]))) {
    return absl::InvalidArgumentError(
        StrCat("--name '", r.name,
               "': a multi-node run's name must start with a letter, have no '.', and be at "
               "most 56 characters (it names the ranks' hosts)"));
  }
  if (auto rank = flags.Value("logs")) {
    r.logs_rank = std::stoi(*rank);
    if (*r.logs_rank >= r.nodes) {
      return absl::InvalidArgumentError(
          StrCat("--logs ", *r.logs_rank, ": the run has ranks 0 to ", r.nodes - 1));
    }
  }
  if (auto q = flags.Value("queue")) {
    if (!ValidObjectName(*q)) {
      return absl::InvalidArgumentError(StrCat("--queue '", *q, "' is not a valid queue name"));
    }
    r.kueue_queue = *q;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> GangFlags() {
  return {
      {.name = "nodes",
       .has_value = true,
       .value_name = "N",
       .help = "run N ranks, one per node, started together or not at all",
       .kind = FlagKind::kPositiveInt,
       .max = kMaxRunNodes},
      {.name = "gpus-per-node",
       .has_value = true,
       .value_name = "G",
       .help = "with --nodes: the devices each rank holds (default 1)",
       .kind = FlagKind::kPositiveInt,
       .max = kMaxRunGpus},
      {.name = "logs",
       .has_value = true,
       .value_name = "RANK",
       .help = "with --nodes: copy only this rank's output (default: every rank's, prefixed)",
       .kind = FlagKind::kCount,
       .max = kMaxRunNodes - 1},
      {.name = "queue",
       .has_value = true,
       .value_name = "NAME",
       .help = "with --nodes: let Kueue admit the run from this LocalQueue"},
  };
}

std::vector<FlagSpec> PlacementFlags() {
  std::vector<FlagSpec> flags = DeviceSelectionFlags(kMaxRunGpus);
  // -G after -g: a node's GPUs by index.
  flags.insert(flags.begin() + 1, {.name = "gpu-ids",
                                   .short_name = 'G',
                                   .has_value = true,
                                   .value_name = "NODE:ID,...",
                                   .help = "exactly these GPUs (by index) on this node"});
  flags.push_back({.name = "class",
                   .has_value = true,
                   .value_name = "NAME",
                   .help = "the DeviceClass (default: gpu.canhazgpu.dev, else gpu.nvidia.com)"});
  flags.push_back(
      {.name = "node", .has_value = true, .value_name = "NODE", .help = "run on this node"});
  return flags;
}

std::vector<FlagSpec> PodFlags() {
  return {
      {.name = "image", .has_value = true, .value_name = "IMAGE", .help = "the container image"},
      {.name = "name",
       .has_value = true,
       .value_name = "NAME",
       .help = "the pod's name (default USER-ID)"},
      {.name = "note",
       .has_value = true,
       .value_name = "TEXT",
       .help = "a note shown in status, queue and explain"},
  };
}

std::vector<FlagSpec> WaitFlags() {
  return {
      {.name = "wait",
       .short_name = 'w',
       .has_value = true,
       .value_name = "D",
       .help = "wait in line at most this long, then exit 3 (default: until it runs)",
       .kind = FlagKind::kDuration},
      {.name = "nonblock",
       .help = "do not wait in line: exit 3 at once when the GPUs are not free now"},
  };
}

std::vector<FlagSpec> RunFlags() {
  std::vector<FlagSpec> flags = PlacementFlags();
  flags.push_back({.name = "share",
                   .has_value = true,
                   .value_name = "NAME",
                   .help = "use the named claim several runs share (created if missing); another "
                           "user's only when its creator allowed it with --share-with"});
  flags.push_back(
      {.name = "share-with",
       .has_value = true,
       .value_name = "USER,...|*",
       .help = "with --share: the other users who may join the claim this run creates"});
  for (FlagSpec& f : PodFlags()) flags.push_back(std::move(f));
  const std::vector<FlagSpec> command = {
      {.name = "env",
       .short_name = 'e',
       .has_value = true,
       .value_name = "K=V",
       .help = "an environment variable of the command (repeatable)",
       .repeatable = true},
      {.name = "port",
       .short_name = 'p',
       .has_value = true,
       .value_name = "P",
       .help = "the container port (prints the kubectl port-forward line)",
       .kind = FlagKind::kPositiveInt,
       .max = 65535},
      {.name = "timeout",
       .short_name = 't',
       .has_value = true,
       .value_name = "D",
       .help = "end the pod after this long running (30m, 2h)",
       .kind = FlagKind::kDuration},
      // -d is the host tool's --duration; -D does not collide with it.
      {.name = "detach",
       .short_name = 'D',
       .help = "return once the pod is scheduled; print how to follow it"},
      {.name = "keep",
       .help = "keep the pod and its claim after the run ends (default: deleted once its "
               "output is read)"},
      {.name = "ttl",
       .has_value = true,
       .value_name = "D",
       .help = StrCat("a detached run is deleted this long after it ends, by your next run "
                      "(default ",
                      kDefaultRunTtl, ")"),
       .kind = FlagKind::kDuration},
  };
  flags.insert(flags.end(), command.begin(), command.end());
  for (FlagSpec& f : WaitFlags()) flags.push_back(std::move(f));
  for (FlagSpec& f : GangFlags()) flags.push_back(std::move(f));
  return flags;
}

absl::StatusOr<int64_t> DurationSeconds(const std::string& flag, const std::string& text) {
  absl::StatusOr<Duration> d = ParseDuration(text);
  if (!d.ok()) return absl::InvalidArgumentError(StrCat("--", flag, ": ", d.status().message()));
  return std::max<int64_t>(1, (d->count() + 999) / 1000);
}

bool ValidObjectName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if ((c == '-' || c == '.') && i > 0 && i + 1 < name.size()) continue;
    return false;
  }
  return true;
}

absl::StatusOr<PinnedGpus> ParsePinnedGpus(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return absl::InvalidArgumentError(
        StrCat("-G '", text, "' is not NODE:ID,...; use e.g. -G node-0:0,1"));
  }
  PinnedGpus out{.node = text.substr(0, colon), .indices = {}};
  for (std::string_view id : Split(std::string_view(text).substr(colon + 1), ',')) {
    int64_t index = 0;
    if (!ParseInt(Trim(id), &index) || index < 0) {
      return absl::InvalidArgumentError(
          StrCat("-G '", text, "': '", id, "' is not a GPU index (0, 1, ...)"));
    }
    for (int64_t seen : out.indices) {
      if (seen == index) {
        return absl::InvalidArgumentError(StrCat("-G '", text, "' names GPU ", index, " twice"));
      }
    }
    out.indices.push_back(index);
  }
  return out;
}

absl::StatusOr<RunRequest> ParseRunRequest(const ParsedFlags& flags, const RunDefaults& defaults) {
  for (const FlagSpec& spec : RunFlags()) {
    for (const std::string& v : flags.Values(spec.name)) {
      if (absl::Status s = CheckFlagValue(spec, v); !s.ok()) {
        return absl::InvalidArgumentError(StrCat("--", spec.name, ": ", s.message()));
      }
    }
  }
  RunRequest r;
  r.image = flags.Value("image").value_or(defaults.image);
  r.port = defaults.port;
  r.shared_memory = defaults.shared_memory;
  if (auto g = flags.Value("gpus")) r.gpus = std::stoi(*g);
  if (auto ids = flags.Value("gpu-ids")) {
    if (flags.Has("gpus")) return Conflict("--gpus", "-G", "-G names the GPUs, so their count");
    if (flags.Has("mig")) return Conflict("--mig", "-G", "-G names whole GPUs by index");
    absl::StatusOr<PinnedGpus> pinned = ParsePinnedGpus(*ids);
    if (!pinned.ok()) return pinned.status();
    r.pinned = *pinned;
    r.gpus = static_cast<int>(pinned->indices.size());
    if (auto node = flags.Value("node"); node && *node != pinned->node) {
      return Conflict("--node", "-G", StrCat("-G names node ", pinned->node));
    }
    r.node = pinned->node;
  }
  if (auto node = flags.Value("node")) r.node = *node;
  ASSIGN_OR_RETURN(r.wants, ParseDeviceWants(flags));
  ASSIGN_OR_RETURN(r.gpu_mem, ParseGpuMem(flags));
  if (auto v = flags.Value("class")) r.device_class = *v;
  RETURN_IF_ERROR(ParseSharing(flags, r));
  if (auto v = flags.Value("name")) {
    if (!ValidObjectName(*v)) {
      return absl::InvalidArgumentError(StrCat(
          "--name '", *v, "' is not a valid pod name (lower-case letters, digits, '-', '.')"));
    }
    r.name = *v;
  }
  if (r.image.empty()) return absl::InvalidArgumentError("--image is empty");
  for (const std::string& kv : flags.Values("env")) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || !ValidEnvName(std::string_view(kv).substr(0, eq))) {
      return absl::InvalidArgumentError(
          StrCat("--env '", kv, "' is not NAME=VALUE (a name of letters, digits, '_', '-', '.')"));
    }
    r.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (auto p = flags.Value("port")) r.port = std::stoi(*p);
  RETURN_IF_ERROR(ParseLifecycle(flags, r));
  RETURN_IF_ERROR(ParseGang(flags, r));
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '", flags.positional[0],
                                             "'; the command goes after --: run [flags] -- CMD"));
  }
  r.argv = flags.rest;
  if (r.argv.empty()) {
    return absl::InvalidArgumentError("no command: run [flags] -- COMMAND [ARGS...]");
  }
  return r;
}

}  // namespace canhazgpu::cli::k8s
