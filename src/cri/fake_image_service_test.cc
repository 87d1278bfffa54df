// The emulator's own promises: digests, lookups by id, list filters, and
// the standalone process the simulated cluster starts.
#include "cri/testing/fake_image_service.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "cri/image_client.h"
#include "cri/testing/short_temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

extern char** environ;

namespace canhazgpu::cri::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(FakeDigestTest, DeterministicWellFormedAndDistinct) {
  EXPECT_EQ(FakeDigest("nginx:1.27"), FakeDigest("nginx:1.27"));
  EXPECT_THAT(FakeDigest("nginx:1.27"), MatchesRegex("sha256:[0-9a-f]{64}"));
  std::set<std::string> digests;
  for (const char* ref : {"nginx:1.27", "nginx:1.28", "nginx", "ghcr.io/a/b:c", ""}) {
    digests.insert(FakeDigest(ref));
  }
  EXPECT_EQ(digests.size(), 5u);
}

TEST(FakeImageServiceTest, RepoDigestKeepsTheRegistryPort) {
  ShortTempDir dir;
  auto fake = FakeImageService::Start(dir.path() + "/cri.sock");
  ASSERT_TRUE(fake.ok()) << fake.status();
  (*fake)->AddPresent("registry.local:5000/team/model:v2", 1);
  ImageClient client(dir.path() + "/cri.sock");
  auto status = client.Status("registry.local:5000/team/model:v2");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(status->has_value());
  EXPECT_EQ((*status)->repo_digests.at(0),
            "registry.local:5000/team/model@" + FakeDigest("registry.local:5000/team/model:v2"));
}

TEST(FakeImageServiceTest, StaleSocketFromAnEarlierRunIsReplaced) {
  ShortTempDir dir;
  std::string socket = dir.path() + "/cri.sock";
  {
    auto first = FakeImageService::Start(socket);
    ASSERT_TRUE(first.ok()) << first.status();
  }
  auto second = FakeImageService::Start(socket);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(ImageClient(socket).List().ok());
}

// The emulator as a process: started with flags, served, stopped by
// SIGTERM, as the simulated cluster runs it.
TEST(FakeImageServiceProcessTest, ServesItsFlagsUntilTerminated) {
  ShortTempDir dir;
  std::string socket = dir.path() + "/containerd.sock";
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<std::string> args = {CRI_FAKE_IMAGE_SERVICE,
                                   "--socket",
                                   socket,
                                   "--image",
                                   "ghcr.io/acme/app:1=500",
                                   "--present",
                                   "busybox:1.36=4000",
                                   "--fail",
                                   "ghcr.io/acme/bad:1=quota exceeded: a=b"};
  std::vector<char*> argv;
  for (std::string& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, CRI_FAKE_IMAGE_SERVICE, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);

  // Its one line says it accepts calls; reading it is the wait.
  FILE* from_child = ::fdopen(out[0], "r");
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof(line), from_child), nullptr);
  EXPECT_EQ(std::string(line), "serving unix://" + socket + "\n");

  ImageClient client(socket);
  auto present = client.Status("busybox:1.36");
  ASSERT_TRUE(present.ok()) << present.status();
  ASSERT_TRUE(present->has_value());
  EXPECT_EQ((*present)->size, 4000u);
  auto pulled = client.Pull("ghcr.io/acme/app:1");
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(*pulled, FakeDigest("ghcr.io/acme/app:1"));
  auto failed = client.Pull("ghcr.io/acme/bad:1");
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr(": quota exceeded: a=b"));

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(std::filesystem::exists(socket));
  std::fclose(from_child);
}

TEST(FakeImageServiceProcessTest, BadFlagsAreUsageErrors) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"--image", "x=1"},
                                             {"--socket", "/tmp/x.sock", "--image", "nosize"},
                                             {"--socket", "/tmp/x.sock", "--present", "a=lots"},
                                             {"--bogus"}}) {
    args.insert(args.begin(), CRI_FAKE_IMAGE_SERVICE);
    std::vector<char*> argv;
    for (std::string& arg : args) {
      argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, CRI_FAKE_IMAGE_SERVICE, &actions, nullptr, argv.data(), environ),
              0);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << args.at(1);
  }
}

}  // namespace
}  // namespace canhazgpu::cri::testing
