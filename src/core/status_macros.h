// Return-early helpers for absl::Status and absl::StatusOr, named as in newer
// Abseil releases (absl/status/status_macros.h), which our Abseil (20220623)
// lacks. Header-only; no state.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CANHAZGPU_CONCAT_INNER(a, b) a##b
#define CANHAZGPU_CONCAT(a, b) CANHAZGPU_CONCAT_INNER(a, b)

// RETURN_IF_ERROR(expr): returns the status of `expr` when it is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status canhazgpu_status_ = (expr); \
    if (!canhazgpu_status_.ok()) {             \
      return canhazgpu_status_;                \
    }                                          \
  } while (false)

// ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; returns its
// status on error, otherwise moves the value into `lhs` (which may declare).
#define ASSIGN_OR_RETURN(lhs, expr) \
  CANHAZGPU_ASSIGN_OR_RETURN_IMPL(CANHAZGPU_CONCAT(canhazgpu_statusor_, __LINE__), lhs, expr)

#define CANHAZGPU_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) {                                      \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = std::move(statusor).value()
