#include "clusterview/gang_view.h"

#include <map>

#include "clusterview/node_attempt.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::clusterview {

using nlohmann::json;

namespace {

constexpr char kCompletionIndex[] = "batch.kubernetes.io/job-completion-index";
constexpr char kGangRunLabel[] = "canhazgpu.dev/run";

}  // namespace

int GangRankOf(const json& pod) {
  const json annotations = pod.value("/metadata/annotations"_json_pointer, json::object());
  int64_t rank = -1;
  if (!annotations.is_object() ||
      !ParseInt(kube::StringField(annotations, kCompletionIndex), &rank))
    return -1;
  return static_cast<int>(rank);
}

std::string GangJobOf(const json& pod) {
  const json labels = pod.value("/metadata/labels"_json_pointer, json::object());
  if (!labels.is_object() || kube::StringField(labels, kGangRunLabel).empty() ||
      GangRankOf(pod) < 0)
    return "";
  for (const json& ref : pod.value("/metadata/ownerReferences"_json_pointer, json::array())) {
    if (kube::StringField(ref, "kind") == "Job" && ref.value("controller", false))
      return kube::StringField(ref, "name");
  }
  return "";
}

std::vector<json> PendingRanks(const View& view, const std::string& ns, const std::string& job) {
  std::map<int, json> by_rank;
  for (const auto& [key, pod] : view.pods) {
    if (kube::StringAt(pod, "/metadata/namespace"_json_pointer) != ns || GangJobOf(pod) != job)
      continue;
    if (!kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty() || internal::PodDone(pod))
      continue;
    if (!kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty()) continue;
    by_rank[GangRankOf(pod)] = pod;
  }
  std::vector<json> out;
  for (auto& [rank, pod] : by_rank) out.push_back(std::move(pod));
  return out;
}

Diagnosis ExplainGang(const View& view, const std::string& job, const std::vector<json>& pending,
                      TimePoint now) {
  Diagnosis d = ExplainPod(view, pending.front(), now);
  d.object = StrCat("job ", kube::StringAt(pending.front(), "/metadata/namespace"_json_pointer),
                    "/", job, " (", pending.size(), " ranks waiting)");
  if (d.never) return d;
  std::vector<std::string> nodes;
  size_t could = 0;
  for (const NodeDiagnosis& n : d.nodes) {
    if (n.fits) {
      ++could;
      nodes.push_back(StrCat(n.node, " could hold a rank"));
      continue;
    }
    const std::string why = !n.unsuitable.empty() ? n.unsuitable
                            : !n.brief.empty()    ? n.brief
                                                  : n.phrase;
    nodes.push_back(StrCat(n.node, " ", why.empty() ? "cannot hold one" : why));
  }
  d.summary = could >= pending.size()
                  ? StrCat("all ", pending.size(),
                           " ranks fit on distinct nodes now; they are "
                           "released together at their run's next check")
                  : StrCat("needs ", pending.size(), " nodes with a rank's devices free at once; ",
                           could, could == 1 ? " has: " : " have: ", Join(nodes, ", "));
  return d;
}

}  // namespace canhazgpu::clusterview
