#include "store/testing/fault_vfs.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstring>

namespace canhazgpu::store::testing {
namespace {

sqlite3_vfs* base = nullptr;
sqlite3_vfs vfs;
FaultAction action = FaultAction::kNone;
int arm_at = 0;
int passed = 0;

// Counts a kill point; returns the error to fail a write with, or OK.
int KillPoint(bool is_write) {
  ++passed;
  if (arm_at == 0 || passed < arm_at) return SQLITE_OK;
  if (action == FaultAction::kExit && passed == arm_at) _exit(FaultVfs::kExitCode);
  if (action == FaultAction::kDiskFull && is_write) return SQLITE_FULL;
  return SQLITE_OK;
}

// The wrapped file: our header, then the real VFS's file object.
struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (int rc = KillPoint(true); rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = KillPoint(true); rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  KillPoint(false);
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) {
  KillPoint(false);
  return Real(f)->pMethods->xLock(Real(f), level);
}
int Unlock(sqlite3_file* f, int level) {
  KillPoint(false);
  return Real(f)->pMethods->xUnlock(Real(f), level);
}
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  KillPoint(false);
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int delete_flag) {
  return Real(f)->pMethods->xShmUnmap(Real(f), delete_flag);
}

// Version 2: the WAL-index (shm) methods; no memory-mapped I/O.
const sqlite3_io_methods kMethods = {
    .iVersion = 2,
    .xClose = Close,
    .xRead = Read,
    .xWrite = Write,
    .xTruncate = Truncate,
    .xSync = Sync,
    .xFileSize = FileSize,
    .xLock = Lock,
    .xUnlock = Unlock,
    .xCheckReservedLock = CheckReservedLock,
    .xFileControl = FileControl,
    .xSectorSize = SectorSize,
    .xDeviceCharacteristics = DeviceCharacteristics,
    .xShmMap = ShmMap,
    .xShmLock = ShmLock,
    .xShmBarrier = ShmBarrier,
    .xShmUnmap = ShmUnmap,
    .xFetch = nullptr,
    .xUnfetch = nullptr,
};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  auto* file = reinterpret_cast<FaultFile*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  std::memset(file->real, 0, static_cast<size_t>(base->szOsFile));
  int rc = base->xOpen(base, name, file->real, flags, out_flags);
  // SQLite calls xClose only when pMethods is set: leave it unset on failure.
  file->base.pMethods = file->real->pMethods != nullptr ? &kMethods : nullptr;
  return rc;
}
int Delete(sqlite3_vfs*, const char* name, int sync_dir) {
  KillPoint(false);
  return base->xDelete(base, name, sync_dir);
}
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return base->xAccess(base, name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return base->xFullPathname(base, name, n, out);
}

}  // namespace

void FaultVfs::Register() {
  if (base != nullptr) return;
  base = sqlite3_vfs_find(nullptr);
  vfs = *base;
  vfs.iVersion = 2;  // no system-call overrides through us
  vfs.zName = kName;
  vfs.pNext = nullptr;
  vfs.szOsFile = static_cast<int>(sizeof(FaultFile)) + base->szOsFile;
  vfs.xOpen = Open;
  vfs.xDelete = Delete;
  vfs.xAccess = Access;
  vfs.xFullPathname = FullPathname;
  sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
}

void FaultVfs::Arm(FaultAction how, int at) {
  action = how;
  arm_at = at;
  passed = 0;
}

int FaultVfs::KillPoints() { return passed; }

}  // namespace canhazgpu::store::testing
