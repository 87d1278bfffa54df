#include "host/boot_id.h"

#include "absl/strings/ascii.h"
#include "core/file_read.h"
#include "core/strings.h"

namespace canhazgpu::host {

absl::StatusOr<std::string> ReadBootId(const std::string& path) {
  // procfs reports a size of 0 for the file, so the bound is what is read.
  absl::StatusOr<std::string> text = ReadRegularFile(path, 128, "boot id");
  if (!text.ok()) return text.status();
  const std::string id(absl::StripAsciiWhitespace(*text));
  if (id.empty()) return absl::InternalError(StrCat("boot id ", path, ": empty"));
  return id;
}

}  // namespace canhazgpu::host
