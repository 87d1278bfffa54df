// A one-shot stop request that wakes a thread blocked in poll(2) at once,
// not at its next look at a flag: Stop() writes a byte to a pipe that
// nobody reads and closes the write end, which makes the read end readable
// for every poller and for good. A watch or log stream given one
// (WatchOptions::stop) polls fd() with its connection, so Informer::Stop()
// ends a quiet watch as soon as it is called. Stop() is thread-safe and async-signal-safe (an
// atomic, write(2) and close(2)); fd() must outlive every poll on it.
#pragma once

#include <atomic>

namespace canhazgpu::kube {

class StopPipe {
 public:
  // When the pipe cannot be made (out of descriptors), fd() is -1 and
  // waiters fall back to looking at stopped() every tenth of a second.
  StopPipe();
  ~StopPipe();
  StopPipe(const StopPipe&) = delete;
  StopPipe& operator=(const StopPipe&) = delete;

  void Stop();
  bool stopped() const { return stopped_.load(); }
  // Readable once stopped; -1 when there is no pipe.
  int fd() const { return read_fd_; }

 private:
  std::atomic<bool> stopped_{false};
  int read_fd_ = -1;
  std::atomic<int> write_fd_{-1};
};

}  // namespace canhazgpu::kube
