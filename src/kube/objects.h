// Every typed Kubernetes object of canhazgpu::kube, in one include: the
// shared metadata (objects_meta.h), resource.k8s.io/v1 (objects_resource.h),
// core/v1 plus coordination.k8s.io/v1 (objects_core.h), and our own
// NodeGpuStatus (objects_gpu_status.h; the cache kinds are cacheplan/'s). Each is read
// with T::FromJson and written with ToJson, keeping the fields it does not
// model (json_object.h). A client call still takes and returns JSON:
//
//   ASSIGN_OR_RETURN(nlohmann::json json, client.Get(kResourceClaims, ns, name));
//   ASSIGN_OR_RETURN(ResourceClaim claim, ResourceClaim::FromJson(json));
//   claim.status.devices.push_back(...);
//   RETURN_IF_ERROR(client.UpdateStatus(kResourceClaims, ns, claim.ToJson()).status());
#pragma once

#include "kube/json_object.h"
#include "kube/objects_core.h"
#include "kube/objects_gpu_status.h"
#include "kube/objects_meta.h"
#include "kube/objects_resource.h"
