#include "kube/stop_pipe.h"

#include <fcntl.h>
#include <unistd.h>

namespace canhazgpu::kube {

StopPipe::StopPipe() {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) == 0) {
    read_fd_ = ends[0];
    write_fd_ = ends[1];
  }
}

StopPipe::~StopPipe() {
  Stop();
  if (read_fd_ >= 0) close(read_fd_);
}

void StopPipe::Stop() {
  // The flag first: a waiter woken by the pipe finds it set.
  stopped_.store(true);
  const int fd = write_fd_.exchange(-1);
  if (fd < 0) return;
  // A closed write end alone shows as POLLHUP; the byte, never read, makes
  // the read end POLLIN too, which is what waiters ask for.
  const char byte = 1;
  [[maybe_unused]] const ssize_t written = write(fd, &byte, 1);
  close(fd);
}

}  // namespace canhazgpu::kube
