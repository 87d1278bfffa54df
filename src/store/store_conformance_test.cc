// One suite that every StateStore must pass: the SQLite store and the
// in-memory store run the same tests.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>

#include "store/memory_state_store.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

using std::chrono::minutes;

struct StoreFactory {
  std::string name;
  std::function<std::unique_ptr<StateStore>(const std::string& dir)> make;
};

// Names the parameter in test listings (ctest -N) instead of its bytes.
void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/store_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = GetParam().make(dir_);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Reservation Manual(int gpu, uint32_t uid, std::string user) {
    return Reservation{.gpu = gpu,
                       .uid = uid,
                       .user = std::move(user),
                       .kind = ReservationKind::kManual,
                       .start = FromEpochMillis(1'000'000),
                       .expires = FromEpochMillis(2'000'000),
                       .note = "training"};
  }

  std::vector<Reservation> List() {
    std::vector<Reservation> out;
    EXPECT_TRUE(store_
                    ->Read([&](StateTransaction& t) -> absl::Status {
                      auto list = t.ListReservations();
                      if (!list.ok()) return list.status();
                      out = *list;
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  std::string dir_;
  std::unique_ptr<StateStore> store_;
};

TEST_P(StoreConformanceTest, PoolStartsUnsetAndRoundTrips) {
  ASSERT_TRUE(store_
                  ->Update([](StateTransaction& t) {
                    EXPECT_FALSE(t.GetPool().value().has_value());
                    return t.SetPool({4, "fake", "/x/host.json"});
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([](StateTransaction& t) {
                    auto pool = t.GetPool();
                    EXPECT_TRUE(pool.ok() && pool->has_value());
                    EXPECT_EQ((*pool)->gpu_count, 4);
                    EXPECT_EQ((*pool)->provider, "fake");
                    EXPECT_EQ((*pool)->fake_host, "/x/host.json");
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_P(StoreConformanceTest, ReservationsRoundTripEveryField) {
  Reservation run{.gpu = 2,
                  .uid = 1001,
                  .user = "bob",
                  .display_user = "team-eval",
                  .kind = ReservationKind::kRun,
                  .start = FromEpochMillis(123'456),
                  .process = ProcessRef{4242, 99'999},
                  .wrapper = ProcessRef{4241, 99'998},
                  .command_exited = FromEpochMillis(200'000),
                  .job_processes = {{5001, 100'001}, {5002, 100'002}},
                  .job_cgroup = "/sys/fs/cgroup/canhazgpu-job-4242-99999",
                  .forced_over = "carol",
                  .queue_id = 7,
                  .note = "a note with 'quotes'",
                  .command = "vllm serve x"};
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) {
                    absl::Status s = t.InsertReservation(run);
                    if (!s.ok()) return s;
                    return t.InsertReservation(Manual(0, 1000, "alice"));
                  })
                  .ok());
  std::vector<Reservation> list = List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].gpu, 0) << "ordered by gpu";
  EXPECT_EQ(list[0].expires, FromEpochMillis(2'000'000));
  EXPECT_FALSE(list[0].process.has_value());
  EXPECT_FALSE(list[0].wrapper.has_value());
  EXPECT_FALSE(list[0].command_exited.has_value());
  EXPECT_FALSE(list[0].queue_id.has_value());
  EXPECT_TRUE(list[0].job_processes.empty());
  EXPECT_FALSE(list[0].job_cgroup.has_value());
  EXPECT_EQ(list[0].forced_over, "");
  EXPECT_EQ(list[0].display_user, "");
  const Reservation& r = list[1];
  EXPECT_EQ(r.uid, 1001u);
  EXPECT_EQ(r.user, "bob");
  EXPECT_EQ(r.display_user, "team-eval");
  EXPECT_EQ(r.kind, ReservationKind::kRun);
  EXPECT_EQ(r.start, FromEpochMillis(123'456));
  EXPECT_FALSE(r.expires.has_value());
  ASSERT_TRUE(r.process.has_value());
  EXPECT_EQ(*r.process, (ProcessRef{4242, 99'999}));
  EXPECT_EQ(r.note, "a note with 'quotes'");
  EXPECT_EQ(r.command, "vllm serve x");
  EXPECT_EQ(r.wrapper, (ProcessRef{4241, 99'998}));
  EXPECT_EQ(r.command_exited, FromEpochMillis(200'000));
  EXPECT_EQ(r.queue_id, 7);
  EXPECT_EQ(r.job_processes, (std::vector<ProcessRef>{{5001, 100'001}, {5002, 100'002}}));
  EXPECT_EQ(r.job_cgroup, "/sys/fs/cgroup/canhazgpu-job-4242-99999");
  EXPECT_EQ(r.forced_over, "carol");
}

// A k8s reservation keeps the claim it serves; the pod may be unknown.
TEST_P(StoreConformanceTest, K8sReservationsRoundTripTheirClaim) {
  const KubeClaimRef with_pod{
      .namespace_name = "ml", .name = "train-gpus", .uid = "u-1", .pod = "train-0"};
  const KubeClaimRef without_pod{.namespace_name = "ml", .name = "eval", .uid = "u-2"};
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) -> absl::Status {
                    for (auto [gpu, claim] : {std::pair{1, with_pod}, std::pair{3, without_pod}}) {
                      absl::Status s = t.InsertReservation({.gpu = gpu,
                                                            .uid = 1000,
                                                            .user = "alice",
                                                            .kind = ReservationKind::kK8s,
                                                            .start = FromEpochMillis(7'000),
                                                            .claim = claim});
                      if (!s.ok()) return s;
                    }
                    return t.InsertReservation(Manual(2, 1000, "alice"));
                  })
                  .ok());
  std::vector<Reservation> list = List();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].kind, ReservationKind::kK8s);
  EXPECT_EQ(list[0].claim, with_pod);
  EXPECT_EQ(list[0].user, "alice");
  EXPECT_EQ(list[0].start, FromEpochMillis(7'000));
  EXPECT_FALSE(list[0].expires.has_value());
  EXPECT_FALSE(list[0].process.has_value());
  EXPECT_FALSE(list[1].claim.has_value()) << "a manual reservation has no claim";
  EXPECT_EQ(list[2].claim, without_pod);
  EXPECT_EQ(list[2].claim->pod, "");
}

// The claim is there exactly for k8s reservations: neither half is written.
TEST_P(StoreConformanceTest, ClaimIsRequiredForK8sAndRefusedForOthers) {
  Reservation k8s_without_claim{.gpu = 0, .user = "k8s:ml", .kind = ReservationKind::kK8s};
  Reservation manual_with_claim = Manual(1, 1000, "alice");
  manual_with_claim.claim = KubeClaimRef{.namespace_name = "ml", .name = "c", .uid = "u"};
  for (const Reservation& r : {k8s_without_claim, manual_with_claim}) {
    absl::Status s = store_->Update([&](StateTransaction& t) { return t.InsertReservation(r); });
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  EXPECT_TRUE(List().empty());
}

// An ended k8s reservation is in the history as kind k8s, its claim in the
// note (EndReservation).
TEST_P(StoreConformanceTest, EndedK8sReservationIsHistoryOfKindK8s) {
  Reservation r{.gpu = 2,
                .uid = 0,
                .user = "k8s:ml",
                .kind = ReservationKind::kK8s,
                .start = FromEpochMillis(60'000),
                .claim = KubeClaimRef{.namespace_name = "ml", .name = "c", .uid = "u", .pod = "p"}};
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) {
                    return t.AppendHistory(
                        EndReservation(r, FromEpochMillis(120'000), ReleaseReason::kReleased));
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([](StateTransaction& t) {
                    auto history = t.HistorySince(FromEpochMillis(0)).value();
                    EXPECT_EQ(history.size(), 1u);
                    if (history.empty()) return absl::OkStatus();
                    EXPECT_EQ(history[0].kind, ReservationKind::kK8s);
                    EXPECT_EQ(history[0].user, "k8s:ml");
                    EXPECT_EQ(history[0].note, "claim ml/c (pod p)");
                    EXPECT_EQ(history[0].start, FromEpochMillis(60'000));
                    EXPECT_EQ(t.LastReleased(2).value(), FromEpochMillis(120'000));
                    return absl::OkStatus();
                  })
                  .ok());
}

// Issue 14: notes and commands are bytes as given, not necessarily UTF-8;
// they are kept exactly and escaped only when shown.
TEST_P(StoreConformanceTest, TextThatIsNotUtf8RoundTripsByteExact) {
  // A NUL too: the length is the store's, not up to the first zero byte.
  const std::string note = std::string("caf\xe9 \x1b]0;pwned\x07\x1b[2J\n\0\xff\xc3", 23);
  const std::string command = "sh -c 'sleep 5' x\xff\xed\xa0\x80\xe2\x80\xae";
  Reservation r = Manual(1, 1000, "alice");
  r.note = note;
  r.command = command;
  QueueEntry e{.uid = 1000, .user = "alice", .count = 1, .note = note, .command = command};
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) {
                    absl::Status s = t.InsertReservation(r);
                    if (!s.ok()) return s;
                    return t.InsertQueueEntry(e).status();
                  })
                  .ok());
  std::vector<Reservation> list = List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].note, note);
  EXPECT_EQ(list[0].command, command);
  std::vector<QueueEntry> queue;
  ASSERT_TRUE(store_
                  ->Read([&](StateTransaction& t) -> absl::Status {
                    auto list = t.ListQueue();
                    if (!list.ok()) return list.status();
                    queue = *list;
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].note, note);
  EXPECT_EQ(queue[0].command, command);
}

TEST_P(StoreConformanceTest, QueueKeepsArrivalOrderAndEveryField) {
  QueueEntry first{.uid = 1000,
                   .user = "alice",
                   .display_user = "ci-bot",
                   .kind = ReservationKind::kManual,
                   .count = 2,
                   .duration = std::chrono::hours(4),
                   .force = true,
                   .note = "eval",
                   .selector = "--min-memory 40Gi",
                   .eligible = std::vector<int>{0, 2},
                   .waiter = ProcessRef{10, 20},
                   .enqueued = FromEpochMillis(5'000)};
  QueueEntry second{.uid = 1001,
                    .user = "bob",
                    .kind = ReservationKind::kRun,
                    .count = 2,
                    .ids = {3, 1},
                    .command = "python train.py",
                    .waiter = ProcessRef{11, 21},
                    .enqueued = FromEpochMillis(4'000)};  // an earlier clock: order is by arrival
  int64_t id1 = 0, id2 = 0;
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) -> absl::Status {
                    auto a = t.InsertQueueEntry(first);
                    if (!a.ok()) return a.status();
                    auto b = t.InsertQueueEntry(second);
                    if (!b.ok()) return b.status();
                    id1 = *a;
                    id2 = *b;
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_LT(id1, id2);
  std::vector<QueueEntry> queue;
  ASSERT_TRUE(store_
                  ->Read([&](StateTransaction& t) -> absl::Status {
                    auto list = t.ListQueue();
                    if (!list.ok()) return list.status();
                    queue = *list;
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue[0].id, id1);
  EXPECT_EQ(queue[0].user, "alice");
  EXPECT_EQ(queue[0].display_user, "ci-bot");
  EXPECT_EQ(queue[1].display_user, "");
  EXPECT_EQ(queue[0].count, 2);
  EXPECT_TRUE(queue[0].ids.empty());
  EXPECT_EQ(queue[0].duration, std::chrono::hours(4));
  EXPECT_TRUE(queue[0].force);
  EXPECT_EQ(queue[0].note, "eval");
  EXPECT_EQ(queue[0].selector, "--min-memory 40Gi");
  EXPECT_EQ(queue[0].eligible, (std::vector<int>{0, 2}));
  EXPECT_EQ(queue[0].waiter, (ProcessRef{10, 20}));
  EXPECT_EQ(queue[0].enqueued, FromEpochMillis(5'000));
  EXPECT_EQ(queue[1].kind, ReservationKind::kRun);
  EXPECT_EQ(queue[1].ids, (std::vector<int>{3, 1}));
  EXPECT_FALSE(queue[1].eligible.has_value()) << "no selector: any GPU";
  EXPECT_FALSE(queue[1].duration.has_value());
  EXPECT_EQ(queue[1].command, "python train.py");
  EXPECT_EQ(queue[1].selector, "");

  EXPECT_TRUE(store_->Update([&](StateTransaction& t) { return t.DeleteQueueEntry(id1); }).ok());
  absl::Status again = store_->Update([&](StateTransaction& t) { return t.DeleteQueueEntry(id1); });
  EXPECT_TRUE(absl::IsNotFound(again)) << again;
  // An id is never handed out twice, even after the newest entry left.
  int64_t id3 = 0;
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) -> absl::Status {
                    if (absl::Status s = t.DeleteQueueEntry(id2); !s.ok()) return s;
                    auto c = t.InsertQueueEntry(first);
                    if (!c.ok()) return c.status();
                    id3 = *c;
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_GT(id3, id2);
}

TEST_P(StoreConformanceTest, SecondHolderOfAGpuIsRefused) {
  ASSERT_TRUE(
      store_->Update([&](StateTransaction& t) { return t.InsertReservation(Manual(1, 1, "a")); })
          .ok());
  absl::Status second =
      store_->Update([&](StateTransaction& t) { return t.InsertReservation(Manual(1, 2, "b")); });
  EXPECT_EQ(second.code(), absl::StatusCode::kAlreadyExists);
  ASSERT_EQ(List().size(), 1u);
  EXPECT_EQ(List()[0].user, "a");
}

TEST_P(StoreConformanceTest, FailedTransactionChangesNothing) {
  absl::Status status = store_->Update([&](StateTransaction& t) {
    EXPECT_TRUE(t.InsertReservation(Manual(0, 1, "a")).ok());
    EXPECT_TRUE(t.SetPool({8, "fake", ""}).ok());
    return absl::ResourceExhaustedError("changed my mind");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(List().empty());
  ASSERT_TRUE(store_
                  ->Read([](StateTransaction& t) {
                    EXPECT_FALSE(t.GetPool().value().has_value());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_P(StoreConformanceTest, DeleteReportsMissingGpu) {
  EXPECT_EQ(store_->Update([](StateTransaction& t) { return t.DeleteReservation(3); }).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(
      store_->Update([&](StateTransaction& t) { return t.InsertReservation(Manual(3, 1, "a")); })
          .ok());
  EXPECT_TRUE(store_->Update([](StateTransaction& t) { return t.DeleteReservation(3); }).ok());
  EXPECT_TRUE(List().empty());
}

TEST_P(StoreConformanceTest, ReadRefusesWrites) {
  absl::Status status =
      store_->Read([&](StateTransaction& t) { return t.InsertReservation(Manual(0, 1, "a")); });
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(List().empty());
}

TEST_P(StoreConformanceTest, UsageSamplesAreKeptOrderedAndPruned) {
  auto at = [](int64_t minute) { return FromEpochMillis(minute * 60'000); };
  ASSERT_TRUE(store_
                  ->Read([&](StateTransaction& t) {
                    EXPECT_FALSE(t.LastUsageSample().value().has_value());
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) {
                    return t.AppendUsageSamples({{.gpu = 1, .at = at(5), .busy = true},
                                                 {.gpu = 0, .at = at(7), .memory_used_bytes = 9},
                                                 {.gpu = 0, .at = at(1)}},
                                                at(0));
                  })
                  .ok());
  // A later append prunes what is older than its horizon.
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) {
                    return t.AppendUsageSamples({{.gpu = 0, .at = at(9)}}, at(2));
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([&](StateTransaction& t) {
                    auto samples = t.UsageSamplesSince(at(0)).value();
                    EXPECT_EQ(samples.size(), 3u);
                    EXPECT_EQ(samples[0].gpu, 0);
                    EXPECT_EQ(samples[0].at, at(7));
                    EXPECT_EQ(samples[0].memory_used_bytes, 9u);
                    EXPECT_EQ(samples[1].at, at(9));
                    EXPECT_EQ(samples[2].gpu, 1);
                    EXPECT_TRUE(samples[2].busy);
                    EXPECT_EQ(t.UsageSamplesSince(at(6)).value().size(), 2u);
                    EXPECT_EQ(t.LastUsageSample().value(), at(9));
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_P(StoreConformanceTest, HistoryAnswersLastReleasedAndLastUsedBy) {
  auto record = [](int gpu, uint32_t uid, int64_t end_minute) {
    return HistoryRecord{.gpu = gpu,
                         .uid = uid,
                         .user = "u" + std::to_string(uid),
                         .kind = ReservationKind::kRun,
                         .start = FromEpochMillis(0),
                         .end = FromEpochMillis(end_minute * 60'000),
                         .reason = ReleaseReason::kJobExited};
  };
  ASSERT_TRUE(
      store_
          ->Update([&](StateTransaction& t) {
            for (auto h : {record(0, 1, 10), record(0, 2, 30), record(0, 1, 20), record(1, 2, 5)}) {
              absl::Status s = t.AppendHistory(h);
              if (!s.ok()) return s;
            }
            return absl::OkStatus();
          })
          .ok());
  ASSERT_TRUE(store_
                  ->Read([](StateTransaction& t) {
                    EXPECT_EQ(t.LastReleased(0).value(), FromEpochMillis(30 * 60'000));
                    EXPECT_EQ(t.LastReleased(1).value(), FromEpochMillis(5 * 60'000));
                    EXPECT_FALSE(t.LastReleased(2).value().has_value());
                    EXPECT_EQ(t.LastUsedBy(1, 0).value(), FromEpochMillis(20 * 60'000));
                    EXPECT_FALSE(t.LastUsedBy(1, 1).value().has_value());
                    auto since = t.HistorySince(FromEpochMillis(10 * 60'000)).value();
                    EXPECT_EQ(since.size(), 3u);
                    EXPECT_EQ(since.front().end, FromEpochMillis(10 * 60'000));
                    EXPECT_EQ(since.back().end, FromEpochMillis(30 * 60'000));
                    EXPECT_EQ(since.back().reason, ReleaseReason::kJobExited);
                    return absl::OkStatus();
                  })
                  .ok());
}

// Shares of a GPU's memory (ADR 0018): the store alone keeps "whole GPU, or
// shares summing to at most the shareable memory".
constexpr uint64_t kGiB = uint64_t{1} << 30;

Reservation Share(int gpu, std::string id, uint64_t gib, std::string user) {
  return Reservation{.gpu = gpu,
                     .memory = gib * kGiB,
                     .share = std::move(id),
                     .shareable = 79 * kGiB + 512 * (kGiB >> 10),
                     .uid = 1000,
                     .user = std::move(user),
                     .kind = ReservationKind::kManual,
                     .start = FromEpochMillis(1'000'000)};
}

absl::Status InsertOne(StateStore& store, const Reservation& r) {
  return store.Update([&](StateTransaction& t) { return t.InsertReservation(r); });
}

TEST_P(StoreConformanceTest, SharesRoundTripAndListAfterTheirGpu) {
  ASSERT_TRUE(InsertOne(*store_, Share(1, "s-b", 24, "bob")).ok());
  ASSERT_TRUE(InsertOne(*store_, Share(1, "s-a", 50, "alice")).ok());
  ASSERT_TRUE(InsertOne(*store_, Manual(0, 1000, "carol")).ok());
  std::vector<Reservation> list = List();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].memory, 0u) << "a whole GPU";
  EXPECT_EQ(list[0].share, "");
  EXPECT_EQ(list[1].share, "s-a") << "ordered by gpu, then share";
  EXPECT_EQ(list[1].memory, 50 * kGiB);
  EXPECT_EQ(list[1].shareable, Share(1, "x", 1, "x").shareable);
  EXPECT_EQ(list[2].user, "bob");
}

TEST_P(StoreConformanceTest, WholeGpuExcludesSharesAndSharesExcludeTheWholeGpu) {
  ASSERT_TRUE(InsertOne(*store_, Manual(0, 1000, "alice")).ok());
  absl::Status share = InsertOne(*store_, Share(0, "s-1", 10, "bob"));
  EXPECT_EQ(share.code(), absl::StatusCode::kAlreadyExists) << share;
  EXPECT_NE(share.message().find("reserved whole"), std::string::npos) << share;

  ASSERT_TRUE(InsertOne(*store_, Share(1, "s-2", 10, "bob")).ok());
  absl::Status whole = InsertOne(*store_, Manual(1, 1000, "alice"));
  EXPECT_EQ(whole.code(), absl::StatusCode::kAlreadyExists) << whole;
  EXPECT_NE(whole.message().find("gpu 1 is shared (1 share)"), std::string::npos) << whole;
  EXPECT_EQ(List().size(), 2u);
}

TEST_P(StoreConformanceTest, SharesFillTheGpuUpToItsShareableMemoryAndNoFurther) {
  ASSERT_TRUE(InsertOne(*store_, Share(0, "s-a", 50, "alice")).ok());
  ASSERT_TRUE(InsertOne(*store_, Share(0, "s-b", 24, "bob")).ok());
  absl::Status over = InsertOne(*store_, Share(0, "s-c", 6, "carol"));
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_EQ(over.message(), "gpu 0: 6Gi asked, only 5.5Gi of 79.5Gi left to share");
  Reservation exact = Share(0, "s-c", 0, "carol");
  exact.memory = 5 * kGiB + kGiB / 2;
  EXPECT_TRUE(InsertOne(*store_, exact).ok()) << "exactly what is left fits";
  EXPECT_EQ(List().size(), 3u);
}

TEST_P(StoreConformanceTest, ShareIdsAreUniquePerGpuAndSharesNeedTheirFields) {
  ASSERT_TRUE(InsertOne(*store_, Share(0, "s-a", 10, "alice")).ok());
  EXPECT_EQ(InsertOne(*store_, Share(0, "s-a", 10, "bob")).code(),
            absl::StatusCode::kAlreadyExists);
  Reservation no_id = Share(0, "", 10, "bob");
  Reservation no_limit = Share(0, "s-b", 10, "bob");
  no_limit.shareable = 0;
  Reservation too_big = Share(0, "s-c", 80, "bob");
  Reservation whole_with_id = Manual(1, 1000, "bob");
  whole_with_id.share = "s-d";
  for (const Reservation& r : {no_id, no_limit, too_big, whole_with_id}) {
    absl::Status s = InsertOne(*store_, r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  EXPECT_EQ(List().size(), 1u);
}

TEST_P(StoreConformanceTest, DeletingOneShareLeavesTheOthers) {
  ASSERT_TRUE(InsertOne(*store_, Share(0, "s-a", 50, "alice")).ok());
  ASSERT_TRUE(InsertOne(*store_, Share(0, "s-b", 24, "bob")).ok());
  ASSERT_TRUE(
      store_->Update([](StateTransaction& t) { return t.DeleteReservation(0, "s-a"); }).ok());
  absl::Status gone =
      store_->Update([](StateTransaction& t) { return t.DeleteReservation(0, "s-a"); });
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_EQ(store_->Update([](StateTransaction& t) { return t.DeleteReservation(0); }).code(),
            absl::StatusCode::kNotFound)
      << "the whole GPU is not held";
  std::vector<Reservation> list = List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].share, "s-b");
  EXPECT_TRUE(InsertOne(*store_, Share(0, "s-c", 50, "carol")).ok()) << "the memory came back";
}

TEST_P(StoreConformanceTest, HistoryAndQueueKeepTheMemoryAndTheShareable) {
  QueueEntry entry{.uid = 1000, .user = "alice", .count = 2, .memory = 10 * kGiB};
  ASSERT_TRUE(store_
                  ->Update([&](StateTransaction& t) -> absl::Status {
                    absl::Status s = t.AppendHistory(EndReservation(Share(0, "s-a", 10, "alice"),
                                                                    FromEpochMillis(2'000'000),
                                                                    ReleaseReason::kReleased));
                    if (!s.ok()) return s;
                    return t.InsertQueueEntry(entry).status();
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([](StateTransaction& t) {
                    auto history = t.HistorySince(FromEpochMillis(0)).value();
                    EXPECT_EQ(history.size(), 1u);
                    EXPECT_EQ(history.at(0).memory, 10 * kGiB);
                    EXPECT_EQ(history.at(0).shareable, 79 * kGiB + 512 * (kGiB >> 10))
                        << "the GPU's shareable memory, for report";
                    auto queue = t.ListQueue().value();
                    EXPECT_EQ(queue.size(), 1u);
                    EXPECT_EQ(queue.at(0).memory, 10 * kGiB);
                    return absl::OkStatus();
                  })
                  .ok());
}

INSTANTIATE_TEST_SUITE_P(
    AllStores, StoreConformanceTest,
    ::testing::Values(StoreFactory{"memory",
                                   [](const std::string&) -> std::unique_ptr<StateStore> {
                                     return std::make_unique<MemoryStateStore>();
                                   }},
                      StoreFactory{"sqlite",
                                   [](const std::string& dir) -> std::unique_ptr<StateStore> {
                                     auto store = SqliteStateStore::Open(dir + "/state.db",
                                                                         {.create = true});
                                     EXPECT_TRUE(store.ok()) << store.status();
                                     return store.ok() ? std::move(*store) : nullptr;
                                   }}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace canhazgpu::store
