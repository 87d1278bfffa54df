// A StateStore that several threads may share: each Update or Read runs
// under one lock around the wrapped store, which (like a SQLite connection
// opened without SQLite's own mutex) must only ever be used by one thread at
// a time. The node daemon's slice loop and its gRPC prepare handlers share
// one this way; two threads on one bare connection corrupt its state and the
// file's shared-memory index ("disk I/O error" in every other process).
#pragma once

#include <memory>

#include "core/mutex.h"
#include "store/state_store.h"

namespace canhazgpu::store {

class LockedStateStore : public StateStore {
 public:
  explicit LockedStateStore(std::unique_ptr<StateStore> inner) : inner_(std::move(inner)) {}

  absl::Status Update(const TransactionFn& fn) override {
    MutexLock lock(mu_);
    return inner_->Update(fn);
  }
  absl::Status Read(const TransactionFn& fn) override {
    MutexLock lock(mu_);
    return inner_->Read(fn);
  }

 private:
  Mutex mu_;
  std::unique_ptr<StateStore> inner_ ABSL_PT_GUARDED_BY(mu_);  // one call at a time
};

}  // namespace canhazgpu::store
