#include "cli/k8shazgpu/gang_objects.h"

#include <vector>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

constexpr char kCompletionIndexAnnotation[] = "batch.kubernetes.io/job-completion-index";
constexpr char kKueueQueueLabel[] = "kueue.x-k8s.io/queue-name";

// A pod's environment is fixed before its claim is allocated, so the
// devices it really got are counted in the container: the driver's CDI
// environment lists them (ours and the stand-ins': NVIDIA_VISIBLE_DEVICES),
// else the GPU device nodes the runtime gave it; the claim's count is the
// last resort (an ExactCount claim is allocated whole or not at all).
// Never nvidia.com/gpu, which is 0 under DRA.
std::string EntryScript(int nodes, int gpus_per_node) {
  return StrCat(
      "n=0\n"
      "case \"${NVIDIA_VISIBLE_DEVICES:-}\" in\n"
      "  \"\"|void|none|all) ;;\n"
      "  *) n=$(printf '%s\\n' \"$NVIDIA_VISIBLE_DEVICES\" | tr ',' '\\n' | grep -c .) ;;\n"
      "esac\n"
      "[ \"$n\" -gt 0 ] || n=$(ls /dev 2>/dev/null | grep -c '^nvidia[0-9][0-9]*$')\n"
      "[ \"$n\" -gt 0 ] || n=",
      gpus_per_node,
      "\n"
      "export NPROC_PER_NODE=$n SKYPILOT_NUM_GPUS_PER_NODE=$n DSTACK_GPUS_PER_NODE=$n\n"
      "export WORLD_SIZE=$((n * ",
      nodes, ")) DSTACK_GPUS_NUM=$((n * ", nodes,
      "))\n"
      "exec \"$@\"\n");
}

json Var(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

// The rank's variables (docs/multi-node.md), before the user's --env, which
// may replace them. $(JOB_COMPLETION_INDEX) is expanded by the kubelet from
// the first entry; the Job controller adds it only where it is missing.
json RankEnvironment(const RunNames& names, const GangShape& shape) {
  std::vector<std::string> hosts;
  for (int i = 0; i < shape.nodes; ++i) hosts.push_back(RankHost(names, i));
  const std::string all_hosts = Join(hosts, "\n");
  const std::string rank = "$(JOB_COMPLETION_INDEX)";
  const std::string nodes = StrCat(shape.nodes);
  json env = json::array();
  env.push_back(
      {{"name", "JOB_COMPLETION_INDEX"},
       {"valueFrom",
        {{"fieldRef",
          {{"fieldPath", StrCat("metadata.annotations['", kCompletionIndexAnnotation, "']")}}}}}});
  for (json var : {Var("MASTER_ADDR", hosts[0]), Var("MASTER_PORT", StrCat(shape.master_port)),
                   Var("NNODES", nodes), Var("NODE_RANK", rank), Var("SKYPILOT_NODE_RANK", rank),
                   Var("SKYPILOT_NUM_NODES", nodes), Var("SKYPILOT_NODE_IPS", all_hosts),
                   Var("DSTACK_NODE_RANK", rank), Var("DSTACK_NODES_NUM", nodes),
                   Var("DSTACK_MASTER_NODE_IP", hosts[0]), Var("DSTACK_NODES_IPS", all_hosts)}) {
    env.push_back(std::move(var));
  }
  return env;
}

// The pod `run` would make, turned into the Job's rank template.
json RankTemplate(const RunRequest& request, const RunNames& names, const GangShape& shape,
                  const json& pod) {
  json metadata = pod["metadata"];
  metadata.erase("name");
  if (metadata.contains("annotations")) {
    metadata["annotations"].erase(kTtlAnnotation);  // the Job's own TTL deletes it all
    if (metadata["annotations"].empty()) metadata.erase("annotations");
  }
  json spec = pod["spec"];
  spec.erase("activeDeadlineSeconds");  // the whole run's, on the Job
  spec["subdomain"] = names.pod;
  spec["affinity"] = {{"podAntiAffinity",
                       {{"requiredDuringSchedulingIgnoredDuringExecution",
                         {{{"labelSelector", {{"matchLabels", {{kRunLabel, names.run_id}}}}},
                           {"topologyKey", "kubernetes.io/hostname"}}}}}}};
  if (shape.gated) spec["schedulingGates"] = {{{"name", kGangGate}}};
  if (!shape.pod_group.empty()) spec["schedulingGroup"] = {{"podGroupName", shape.pod_group}};
  json& container = spec["containers"][0];
  json command = {"sh", "-c", EscapeDollars(EntryScript(shape.nodes, request.gpus)),
                  "k8shazgpu-rank"};
  for (const json& arg : container["command"]) command.push_back(arg);
  container["command"] = command;
  json env = RankEnvironment(names, shape);
  for (const json& var : container.value("env", json::array())) env.push_back(var);
  container["env"] = env;
  return {{"metadata", metadata}, {"spec", spec}};
}

}  // namespace

std::string RankHost(const RunNames& names, int rank) {
  return StrCat(names.pod, "-", rank, ".", names.pod);
}

json GangServiceObject(const RunNames& names) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", names.pod}, {"labels", Labels(names)}}},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{kRunLabel, names.run_id}}}}}};
}

json GangJobObject(const RunRequest& request, const RunNames& names, const GangShape& shape,
                   const json& pod) {
  json labels = Labels(names);
  if (request.reservation) labels[kKindLabel] = kReservationKind;  // `release` finds it
  if (!shape.kueue_queue.empty()) labels[kKueueQueueLabel] = shape.kueue_queue;
  json metadata = {{"name", names.pod}, {"labels", labels}};
  if (!request.note.empty()) metadata["annotations"] = {{kNoteAnnotation, request.note}};
  json spec = {{"completionMode", "Indexed"},
               {"completions", shape.nodes},
               {"parallelism", shape.nodes},
               {"backoffLimit", 0},
               {"template", RankTemplate(request, names, shape, pod)}};
  if (request.timeout_seconds) spec["activeDeadlineSeconds"] = *request.timeout_seconds;
  if (request.ttl_seconds) spec["ttlSecondsAfterFinished"] = *request.ttl_seconds;
  if (!shape.kueue_queue.empty()) spec["suspend"] = true;
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", metadata}, {"spec", spec}};
}

json GangPodGroupObject(const RunNames& names, const kube::ResourceRef& ref, int nodes,
                        const json& job) {
  return {{"apiVersion", StrCat(ref.group, "/", ref.version)},
          {"kind", "PodGroup"},
          {"metadata",
           {{"name", names.pod},
            {"labels", Labels(names)},
            {"ownerReferences", json::array({OwnerReferenceToJob(job)})}}},
          {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", nodes}}}}}}}};
}

json OwnerReferenceToJob(const json& job) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"name", kube::StringAt(job, "/metadata/name"_json_pointer)},
          {"uid", kube::StringAt(job, "/metadata/uid"_json_pointer)},
          {"controller", false},
          {"blockOwnerDeletion", true}};
}

}  // namespace canhazgpu::cli::k8s
