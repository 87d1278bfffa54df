// The scheduler stand-in: places each pending pod (no spec.nodeName, not
// being deleted, for our scheduler name) with PlacePod(), oldest first, and
// carries the decision out as kube-scheduler's DynamicResources plugin and
// binder do: the delete-protection finalizer on each claim it allocates,
// then status.allocation and the pod in status.reservedFor (one
// resourceVersion-checked status update per claim), then a Binding to
// pods/<name>/binding (Client::BindPod) and a Scheduled event. A pod that
// cannot be placed gets
// PodScheduled False, reason Unschedulable, with PlacePod's message, and a
// FailedScheduling warning event — written only when the message changes.
// A pod with scheduling gates (spec.schedulingGates) is not placed: it gets
// PodScheduled False, reason SchedulingGated, and no event, as
// kube-scheduler's PreEnqueue does, until its gates are removed.
// A pod whose spec.schedulingGroup names a PodGroup (the GenericWorkload
// gate, kubesim/pod_groups.h) waits, with no condition, until that
// PodGroup exists; under a `gang` policy also until minCount of its pods
// exist (bound ones count). Then the group's pending pods are placed all
// at once or not at all (clusterview::PlaceGang): each gets Unschedulable
// with the first pod that did not fit when they do not, and none is bound.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "clusterview/view.h"
#include "core/clock.h"
#include "kube/client.h"
#include "kube/events.h"
#include "simcluster/overlay.h"

namespace canhazgpu::simcluster {

// PodGroups by "namespace/name".
using PodGroups = std::map<std::string, nlohmann::json>;

class Scheduler {
 public:
  Scheduler(kube::Client& client, Overlay& pods, Overlay& claims, const Clock& clock,
            std::string scheduler_name, std::function<void(const std::string&)> log);

  // Tries every pending pod once, updating `view` with what it wrote.
  void ScheduleAll(clusterview::View& view, const PodGroups& pod_groups = {});

 private:
  void Schedule(clusterview::View& view, const nlohmann::json& pod);
  // The pending pods (`keys`, oldest first) of one gang PodGroup: all
  // bound, or none.
  void ScheduleGang(clusterview::View& view, const nlohmann::json& group,
                    const std::vector<std::string>& keys);
  // Finalizer, allocation and reservation for one claim; false when a
  // write failed.
  bool Commit(clusterview::View& view, const nlohmann::json& pod, const std::string& key,
              const nlohmann::json& allocation);
  void Bind(clusterview::View& view, const nlohmann::json& pod, const std::string& node);
  // PodScheduled=False with `reason` ("Unschedulable", "SchedulingGated")
  // and `message`, once; a FailedScheduling event for Unschedulable.
  void ReportNotScheduled(clusterview::View& view, const nlohmann::json& pod,
                          const std::string& reason, const std::string& message);

  kube::Client& client_;
  Overlay& pods_;
  Overlay& claims_;
  const Clock& clock_;
  const std::string scheduler_name_;
  std::function<void(const std::string&)> log_;
  kube::EventRecorder events_;
};

}  // namespace canhazgpu::simcluster
