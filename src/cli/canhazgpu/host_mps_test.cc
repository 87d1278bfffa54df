// A user's MPS directory on a host and which shares a recovery keeps. The
// daemons themselves run in the integration tests
// (tests/integration/cli_share_isolation_test.cc).
#include "cli/canhazgpu/host_mps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "host/linux_process_table.h"

namespace canhazgpu::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class HostMpsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hmpsXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    tmp_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  mode_t Mode(const std::string& path) {
    struct stat st;
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }

  std::string tmp_;
};

TEST_F(HostMpsDirTest, TheDirectoryIsNamedAfterTheUid) {
  EXPECT_EQ(UserMpsDir("/tmp", 1000), "/tmp/canhazgpu-mps-1000");
  EXPECT_EQ(UserMpsDir("/tmp/", 0), "/tmp/canhazgpu-mps-0");
}

TEST_F(HostMpsDirTest, CreatesAPrivateDirectoryAndTightensOneOfOurs) {
  const std::string dir = UserMpsDir(tmp_, geteuid());
  const mode_t old_umask = umask(0);
  absl::Status made = PrepareUserMpsDir(dir, geteuid());
  umask(old_umask);
  ASSERT_TRUE(made.ok()) << made;
  EXPECT_EQ(Mode(dir), 0700u) << "not the umask's choice";
  chmod(dir.c_str(), 0755);
  ASSERT_TRUE(PrepareUserMpsDir(dir, geteuid()).ok());
  EXPECT_EQ(Mode(dir), 0700u);
}

TEST_F(HostMpsDirTest, RefusesASymlinkAFileAndSomeoneElsesDirectory) {
  const std::string target = tmp_ + "/elsewhere";
  std::filesystem::create_directory(target);
  chmod(target.c_str(), 0755);
  const std::string link = tmp_ + "/canhazgpu-mps-1";
  std::filesystem::create_directory_symlink(target, link);
  absl::Status refused = PrepareUserMpsDir(link, geteuid());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("is a symlink"));
  EXPECT_EQ(Mode(target), 0755u) << "nothing changed through the link";

  const std::string file = tmp_ + "/canhazgpu-mps-2";
  std::ofstream(file) << "x";
  EXPECT_THAT(PrepareUserMpsDir(file, geteuid()).message(), HasSubstr("is not a directory"));

  // Someone else's: the owner the test asks for is not the directory's.
  const std::string theirs = tmp_ + "/canhazgpu-mps-3";
  std::filesystem::create_directory(theirs);
  chmod(theirs.c_str(), 0755);
  absl::Status foreign = PrepareUserMpsDir(theirs, geteuid() + 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(foreign)) << foreign;
  EXPECT_THAT(foreign.message(), HasSubstr("belongs to uid"));
  EXPECT_EQ(Mode(theirs), 0755u) << "not ours to change";
}

TEST_F(HostMpsDirTest, OpenWithoutCreateFindsNothingToRecover) {
  host::LinuxProcessTable processes;
  alloc::Machine machine{RealClock(), processes};
  HostSharing sharing{.mps_dir = tmp_};
  absl::StatusOr<std::unique_ptr<HostMps>> none = HostMps::Open(sharing, 1234, machine, false);
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_FALSE(std::filesystem::exists(UserMpsDir(tmp_, 1234))) << "nothing made";
  absl::StatusOr<std::unique_ptr<HostMps>> made = HostMps::Open(sharing, 1234, machine, true);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)->dir(), UserMpsDir(tmp_, 1234));
}

TEST(SurvivingSharesTest, KeepsTheUsersLiveRunSharesThatAreOnDisk) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  auto share = [&](const std::string& id, uint32_t uid, ReservationKind kind) {
    return Reservation{.gpu = 0,
                       .memory = 10 * kGiB,
                       .share = id,
                       .shareable = 79 * kGiB,
                       .uid = uid,
                       .kind = kind};
  };
  const std::vector<Reservation> store = {
      share("live", 1000, ReservationKind::kRun),
      share("not-on-disk", 1000, ReservationKind::kRun),  // acquiring: not ours to start
      share("bobs", 1001, ReservationKind::kRun),
      share("manual", 1000, ReservationKind::kManual),
      Reservation{.gpu = 1, .uid = 1000, .kind = ReservationKind::kRun},  // whole GPU
  };
  const std::map<std::string, std::vector<std::string>> on_disk = {{"GPU-a", {"gone", "live"}},
                                                                   {"GPU-b", {"bobs", "manual"}}};
  std::vector<mps::MpsShare> live = SurvivingShares(store, 1000, on_disk);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].gpu_uuid, "GPU-a");
  EXPECT_EQ(live[0].share_id, "live");
  EXPECT_EQ(live[0].share_bytes, 10 * kGiB);
  EXPECT_EQ(live[0].shareable_bytes, 79 * kGiB);
  EXPECT_THAT(SurvivingShares(store, 1000, {}), IsEmpty());
}

}  // namespace
}  // namespace canhazgpu::cli
