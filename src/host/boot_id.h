// The kernel's id for the current boot: state that only holds until the next
// reboot (prepared GPU claims, whose device files and processes are gone
// after one) records it and is void when it differs.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu::host {

inline constexpr char kBootIdPath[] = "/proc/sys/kernel/random/boot_id";

// The id (a UUID), without its newline.
absl::StatusOr<std::string> ReadBootId(const std::string& path = kBootIdPath);

}  // namespace canhazgpu::host
