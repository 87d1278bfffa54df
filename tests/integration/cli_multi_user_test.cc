// Several local users on one host (tests/integration/multi_user.h): what one
// user does must not harm another's reservations.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "integration/multi_user.h"
#include "integration/web_fixture.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CliMultiUserTest : public MultiUserTest {
 protected:
  void SetUp() override {
    MultiUserTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "4"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }

  json Status() {
    CliResult r = AsRoot({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
};

TEST_F(CliMultiUserTest, EachUserReservesUnderTheirOwnName) {
  CliResult alice = AsAlice({"reserve", "-G", "1"});
  ASSERT_EQ(alice.exit_code, 0) << alice.err;
  CliResult bob = AsBob({"reserve", "-G", "2"});
  ASSERT_EQ(bob.exit_code, 0) << bob.err;
  json status = Status();
  EXPECT_EQ(status[1]["user"], "chgtest_alice");
  EXPECT_EQ(status[2]["user"], "chgtest_bob");
  CliResult steal = AsBob({"release", "-G", "1"});
  EXPECT_EQ(steal.exit_code, 1);
  EXPECT_THAT(steal.err, HasSubstr("gpu 1 is reserved by chgtest_alice"));
}

// Issue 14: `admin --force` by any user ended everyone's reservations.
TEST_F(CliMultiUserTest, AdminForceByAnotherUserIsRefusedAndChangesNothing) {
  ASSERT_EQ(AsAlice({"reserve", "-G", "1"}).exit_code, 0);
  const std::string before = ReadFile(host_.state());
  for (auto args : std::vector<std::vector<std::string>>{
           {"admin", "--provider", "fake", "--force"},
           {"admin", "--provider", "fake", "--gpus", "2", "--force"},
           {"admin", "--provider", "fake"}}) {
    CliResult bob = AsBob(args);
    EXPECT_EQ(bob.exit_code, 1);
    EXPECT_EQ(bob.err, "canhazgpu: state file " + host_.state() +
                           " belongs to root: only its owner can initialize or reinitialize the "
                           "pool\n");
    EXPECT_EQ(bob.out, "");
  }
  json status = Status();
  ASSERT_EQ(status.size(), 4u);
  EXPECT_EQ(status[1]["user"], "chgtest_alice") << "alice keeps her GPU";
  CliResult root = AsRoot({"admin", "--provider", "fake", "--force"});
  EXPECT_EQ(root.exit_code, 0) << root.err;
  EXPECT_THAT(root.out, HasSubstr("Released 1 reservation(s)"));
}

// A user who creates the state file before root's `admin` would own the pool.
class CliStateFileSetupTest : public MultiUserTest {
 protected:
  void SetUp() override {
    MultiUserTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The safe directory: root's, sticky, world-writable (as admin makes it).
    dir_ = host_.dir() + "/state";
    ASSERT_EQ(mkdir(dir_.c_str(), 01777), 0);
    chmod(dir_.c_str(), 01777);
  }

  // Nothing but what the test put there.
  std::vector<std::string> Entries() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(CliStateFileSetupTest, RootsAdminRefusesAStateFileAnotherUserCreated) {
  ASSERT_EQ(RunProgramAs(alice_, {"touch", host_.state()}).exit_code, 0);
  CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "2"});
  EXPECT_EQ(admin.exit_code, 1);
  EXPECT_THAT(admin.err, HasSubstr("belongs to chgtest_alice, not root"));
  EXPECT_EQ(ReadFile(host_.state()), "") << "left as it was";
  EXPECT_THAT(Entries(), ElementsAre("state.db")) << "no fake host, no -wal or -shm";
  // Root removes it and runs admin again: root owns the pool.
  std::filesystem::remove(host_.state());
  ASSERT_EQ(AsRoot({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  struct stat st;
  ASSERT_EQ(stat(host_.state().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(AsAlice({"admin", "--provider", "fake", "--force"}).exit_code, 1);
}

TEST_F(CliStateFileSetupTest, RootsAdminRefusesAPlantedWal) {
  ASSERT_EQ(RunProgramAs(alice_, {"touch", host_.state() + "-wal"}).exit_code, 0);
  CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "2"});
  EXPECT_EQ(admin.exit_code, 1);
  EXPECT_THAT(admin.err, HasSubstr("state.db-wal belongs to chgtest_alice"));
  EXPECT_THAT(Entries(), ElementsAre("state.db-wal")) << "nothing created";
}

// Issue 14: a user pointed state.db at a root-owned file; root's admin made
// it a database.
TEST_F(CliStateFileSetupTest, SymbolicLinkPlantedByAUserIsNotFollowed) {
  const std::string victim = host_.dir() + "/victim.conf";
  WriteFile(victim, "root's configuration\n");
  ASSERT_EQ(RunProgramAs(alice_, {"ln", "-s", victim, host_.state()}).exit_code, 0);
  for (auto args : std::vector<std::vector<std::string>>{
           {"admin", "--provider", "fake", "--gpus", "2"}, {"status"}, {"reserve"}}) {
    CliResult r = AsRoot(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err, "canhazgpu: state file " + host_.state() +
                         " is a symbolic link; refusing to open it\n");
  }
  EXPECT_EQ(ReadFile(victim), "root's configuration\n");
  EXPECT_THAT(Entries(), ElementsAre("state.db"));
}

// Issue 14: a state file that cannot be written made `status` fail.
TEST_F(CliMultiUserTest, ViewsOfAnUnwritableStateFileWorkReadOnly) {
  ASSERT_EQ(AsAlice({"reserve", "-G", "1", "--duration", "1h"}).exit_code, 0);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    ASSERT_EQ(chmod((host_.state() + suffix).c_str(), 0444), 0);
  }
  CliResult status = AsBob({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out)[1]["user"], "chgtest_alice");
  EXPECT_EQ(status.err, "canhazgpu: warning: cannot write state file " + host_.state() +
                            ": the file or its file system is read-only for this user; "
                            "showing the state read-only\n");
  CliResult queue = AsBob({"queue"});
  EXPECT_EQ(queue.exit_code, 0) << queue.err;
  CliResult report = AsBob({"report"});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  CliResult reserve = AsBob({"reserve", "-G", "2"});
  EXPECT_EQ(reserve.exit_code, 1);
  EXPECT_THAT(reserve.err, HasSubstr("cannot write state file"));
  EXPECT_EQ(std::count(reserve.err.begin(), reserve.err.end(), '\n'), 1) << "one line";
}

// Issue 14: with a state file it could not write, the dashboard answered 503.
class WebReadOnlyTest : public WebTest {};

TEST_F(WebReadOnlyTest, DashboardOfAnUnwritableStateFileAnswersReadOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "multi-user test: needs root to act as another user";
  std::string error;
  std::optional<TestUser> bob = EnsureTestUser("chgtest_bob", &error);
  ASSERT_TRUE(bob) << error;
  // The fixture's server runs as root; this one runs as bob, who may read
  // the state file but not write it.
  kill(server_pid_, SIGTERM);
  ExitCodeOf(server_pid_);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    ASSERT_EQ(chmod((host_.state() + suffix).c_str(), 0444), 0);
  }
  const std::filesystem::path built = std::filesystem::path(CANHAZGPU_BINARY).parent_path();
  for (const char* name : {"canhazgpu", "canhazgpu-web"}) {
    std::filesystem::copy_file(built / name, host_.dir() + "/" + name,
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string out_path = host_.dir() + "/web-bob.out";
  WriteFile(out_path, "");
  chmod(out_path.c_str(), 0666);
  server_pid_ =
      SpawnProgram({"setpriv", "--reuid=" + std::to_string(bob->uid),
                    "--regid=" + std::to_string(bob->gid), "--clear-groups", "--", "/bin/sh", "-c",
                    "exec \"$0\" web --port 0 > \"$1\"", host_.dir() + "/canhazgpu", out_path},
                   host_.env());
  ASSERT_TRUE(Eventually([&] { return ReadFile(out_path).find("http://") != std::string::npos; }));
  std::string out = ReadFile(out_path);
  port_ = std::stoi(out.substr(out.find(':', out.find("http://") + 7) + 1));
  HttpReply status = Get("/api/status");
  ASSERT_EQ(status.code, 200) << status.body;
  json body = json::parse(status.body);
  EXPECT_EQ(body["gpus"].size(), 4u);
  EXPECT_THAT(body.value("state_warning", ""), HasSubstr("cannot write state file"));
  EXPECT_EQ(Get("/api/queue").code, 200);
  EXPECT_EQ(Get("/metrics").code, 200);
}

// Issue 14: one user's note that is not UTF-8, or that holds terminal escape
// sequences, made every other user's `status --json` abort and reached their
// terminals through `status` and `queue`.
TEST_F(CliMultiUserTest, AnotherUsersHostileNotesReachNobodyRawAndBreakNoView) {
  ASSERT_EQ(AsAlice({"reserve", "-G", "0", "--note", "caf\xe9"}).exit_code, 0);
  ASSERT_EQ(AsAlice({"reserve", "-G", "1", "--note", "\x1b]0;pwned\a\x1b[2J"}).exit_code, 0);
  for (auto args : std::vector<std::vector<std::string>>{
           {"status"}, {"status", "--json"}, {"queue"}, {"queue", "--json"}, {"report"}}) {
    CliResult bob = AsBob(args);
    EXPECT_EQ(bob.exit_code, 0) << args[0] << ": " << bob.err;
    EXPECT_EQ(bob.out.find('\x1b'), std::string::npos) << args[0] << " printed a raw ESC";
    EXPECT_EQ(bob.out.find('\a'), std::string::npos) << args[0] << " printed a raw BEL";
  }
  CliResult table = AsBob({"status"});
  EXPECT_THAT(table.out, HasSubstr("caf\\xe9"));
  EXPECT_THAT(table.out, HasSubstr("\\e]0;pwned\\a\\e[2J"));
  CliResult bob_json = AsBob({"status", "--json"});
  ASSERT_TRUE(json::accept(bob_json.out)) << bob_json.out;
  json status = json::parse(bob_json.out);
  EXPECT_EQ(status[0]["note"], "caf\\xe9");
  EXPECT_EQ(status[1]["note"], "\x1b]0;pwned\a\x1b[2J") << "JSON keeps the text, escaped as JSON";
}

// Issue 14: alice's job starts a daemon that leaves its process group
// (setsid) and her wrapper is SIGKILLed. The GPU stays hers while the daemon
// lives: bob is not given it, cannot release it, and cannot --force it.
TEST_F(CliMultiUserTest, AnEscapedDaemonOfAlicesJobKeepsItsGpuFromBob) {
  const std::string dir = host_.dir() + "/alice";
  std::filesystem::create_directory(dir);
  ASSERT_EQ(chown(dir.c_str(), alice_.uid, alice_.gid), 0);
  const std::string pid_file = dir + "/daemon";
  int wrapper = SpawnAsAlice({"run", "-G", "0", "--", "sh", "-c",
                              "setsid sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file +
                                  ".tmp " + pid_file + "; exec sleep 60' &"});
  int daemon = 0;
  ASSERT_TRUE(Eventually([&] {
    json gpu = Status()[0];
    if (!gpu.contains("job_pids") || !std::filesystem::exists(pid_file)) return false;
    daemon = std::stoi(ReadFile(pid_file));
    return gpu["job_pids"] == json::array({daemon});
  })) << Status().dump();
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);

  json gpu = Status()[0];
  EXPECT_EQ(gpu["status"], "IN_USE") << gpu.dump();
  EXPECT_EQ(gpu["user"], "chgtest_alice");
  CliResult take = AsBob({"reserve", "-G", "0", "--nonblock"});
  EXPECT_EQ(take.exit_code, 3) << take.err;
  EXPECT_EQ(AsBob({"reserve", "-G", "0", "--force", "--nonblock"}).exit_code, 3);
  CliResult release = AsBob({"release", "-G", "0"});
  EXPECT_EQ(release.exit_code, 1);
  EXPECT_THAT(release.err, HasSubstr("reserved by chgtest_alice"));
  EXPECT_EQ(Status()[0]["user"], "chgtest_alice");

  kill(daemon, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
  EXPECT_EQ(AsBob({"reserve", "-G", "0", "--nonblock"}).exit_code, 0);
}

// Issue 14: `reserve --force` let any user take a GPU on which another
// user's process runs. It overrides only the caller's own unreserved use.
TEST_F(CliMultiUserTest, ReserveForceOverridesOnlyTheCallersOwnUnreservedUse) {
  int sleeper = SpawnProgramAs(alice_, {"sleep", "60"});
  ASSERT_TRUE(Eventually([&] {
    struct stat st {};
    return stat(("/proc/" + std::to_string(sleeper)).c_str(), &st) == 0 &&
           st.st_uid == alice_.uid &&
           ReadFile("/proc/" + std::to_string(sleeper) + "/cmdline").starts_with("sleep");
  }));
  WriteFile(host_.fake_host(), R"({"gpus": [
      {"name": "A", "uuid": "GPU-0", "memory_total_mib": 40960,
       "processes": [{"pid": )" + std::to_string(sleeper) +
                                   R"(, "used_memory_mib": 4096}]},
      {"name": "A", "uuid": "GPU-1", "memory_total_mib": 40960}]})");
  json gpu = Status()[0];
  ASSERT_EQ(gpu["status"], "UNRESERVED") << gpu.dump();
  EXPECT_EQ(gpu["unreserved_users"][0], "chgtest_alice");

  CliResult bob = AsBob({"reserve", "-G", "0", "--force", "--nonblock"});
  EXPECT_NE(bob.exit_code, 0);
  EXPECT_THAT(bob.err, HasSubstr("chgtest_alice"));
  EXPECT_EQ(Status()[0]["status"], "UNRESERVED") << "bob's refused --force changed nothing";
  CliResult alice = AsAlice({"reserve", "-G", "0", "--force"});
  EXPECT_EQ(alice.exit_code, 0) << alice.err;
  EXPECT_EQ(Status()[0]["user"], "chgtest_alice");

  kill(sleeper, SIGKILL);
  ExitCodeOf(sleeper);
}

}  // namespace
}  // namespace canhazgpu::testing
