#include "driver/temp_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::driver {

std::optional<std::string> TempFileTarget(std::string_view name) {
  constexpr std::string_view kInfix = ".tmp.";
  if (name.starts_with('.')) {
    // ".<name>.tmp.<random>": the random part may hold anything.
    const size_t at = name.find(kInfix, 1);
    if (at == std::string_view::npos || at == 1 || at + kInfix.size() == name.size()) {
      return std::nullopt;
    }
    return std::string(name.substr(1, at - 1));
  }
  // "<name>.tmp.<pid>".
  const size_t at = name.rfind(kInfix);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view pid = name.substr(at + kInfix.size());
  if (pid.empty() ||
      !std::all_of(pid.begin(), pid.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return std::nullopt;
  }
  return std::string(name.substr(0, at));
}

std::vector<std::string> SweepTempFiles(const std::string& dir,
                                        const std::function<bool(std::string_view)>& ours) {
  std::vector<std::string> problems;
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) {
    if (errno != ENOENT) {
      problems.push_back(StrCat("cannot list ", dir, ": ", std::strerror(errno)));
    }
    return problems;
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    const std::optional<std::string> target = TempFileTarget(name);
    if (!target || !ours(*target)) continue;
    const std::string path = StrCat(dir, "/", name);
    struct stat info;
    // Not followed: a link or directory of that name is not a write of ours.
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      problems.push_back(StrCat("cannot remove the leftover ", path, ": ", std::strerror(errno)));
    }
  }
  ::closedir(listing);
  return problems;
}

}  // namespace canhazgpu::driver
