#include "changeset/bundle.h"

#include <zlib.h>

#include <algorithm>

#include "changeset/bundle_format.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutBytes32(std::string& out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}

// Collects what ReadBundle reads; file contents too unless `index_only`.
class CollectingSink : public BundleSink {
 public:
  CollectingSink(ChangeSet& out, bool index_only) : out_(out), index_only_(index_only) {}
  absl::Status OnStart(const ChangeSet& header) override {
    out_ = header;
    return absl::OkStatus();
  }
  absl::Status OnEntry(const ChangeEntry& entry, uint64_t) override {
    out_.entries.push_back(entry);
    return absl::OkStatus();
  }
  absl::Status OnData(std::string_view piece) override {
    // Grown as bytes arrive, never from the entry's claimed size alone, so
    // a small forged input cannot make a large allocation.
    if (!index_only_) out_.entries.back().data.append(piece);
    return absl::OkStatus();
  }
  absl::Status OnEntryEnd() override { return absl::OkStatus(); }

 private:
  ChangeSet& out_;
  bool index_only_;
};

absl::StatusOr<ChangeSet> Collect(std::string_view bundle, const BundleLimits& limits,
                                  bool index_only) {
  ChangeSet out;
  CollectingSink sink(out, index_only);
  if (absl::Status read = ReadBundle(bundle, sink, limits); !read.ok()) return read;
  return out;
}

}  // namespace

std::string Encode(const ChangeSet& change_set) {
  std::string raw = change_set.base_commit;
  PutU32(raw, static_cast<uint32_t>(change_set.notes.size()));
  for (const std::string& note : change_set.notes) PutBytes32(raw, note);
  PutU32(raw, static_cast<uint32_t>(change_set.entries.size()));
  for (const ChangeEntry& e : change_set.entries) {
    PutBytes32(raw, e.path);
    raw.push_back(e.base_blob.has_value() ? 1 : 0);
    if (e.base_blob.has_value()) {
      raw.append(reinterpret_cast<const char*>(e.base_blob->id), GIT_OID_RAWSZ);
    }
    raw.push_back(static_cast<char>(e.kind));
    if (e.kind == EntryKind::kFile) PutU32(raw, e.mode);
    if (e.kind != EntryKind::kDeleted) {
      PutU64(raw, e.data.size());
      raw.append(e.data);
    }
  }
  uLongf packed_size = compressBound(raw.size());
  std::string packed(packed_size, '\0');
  // Level 6 (zlib's default); compress2 fails only on a short buffer or
  // memory exhaustion, and the buffer is compressBound.
  compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
            reinterpret_cast<const Bytef*>(raw.data()), raw.size(), Z_DEFAULT_COMPRESSION);
  packed.resize(packed_size);

  std::string out(internal::kBundleMagic, sizeof(internal::kBundleMagic));
  PutU32(out, kBundleVersion);
  PutU32(out, 0);  // flags
  PutU64(out, raw.size());
  PutU64(out, packed.size());
  PutU32(out, internal::Crc32(0, packed));
  PutU32(out, internal::Crc32(0, raw));
  out += packed;
  return out;
}

absl::StatusOr<ChangeSet> Decode(std::string_view bundle, const BundleLimits& limits) {
  return Collect(bundle, limits, /*index_only=*/false);
}

absl::StatusOr<ChangeSet> DecodeIndex(std::string_view bundle, const BundleLimits& limits) {
  return Collect(bundle, limits, /*index_only=*/true);
}

std::vector<std::string> SplitIntoParts(std::string_view bundle, size_t part_size) {
  std::vector<std::string> parts;
  part_size = std::max<size_t>(part_size, 1);
  do {
    const size_t n = std::min(bundle.size(), part_size);
    parts.emplace_back(bundle.substr(0, n));
    bundle.remove_prefix(n);
  } while (!bundle.empty());
  return parts;
}

std::string JoinParts(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += part;
  return out;
}

absl::Status CheckBundleSize(uint64_t bundle_size, const ChangeSet& change_set, uint64_t limit) {
  if (bundle_size <= limit) return absl::OkStatus();
  std::vector<std::string> biggest;
  for (const Contributor& c : Summarize(change_set).biggest) {
    biggest.push_back(StrCat(c.path, " ", FormatBytes(c.bytes)));
  }
  return absl::ResourceExhaustedError(
      StrCat("change set is ", FormatBytes(bundle_size), " compressed, over the ",
             FormatBytes(limit), " limit; biggest: ", Join(biggest, ", "),
             " (commit or remove large files, or add them to .gitignore)"));
}

}  // namespace canhazgpu::changeset
