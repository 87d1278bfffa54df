#include "driver/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/checkpoint_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Checkpoint Load(const std::string& boot = "boot-1") {
    absl::StatusOr<Checkpoint> c = Checkpoint::Load(dir_, boot, clock_, &note_, &moved_to_);
    EXPECT_TRUE(c.ok()) << c.status();
    return *std::move(c);
  }
  std::string File() { return dir_ + "/checkpoint.json"; }
  std::string Text() {
    std::ifstream in(File());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void Write(const std::string& text) { std::ofstream(File()) << text; }
  std::vector<std::string> Aside() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().starts_with("checkpoint.json.corrupt-")) {
        names.push_back(e.path().filename());
      }
    }
    return names;
  }

  std::string dir_;
  std::string note_;
  std::string moved_to_;
  host::FakeClock clock_;
};

CheckpointClaim Claim(const std::string& uid, PrepareState state) {
  CheckpointClaim c{.uid = uid, .namespace_name = "ml", .name = "claim-" + uid, .state = state};
  if (state == PrepareState::kCompleted) {
    c.devices.push_back({.requests = {"gpu"},
                         .pool = "node-a",
                         .device = "gpu-3",
                         .gpu = 3,
                         .cdi_device_ids = {"k8s.gpu.canhazgpu.dev/claim=" + uid + "-gpu-3"}});
  }
  return c;
}

TEST_F(CheckpointTest, ClaimsGoThroughBothPhasesAndSurviveARestart) {
  Checkpoint c = Load();
  EXPECT_TRUE(c.claims().empty());
  EXPECT_EQ(note_, "");
  ASSERT_TRUE(c.Put(Claim("u1", PrepareState::kStarted)).ok());
  // A crash here leaves the first phase on disk: the restart sees it.
  EXPECT_EQ(Load().Find("u1")->state, PrepareState::kStarted);
  ASSERT_TRUE(c.Put(Claim("u1", PrepareState::kCompleted)).ok());
  ASSERT_TRUE(c.Put(Claim("u2", PrepareState::kStarted)).ok());

  Checkpoint again = Load();
  EXPECT_EQ(note_, "");
  EXPECT_EQ(moved_to_, "");
  ASSERT_EQ(again.claims().size(), 2u);
  const CheckpointClaim* u1 = again.Find("u1");
  ASSERT_NE(u1, nullptr);
  EXPECT_EQ(u1->state, PrepareState::kCompleted);
  EXPECT_EQ(u1->namespace_name, "ml");
  ASSERT_EQ(u1->devices.size(), 1u);
  EXPECT_EQ(u1->devices[0].gpu, 3);
  EXPECT_EQ(u1->devices[0].cdi_device_ids[0], "k8s.gpu.canhazgpu.dev/claim=u1-gpu-3");

  ASSERT_TRUE(again.Remove("u1").ok());
  ASSERT_TRUE(again.Remove("u1").ok());  // twice: no harm
  EXPECT_EQ(Load().claims().size(), 1u);
  EXPECT_EQ(fs::status(File()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

// Issue 29 item 4: the daemon puts a lost K8S reservation back as the
// prepare made it, user and pod included; older checkpoints lack both.
TEST_F(CheckpointTest, TheReservationsUserAndPodAreKeptAndOptional) {
  Checkpoint c = Load();
  CheckpointClaim claim = Claim("u1", PrepareState::kCompleted);
  claim.user = "alice";
  claim.pod = "train-0";
  ASSERT_TRUE(c.Put(claim).ok());
  ASSERT_TRUE(c.Put(Claim("u2", PrepareState::kCompleted)).ok());
  Checkpoint again = Load();
  EXPECT_EQ(note_, "");
  EXPECT_EQ(again.Find("u1")->user, "alice");
  EXPECT_EQ(again.Find("u1")->pod, "train-0");
  EXPECT_EQ(again.Find("u2")->user, "");
  EXPECT_FALSE(json::parse(Text())["claims"]["u2"].contains("user"));
  EXPECT_TRUE(again.Find("u1")->unknown.empty());
}

TEST_F(CheckpointTest, ASharesIdMemoryAndIsolationAreKept) {
  Checkpoint c = Load();
  CheckpointClaim claim = Claim("u1", PrepareState::kCompleted);
  ASSERT_FALSE(claim.devices.empty());
  claim.devices[0].share_id = "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
  claim.devices[0].memory = uint64_t{10} << 30;
  claim.devices[0].shareable = uint64_t{79} << 30;
  claim.devices[0].isolation = "mps";
  ASSERT_TRUE(c.Put(claim).ok());
  ASSERT_TRUE(c.Put(Claim("u2", PrepareState::kCompleted)).ok());
  Checkpoint again = Load();
  EXPECT_EQ(note_, "");
  const CheckpointDevice& d = again.Find("u1")->devices[0];
  EXPECT_EQ(d.share_id, "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10");
  EXPECT_EQ(d.memory, uint64_t{10} << 30);
  EXPECT_EQ(d.shareable, uint64_t{79} << 30);
  EXPECT_EQ(d.isolation, "mps");
  EXPECT_TRUE(d.unknown.empty());
  // A whole device writes none of them.
  EXPECT_FALSE(json::parse(Text())["claims"]["u2"]["devices"][0].contains("shareID"));
  EXPECT_EQ(again.Find("u2")->devices[0].share_id, "");
}

TEST_F(CheckpointTest, FieldsOfANewerDaemonAreKept) {
  CheckpointClaim claim = Claim("u1", PrepareState::kCompleted);
  claim.unknown = {{"sharing", {{"mps", true}}}};
  claim.devices[0].unknown = {{"shareId", "s-1"}};
  Write(CheckpointText("boot-1", {{"u1", claim}}, {{"nodeName", "node-a"}}));
  Checkpoint c = Load();
  EXPECT_EQ(note_, "");
  ASSERT_TRUE(c.Put(Claim("u2", PrepareState::kStarted)).ok());
  const json written = json::parse(Text());
  EXPECT_EQ(written["nodeName"], "node-a");
  EXPECT_EQ(written["claims"]["u1"]["sharing"]["mps"], true);
  EXPECT_EQ(written["claims"]["u1"]["devices"][0]["shareId"], "s-1");
  EXPECT_EQ(Load().claims().size(), 2u);
  EXPECT_EQ(note_, "");
}

TEST_F(CheckpointTest, ACorruptFileIsMovedAsideNotACrashLoop) {
  const std::string good =
      CheckpointText("boot-1", {{"u1", Claim("u1", PrepareState::kCompleted)}});
  std::string flipped = good;
  flipped[flipped.find("gpu-3")] = 'c';  // one byte, still valid JSON
  json newer = json::parse(good);
  newer["version"] = 2;
  newer["checksum"] = CheckpointChecksum(newer);
  const std::pair<std::string, std::string> cases[] = {
      {good.substr(0, good.size() / 2), "not JSON"},  // torn
      {flipped, "checksum does not match"},
      {"{\"kind\":\"Something\"}", "not a k8shazgpu-node checkpoint"},
      {newer.dump(), "version 2 is not 1"},
  };
  for (const auto& [text, problem] : cases) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write(text);
    Checkpoint c = Load();
    EXPECT_TRUE(c.claims().empty()) << problem;
    EXPECT_THAT(note_, HasSubstr(problem));
    EXPECT_THAT(note_, HasSubstr("moved to " + dir_ + "/checkpoint.json.corrupt-"));
    EXPECT_FALSE(fs::exists(File()));
    ASSERT_EQ(Aside().size(), 1u);
    EXPECT_EQ(moved_to_, dir_ + "/" + Aside()[0]);  // for the Event
    // It starts over and works.
    ASSERT_TRUE(c.Put(Claim("u9", PrepareState::kStarted)).ok());
    EXPECT_EQ(Load().claims().size(), 1u);
  }
}

TEST_F(CheckpointTest, AClaimOfTheWrongShapeMakesTheFileUnusable) {
  CheckpointClaim claim = Claim("u1", PrepareState::kCompleted);
  Write(CheckpointText("boot-1", {{"u1", claim}}));
  json doc = json::parse(Text());
  doc["claims"]["u1"]["devices"][0]["gpu"] = "three";
  doc["checksum"] = CheckpointChecksum(doc);  // intact: only the shape is wrong
  Write(doc.dump());
  Checkpoint c = Load();
  EXPECT_TRUE(c.claims().empty());
  EXPECT_THAT(note_, HasSubstr("unusable (claim u1 is malformed)"));
}

TEST_F(CheckpointTest, AfterARebootNothingPreparedSurvives) {
  {
    Checkpoint c = Load("boot-1");
    ASSERT_TRUE(c.Put(Claim("u1", PrepareState::kCompleted)).ok());
  }
  Checkpoint c = Load("boot-2");
  EXPECT_TRUE(c.claims().empty());
  EXPECT_THAT(note_, HasSubstr("before the last reboot (boot boot-1, now boot-2): its 1 prepared"));
  EXPECT_TRUE(Aside().empty());
  Load("boot-2");
  EXPECT_EQ(note_, "") << "the file was rewritten for this boot";
}

TEST_F(CheckpointTest, AFailedWriteChangesNothing) {
  Checkpoint c = Load();
  ASSERT_TRUE(c.Put(Claim("u1", PrepareState::kStarted)).ok());
  fs::remove_all(dir_);  // the plugin directory vanished
  absl::Status failed = c.Put(Claim("u2", PrepareState::kStarted));
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("checkpoint.json"));
  EXPECT_EQ(c.Find("u2"), nullptr);
  EXPECT_NE(c.Find("u1"), nullptr);
  EXPECT_FALSE(c.Remove("u1").ok());
  EXPECT_NE(c.Find("u1"), nullptr);
}

// Issue 29 item 13: a daemon killed between writing the temporary file and
// renaming it left the file there for good, one more at every such kill.
TEST_F(CheckpointTest, LoadRemovesTheTemporaryFilesOfKilledWrites) {
  ASSERT_TRUE(Load().Put(Claim("a", PrepareState::kCompleted)).ok());
  const std::vector<std::string> leftovers = {"checkpoint.json.tmp.4242",
                                              ".checkpoint.json.tmp.Xq3Zt9"};
  const std::vector<std::string> others = {"checkpoint.json.tmp.notapid", "notes.json.tmp.17",
                                           ".notes.json.tmp.abc", "checkpoint.json.corrupt-x"};
  for (const std::string& name : leftovers) std::ofstream(dir_ + "/" + name) << "{\"half";
  for (const std::string& name : others) std::ofstream(dir_ + "/" + name) << "not ours";

  Checkpoint again = Load();
  EXPECT_EQ(note_, "");
  EXPECT_NE(again.Find("a"), nullptr);
  for (const std::string& name : leftovers) EXPECT_FALSE(fs::exists(dir_ + "/" + name)) << name;
  for (const std::string& name : others) EXPECT_TRUE(fs::exists(dir_ + "/" + name)) << name;
}

}  // namespace
}  // namespace canhazgpu::driver
