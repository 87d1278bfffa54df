// Must not compile with our warning flags under clang: Peek reads a member
// guarded by a mutex without holding it. core/CMakeLists.txt runs the
// compiler on this file and expects that error, proving -Wthread-safety is on.
#include "core/mutex.h"

namespace canhazgpu {

class Counter {
 public:
  int Get() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return count_;
  }
  int Peek() { return count_; }

 private:
  Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace canhazgpu
