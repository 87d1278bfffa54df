// Reads a clusterview::View from the API server the way the cluster CLI
// needs it for one answer: one list (all pages, all namespaces) each of
// nodes, ResourceSlices, ResourceClaims, ResourceClaimTemplates,
// DeviceClasses, pods and NodeGpuStatuses. The lists are not one snapshot:
// an object may change between two of them, which a status or an
// explanation shown once can live with. Not thread-safe beyond the client's
// own guarantees (the client may be shared; the call blocks).
#pragma once

#include "absl/status/statusor.h"
#include "clusterview/view.h"
#include "kube/client.h"

namespace canhazgpu::clusterview {

// The cluster now. A cluster without our NodeGpuStatus CRD (a list that
// answers NotFound) has no NodeGpuStatuses, which is no error: nodes of
// other drivers are read from their slices and claims alone. Any other
// failure is one line naming what could not be listed ("cannot list
// resourceclaims.resource.k8s.io: Forbidden: ...").
absl::StatusOr<View> LoadView(kube::Client& client);

}  // namespace canhazgpu::clusterview
