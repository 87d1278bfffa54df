#include "store/reopening_state_store.h"

#include <sys/stat.h>

#include "core/strings.h"

namespace canhazgpu::store {

std::optional<ReopeningStateStore::FileId> ReopeningStateStore::Identify(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{.device = st.st_dev, .inode = st.st_ino};
}

absl::StatusOr<std::unique_ptr<ReopeningStateStore>> ReopeningStateStore::Open(
    const std::string& path, Opener open, Log log) {
  std::unique_ptr<ReopeningStateStore> store(
      new ReopeningStateStore(path, std::move(open), std::move(log)));
  // Identified before it is opened: a file replaced in between is then
  // another one at the next call, and opened again, never missed.
  const auto id = Identify(path);
  absl::StatusOr<std::unique_ptr<StateStore>> inner = store->open_(path);
  if (!inner.ok()) return inner.status();
  MutexLock lock(store->mu_);  // no other thread has it yet; the analysis cannot know that
  store->inner_ = *std::move(inner);
  if (id) store->open_file_ = *id;
  return store;
}

void ReopeningStateStore::FollowPath() {
  const auto id = Identify(path_);
  if (!id || *id == open_file_) return;
  absl::StatusOr<std::unique_ptr<StateStore>> inner = open_(path_);
  if (!inner.ok()) {
    const std::string failure = std::string(inner.status().message());
    if (failure != last_failure_) {
      log_.Warning(StrCat("state file ", path_,
                          " was replaced, and the new one cannot be opened yet (", failure,
                          "); still using the old one"));
      last_failure_ = failure;
    }
    return;
  }
  log_.Info(StrCat("state file ", path_, " was replaced (inode ", open_file_.inode, ", now ",
                   id->inode, "): using the new one"));
  inner_ = *std::move(inner);
  open_file_ = *id;
  last_failure_.clear();
  ++reopens_;
}

absl::Status ReopeningStateStore::Update(const TransactionFn& fn) {
  MutexLock lock(mu_);
  FollowPath();
  return inner_->Update(fn);
}

absl::Status ReopeningStateStore::Read(const TransactionFn& fn) {
  MutexLock lock(mu_);
  FollowPath();
  return inner_->Read(fn);
}

int ReopeningStateStore::reopens() const {
  MutexLock lock(mu_);
  return reopens_;
}

}  // namespace canhazgpu::store
