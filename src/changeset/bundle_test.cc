#include "changeset/bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "changeset/blob_id.h"

namespace canhazgpu::changeset {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

ChangeSet Sample() {
  ChangeSet c;
  c.base_commit = "0123456789abcdef0123456789abcdef01234567";
  c.notes = {"submodule x skipped: submodules are not packed"};
  c.entries.push_back({.path = "a/bin.dat",
                       .base_blob = BlobIdOf("old"),
                       .kind = EntryKind::kFile,
                       .mode = 0644,
                       .data = std::string("\0\x01# \n\xff", 6)});
  c.entries.push_back(
      {.path = "a/gone.py", .base_blob = BlobIdOf("x"), .kind = EntryKind::kDeleted});
  c.entries.push_back({.path = "a/link", .kind = EntryKind::kSymlink, .data = "bin.dat"});
  c.entries.push_back(
      {.path = "run.sh", .kind = EntryKind::kFile, .mode = 0755, .data = "#!/bin/sh\n"});
  return c;
}

void ExpectSame(const ChangeSet& a, const ChangeSet& b) {
  EXPECT_EQ(a.base_commit, b.base_commit);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const ChangeEntry& x = a.entries[i];
    const ChangeEntry& y = b.entries[i];
    EXPECT_EQ(x.path, y.path);
    ASSERT_EQ(x.base_blob.has_value(), y.base_blob.has_value()) << x.path;
    if (x.base_blob) {
      EXPECT_TRUE(git_oid_equal(&*x.base_blob, &*y.base_blob)) << x.path;
    }
    EXPECT_EQ(x.kind, y.kind) << x.path;
    EXPECT_EQ(x.mode, y.mode) << x.path;
    EXPECT_EQ(x.data, y.data) << x.path;
  }
}

TEST(BundleTest, RoundTripsEveryKindOfEntry) {
  const ChangeSet sample = Sample();
  absl::StatusOr<ChangeSet> decoded = Decode(Encode(sample));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(*decoded, sample);
}

TEST(BundleTest, CompressesRepetitiveContent) {
  ChangeSet c = Sample();
  c.entries[3].data = std::string(1 << 20, 'x');
  EXPECT_LT(Encode(c).size(), 20'000u);
}

TEST(BundleTest, RefusesForeignInput) {
  absl::StatusOr<ChangeSet> decoded = Decode("diff --git a/x b/x\n");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(decoded.status().message(), HasSubstr("not a change set bundle"));
  EXPECT_FALSE(Decode("").ok());
}

TEST(BundleTest, RefusesEveryTruncation) {
  const std::string bundle = Encode(Sample());
  for (size_t n = 0; n < bundle.size(); ++n) {
    absl::StatusOr<ChangeSet> decoded = Decode(std::string_view(bundle).substr(0, n));
    ASSERT_FALSE(decoded.ok()) << "accepted " << n << " of " << bundle.size() << " bytes";
    EXPECT_EQ(decoded.status().message().find('\n'), std::string::npos);
  }
  EXPECT_THAT(Decode(std::string_view(bundle).substr(0, bundle.size() - 1)).status().message(),
              HasSubstr("truncated"));
}

TEST(BundleTest, RefusesAnyFlippedByte) {
  const std::string bundle = Encode(Sample());
  for (size_t i = 8; i < bundle.size(); ++i) {
    std::string bad = bundle;
    bad[i] ^= 0x20;
    EXPECT_FALSE(Decode(bad).ok()) << "accepted a flip at byte " << i;
  }
  std::string bad = bundle;
  bad[bundle.size() - 3] ^= 1;
  EXPECT_THAT(Decode(bad).status().message(), HasSubstr("checksum mismatch"));
}

TEST(BundleTest, RefusesAnotherVersionSayingSo) {
  std::string bundle = Encode(Sample());
  bundle[8] = 2;
  absl::StatusOr<ChangeSet> decoded = Decode(bundle);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(decoded.status().message(), HasSubstr("version 2"));
}

TEST(BundleTest, RefusesPathsThatWouldEscapeTheTarget) {
  for (const char* path : {"../etc/passwd", "/etc/passwd", "a/../../b", "a//b", "./a",
                           ".git/config", "sub/.GIT/hooks/x", "a/"}) {
    ChangeSet c;
    c.base_commit = Sample().base_commit;
    c.entries.push_back({.path = path, .kind = EntryKind::kFile, .mode = 0644, .data = "x"});
    absl::StatusOr<ChangeSet> decoded = Decode(Encode(c));
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << path;
  }
  // A file below a symlink the change set creates would land where it points.
  ChangeSet c;
  c.base_commit = Sample().base_commit;
  c.entries.push_back({.path = "a", .kind = EntryKind::kSymlink, .data = "/etc"});
  c.entries.push_back({.path = "a/passwd", .kind = EntryKind::kFile, .mode = 0644, .data = "x"});
  EXPECT_THAT(Decode(Encode(c)).status().message(), HasSubstr("below the symlink 'a'"));
  // Repeated paths are refused too.
  c.entries = {{.path = "x", .kind = EntryKind::kFile, .mode = 0644},
               {.path = "x", .kind = EntryKind::kFile, .mode = 0644}};
  EXPECT_THAT(Decode(Encode(c)).status().message(), HasSubstr("repeated"));
}

// Issue 29: only the compressed size was capped, so a 510 KiB bundle
// decoded to a 512 MiB file held twice in memory.
TEST(BundleTest, Issue29RefusesWhatExpandsPastTheLimitsNamingThem) {
  ChangeSet c = Sample();
  c.entries[3].data = std::string(4 << 20, '\0');  // 4 MiB of zeros, about 4 KiB packed
  const std::string bundle = Encode(c);
  ASSERT_LT(bundle.size(), 20'000u);
  ASSERT_TRUE(Decode(bundle).ok());

  absl::StatusOr<ChangeSet> total = Decode(bundle, {.expanded = 1 << 20});
  EXPECT_EQ(total.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(total.status().message(),
            "change set bundle expands to 4.0 MiB, over the 1.0 MiB limit on a bundle's "
            "expanded size");
  absl::StatusOr<ChangeSet> one = DecodeIndex(bundle, {.file = 1 << 20});
  EXPECT_EQ(one.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(one.status().message(),
            "change set bundle: 'run.sh' is 4.0 MiB, over the 1.0 MiB limit on one file");
  EXPECT_GE(kMaxExpandedSize, uint64_t{1} << 30);
}

TEST(BundleTest, IndexKeepsEverythingButFileContents) {
  const ChangeSet sample = Sample();
  absl::StatusOr<ChangeSet> index = DecodeIndex(Encode(sample));
  ASSERT_TRUE(index.ok()) << index.status();
  ChangeSet expected = sample;
  for (ChangeEntry& e : expected.entries) {
    if (e.kind == EntryKind::kFile) e.data.clear();
  }
  ExpectSame(*index, expected);
}

// What ReadBundle hands over, and in what pieces.
class RecordingSink : public BundleSink {
 public:
  absl::Status OnStart(const ChangeSet& header) override {
    events.push_back("start " + header.base_commit.substr(0, 4));
    return absl::OkStatus();
  }
  absl::Status OnEntry(const ChangeEntry& e, uint64_t size) override {
    events.push_back("entry " + e.path + " " + std::to_string(size));
    return absl::OkStatus();
  }
  absl::Status OnData(std::string_view piece) override {
    largest_piece = std::max(largest_piece, piece.size());
    data_bytes += piece.size();
    return absl::OkStatus();
  }
  absl::Status OnEntryEnd() override {
    events.push_back("end");
    return absl::OkStatus();
  }
  std::vector<std::string> events;
  size_t largest_piece = 0;
  uint64_t data_bytes = 0;
};

TEST(BundleTest, ReadingHandsFileContentsOverInSmallPieces) {
  ChangeSet c = Sample();
  c.entries[3].data = std::string(3 << 20, 'x');
  RecordingSink sink;
  ASSERT_TRUE(ReadBundle(Encode(c), sink).ok());
  EXPECT_EQ(sink.events, (std::vector<std::string>{"start 0123", "entry a/bin.dat 6", "end",
                                                   "entry a/gone.py 0", "end", "entry a/link 0",
                                                   "end", "entry run.sh 3145728", "end"}));
  EXPECT_EQ(sink.data_bytes, 6u + (3 << 20));
  EXPECT_LE(sink.largest_piece, 64u * 1024);
}

TEST(BundleTest, RefusesOverlongPathsAndSymlinkTargets) {
  ChangeSet c;
  c.base_commit = Sample().base_commit;
  c.entries.push_back({.path = std::string(5000, 'p'), .kind = EntryKind::kFile, .mode = 0644});
  EXPECT_THAT(Decode(Encode(c)).status().message(), HasSubstr("a path of 5000 bytes"));
  c.entries = {{.path = "l", .kind = EntryKind::kSymlink, .data = std::string(5000, 't')}};
  EXPECT_THAT(Decode(Encode(c)).status().message(), HasSubstr("a symlink target of 5000 bytes"));
}

TEST(BundleTest, SplitsIntoPartsAndJoinsBack) {
  ChangeSet c = Sample();
  std::mt19937 random(7);  // incompressible, so that there are several parts
  std::string noise;
  for (int i = 0; i < 3'000'000; ++i) noise.push_back(static_cast<char>(random()));
  c.entries[0].data = noise;
  const std::string bundle = Encode(c);
  std::vector<std::string> parts = SplitIntoParts(bundle, kConfigMapPartSize);
  ASSERT_EQ(parts.size(), (bundle.size() + kConfigMapPartSize - 1) / kConfigMapPartSize);
  for (const std::string& part : parts) EXPECT_LE(part.size(), kConfigMapPartSize);
  EXPECT_EQ(JoinParts(parts), bundle);
  ASSERT_TRUE(Decode(JoinParts(parts)).ok());
  // A lost part is caught.
  parts.pop_back();
  EXPECT_THAT(Decode(JoinParts(parts)).status().message(), HasSubstr("truncated"));
  // A small bundle is one part; an empty input still one.
  EXPECT_EQ(SplitIntoParts("abc", kConfigMapPartSize).size(), 1u);
  EXPECT_EQ(SplitIntoParts("", kConfigMapPartSize).size(), 1u);
}

TEST(BundleTest, CeilingNamesTheBiggestContributors) {
  ChangeSet c = Sample();
  c.entries[0].path = "data/x.bin";
  c.entries[0].data = std::string(39 * 1024 * 1024, 'x');
  EXPECT_TRUE(CheckBundleSize(8 * 1024 * 1024, c).ok());
  absl::Status status = CheckBundleSize(40 * 1024 * 1024 + 200 * 1024, c);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("change set is 40.2 MiB compressed, over the 8.0 MiB "
                         "limit; biggest: data/x.bin 39.0 MiB, run.sh 10 B"));
}

}  // namespace
}  // namespace canhazgpu::changeset
