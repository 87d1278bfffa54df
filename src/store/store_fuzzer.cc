// libFuzzer target: the state store's read path on a damaged state file.
// Each input is written as the state file (the seeds are valid state files,
// so mutations are mostly near-valid SQLite: bad pages, wrong types, strange
// values); the store opens it and everything a view reads is read, and a
// write transaction is tried. Any error is fine; a crash, a sanitizer report,
// a leak or a hang is a bug.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status_macros.h"
#include "store/sqlite_state_store.h"

namespace {

using canhazgpu::TimePoint;
using canhazgpu::store::SqliteStateStore;
using canhazgpu::store::StateTransaction;

const std::string& Path() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/store_fuzzer.XXXXXX";
    return std::string(mkdtemp(tmpl)) + "/state.db";
  }();
  return path;
}

bool WriteInput(const uint8_t* data, size_t size) {
  for (const char* suffix : {"-wal", "-shm"}) unlink((Path() + suffix).c_str());
  int fd = open(Path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, data, size) == static_cast<ssize_t>(size);
  close(fd);
  return ok;
}

absl::Status ReadEverything(StateTransaction& t) {
  RETURN_IF_ERROR(t.GetPool().status());
  RETURN_IF_ERROR(t.ListReservations().status());
  RETURN_IF_ERROR(t.ListQueue().status());
  RETURN_IF_ERROR(t.HistorySince(TimePoint()).status());
  RETURN_IF_ERROR(t.UsageSamplesSince(TimePoint()).status());
  RETURN_IF_ERROR(t.LastUsageSample().status());
  for (int gpu = 0; gpu < 4; ++gpu) {
    RETURN_IF_ERROR(t.LastReleased(gpu).status());
    RETURN_IF_ERROR(t.LastUsedBy(1000, gpu).status());
  }
  return absl::OkStatus();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!WriteInput(data, size)) return 0;
  // A short busy timeout: nothing else uses the file.
  auto store = SqliteStateStore::Open(Path(), {.busy_timeout = std::chrono::milliseconds(10)});
  if (!store.ok()) return 0;
  (*store)->Read(ReadEverything).IgnoreError();
  // Views write too (reaping, usage samples): a write on the damaged file.
  (*store)
      ->Update([](StateTransaction& t) -> absl::Status {
        RETURN_IF_ERROR(ReadEverything(t));
        ASSIGN_OR_RETURN(auto reservations, t.ListReservations());
        for (const auto& r : reservations) RETURN_IF_ERROR(t.DeleteReservation(r.gpu, r.share));
        return t.AppendUsageSamples({{.gpu = 0, .at = TimePoint(), .memory_used_bytes = 1}},
                                    TimePoint());
      })
      .IgnoreError();
  return 0;
}
