#include "cri/runtime_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cri/testing/short_temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cri {
namespace {

using ::testing::HasSubstr;

class RuntimeSocketTest : public ::testing::Test {
 protected:
  // A real, bound unix socket at root + `path` (nobody needs to accept:
  // discovery only looks at the file).
  void MakeSocket(std::string_view path) {
    std::string full = dir_.path() + std::string(path);
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ASSERT_LT(full.size(), sizeof(address.sun_path));
    std::memcpy(address.sun_path, full.c_str(), full.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << full;
    ::close(fd);
  }

  testing::ShortTempDir dir_;
};

TEST_F(RuntimeSocketTest, FlagWinsWhetherOrNotItExists) {
  MakeSocket("/run/containerd/containerd.sock");
  auto found = FindRuntimeSocket("unix:///somewhere/else.sock", dir_.path());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->path, "/somewhere/else.sock");
  EXPECT_EQ(found->Endpoint(), "unix:///somewhere/else.sock");
  EXPECT_EQ(found->reason, "given with --container-runtime-endpoint");
  auto plain = FindRuntimeSocket("/x/crio.sock", dir_.path());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->path, "/x/crio.sock");
}

TEST_F(RuntimeSocketTest, FlagMustBeAUnixSocketPath) {
  EXPECT_THAT(std::string(FindRuntimeSocket("tcp://1.2.3.4:5", "").status().message()),
              HasSubstr("is not a unix socket"));
  EXPECT_THAT(std::string(FindRuntimeSocket("relative.sock", "").status().message()),
              HasSubstr("is not an absolute socket path"));
}

TEST_F(RuntimeSocketTest, TakesTheFirstExistingInOrder) {
  // Made in reverse order of preference; each round removes the winner and
  // expects the next one.
  for (auto it = kWellKnownRuntimeSockets.rbegin(); it != kWellKnownRuntimeSockets.rend(); ++it) {
    MakeSocket(*it);
  }
  for (std::string_view expected : kWellKnownRuntimeSockets) {
    auto found = FindRuntimeSocket("", dir_.path());
    ASSERT_TRUE(found.ok()) << found.status();
    std::string path = dir_.path() + std::string(expected);
    EXPECT_EQ(found->path, path);
    EXPECT_THAT(found->reason, HasSubstr(std::string("found ") + path));
    std::filesystem::remove(path);
  }
}

TEST_F(RuntimeSocketTest, CrioIsFoundWithoutContainerd) {
  MakeSocket("/run/crio/crio.sock");
  MakeSocket("/run/cri-dockerd.sock");
  auto found = FindRuntimeSocket("", dir_.path());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->path, dir_.path() + "/run/crio/crio.sock");
}

TEST_F(RuntimeSocketTest, RegularFileIsNotARuntime) {
  std::filesystem::create_directories(dir_.path() + "/run/containerd");
  std::ofstream(dir_.path() + "/run/containerd/containerd.sock") << "not a socket";
  MakeSocket("/run/k3s/containerd/containerd.sock");
  auto found = FindRuntimeSocket("", dir_.path());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->path, dir_.path() + "/run/k3s/containerd/containerd.sock");
}

TEST_F(RuntimeSocketTest, NoneFoundListsWhereItLookedAndNamesTheFlag) {
  auto found = FindRuntimeSocket("", dir_.path());
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  std::string message(found.status().message());
  EXPECT_THAT(message, HasSubstr(dir_.path() + "/run/containerd/containerd.sock"));
  EXPECT_THAT(message, HasSubstr(dir_.path() + "/run/cri-dockerd.sock"));
  EXPECT_THAT(message, HasSubstr("--container-runtime-endpoint"));
}

}  // namespace
}  // namespace canhazgpu::cri
