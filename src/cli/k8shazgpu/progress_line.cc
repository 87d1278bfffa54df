#include "cli/k8shazgpu/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include "core/strings.h"

namespace canhazgpu::cli::k8s {

void ProgressLine::Show(const std::string& line) {
  if (line == last_) return;
  last_ = line;
  if (!tty_) {
    std::fprintf(stderr, "k8shazgpu: %s\n", line.c_str());
    return;
  }
  winsize size = {};
  const size_t width =
      ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col - 1 : 119;
  std::fprintf(stderr, "\r\033[K%s", std::string(Utf8Prefix(line, width)).c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::Clear() {
  if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
  last_.clear();
}

}  // namespace canhazgpu::cli::k8s
