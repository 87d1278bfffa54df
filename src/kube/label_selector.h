// metav1.LabelSelector (matchLabels and matchExpressions) against an
// object's labels, as k8s.io/apimachinery's LabelSelectorAsSelector reads
// it: every matchLabels pair and every expression must hold. Workload
// controllers pick their pods with it, and the API server checks that a
// selector selects its own template. Pure; thread-safe.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// Whether `selector` selects `labels` (an object of strings, or null). A
// null selector selects nothing; an empty one ({}) selects everything, as
// the API defines them. An expression with an unknown operator, or In and
// NotIn without values, selects nothing (the server refuses such a
// selector on write).
bool SelectsLabels(const nlohmann::json& selector, const nlohmann::json& labels);

// "app=web,tier in (a,b)": the selector in kubectl's text form, for
// messages and for status.selector of the scale subresource.
std::string LabelSelectorText(const nlohmann::json& selector);

}  // namespace canhazgpu::kube
