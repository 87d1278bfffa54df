#include "changeset/bundle.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

constexpr char kMagic[8] = {'K', '8', 'H', 'Z', 'C', 'S', 'E', 'T'};
constexpr size_t kHeaderSize = 40;

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

uint32_t Crc32(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large inputs in pieces.
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

// Reads the raw payload front to back; every read checks the bytes left.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool U8(uint8_t* v) {
    if (data_.empty()) return false;
    *v = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    uint64_t wide;
    if (!Fixed(4, &wide)) return false;
    *v = static_cast<uint32_t>(wide);
    return true;
  }
  bool U64(uint64_t* v) { return Fixed(8, v); }
  bool Bytes(uint64_t n, std::string* out) {
    if (data_.size() < n) return false;
    out->assign(data_.data(), n);
    data_.remove_prefix(n);
    return true;
  }
  bool Bytes32(std::string* out) {
    uint32_t n;
    return U32(&n) && Bytes(n, out);
  }
  bool Bytes64(std::string* out) {
    uint64_t n;
    return U64(&n) && Bytes(n, out);
  }
  bool done() const { return data_.empty(); }

 private:
  bool Fixed(int n, uint64_t* v) {
    if (data_.size() < static_cast<size_t>(n)) return false;
    *v = 0;
    for (int i = 0; i < n; ++i)
      *v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[i])) << (8 * i);
    data_.remove_prefix(n);
    return true;
  }
  std::string_view data_;
};

absl::Status Corrupt(const std::string& why) {
  return absl::DataLossError(StrCat("corrupt change set bundle: ", why));
}

// Why `path` may not be written under a target directory, or "" when it may.
std::string UnsafePathReason(const std::string& path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string::npos) return "a path with a NUL byte";
  if (path.front() == '/') return "an absolute path";
  for (std::string_view part : Split(path, '/')) {
    if (part.empty() || part == "." || part == "..") return "a path with an empty, . or .. part";
    std::string lower(part);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == ".git") return "a path inside .git";
  }
  return "";
}

absl::StatusOr<std::string> Inflate(std::string_view packed, uint64_t raw_size) {
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK) return absl::InternalError("zlib: inflateInit failed");
  std::string out;
  // Grown as bytes arrive, never from the header's claim alone, so a small
  // forged input cannot make a large allocation.
  std::string chunk(64 * 1024, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  stream.avail_in = static_cast<uInt>(packed.size());
  int code = Z_OK;
  while (code != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    code = inflate(&stream, Z_NO_FLUSH);
    if (code != Z_OK && code != Z_STREAM_END) {
      inflateEnd(&stream);
      return Corrupt(StrCat("the compressed data does not inflate (zlib ", code, ")"));
    }
    out.append(chunk.data(), chunk.size() - stream.avail_out);
    if (out.size() > raw_size) {
      inflateEnd(&stream);
      return Corrupt("more data than the header says");
    }
    if (code == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      return Corrupt("the compressed data ends early");
    }
  }
  const bool trailing = stream.avail_in != 0;
  inflateEnd(&stream);
  if (trailing) return Corrupt("bytes after the compressed data");
  if (out.size() != raw_size) return Corrupt("less data than the header says");
  return out;
}

absl::StatusOr<ChangeSet> ParseRaw(std::string_view raw) {
  Reader r(raw);
  ChangeSet out;
  if (!r.Bytes(GIT_OID_HEXSZ, &out.base_commit) || !git::ParseOid(out.base_commit).ok()) {
    return Corrupt("no base commit");
  }
  uint32_t notes;
  if (!r.U32(&notes)) return Corrupt("cut short in the notes");
  for (uint32_t i = 0; i < notes; ++i) {
    std::string note;
    if (!r.Bytes32(&note)) return Corrupt("cut short in the notes");
    out.notes.push_back(std::move(note));
  }
  uint32_t count;
  if (!r.U32(&count)) return Corrupt("cut short before the entries");
  std::set<std::string> symlinks;
  for (uint32_t i = 0; i < count; ++i) {
    ChangeEntry e;
    uint8_t has_base, kind;
    if (!r.Bytes32(&e.path) || !r.U8(&has_base)) return Corrupt("cut short in an entry");
    if (std::string why = UnsafePathReason(e.path); !why.empty()) {
      return Corrupt(StrCat(why, " ('", e.path, "')"));
    }
    if (!out.entries.empty() && !(out.entries.back().path < e.path)) {
      return Corrupt(StrCat("entries out of order or repeated at '", e.path, "'"));
    }
    if (has_base > 1) return Corrupt(StrCat("a bad base flag for '", e.path, "'"));
    if (has_base == 1) {
      std::string id;
      if (!r.Bytes(GIT_OID_RAWSZ, &id)) return Corrupt("cut short in an entry");
      git_oid oid;
      std::memcpy(oid.id, id.data(), GIT_OID_RAWSZ);
      e.base_blob = oid;
    }
    if (!r.U8(&kind) || kind > 2) return Corrupt(StrCat("a bad entry kind for '", e.path, "'"));
    e.kind = static_cast<EntryKind>(kind);
    if (e.kind == EntryKind::kFile) {
      if (!r.U32(&e.mode)) return Corrupt("cut short in an entry");
      if (e.mode != 0644 && e.mode != 0755) {
        return Corrupt(StrCat("mode ", e.mode, " for '", e.path, "' (want 0644 or 0755)"));
      }
    }
    if (e.kind != EntryKind::kDeleted && !r.Bytes64(&e.data)) {
      return Corrupt(StrCat("cut short in the data of '", e.path, "'"));
    }
    if (e.kind == EntryKind::kDeleted && !e.base_blob.has_value()) {
      return Corrupt(StrCat("a deletion of '", e.path, "', which the base does not have"));
    }
    if (e.kind == EntryKind::kSymlink) symlinks.insert(e.path);
    out.entries.push_back(std::move(e));
  }
  if (!r.done()) return Corrupt("bytes after the last entry");
  // A file below a symlink the change set makes would be written wherever
  // the link points.
  for (const ChangeEntry& e : out.entries) {
    for (size_t slash = e.path.find('/'); slash != std::string::npos;
         slash = e.path.find('/', slash + 1)) {
      if (symlinks.contains(e.path.substr(0, slash))) {
        return Corrupt(
            StrCat("'", e.path, "' is below the symlink '", e.path.substr(0, slash), "'"));
      }
    }
  }
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

  std::string out(kMagic, sizeof(kMagic));
  PutU32(out, kBundleVersion);
  PutU32(out, 0);  // flags
  PutU64(out, raw.size());
  PutU64(out, packed.size());
  PutU32(out, Crc32(packed));
  PutU32(out, Crc32(raw));
  out += packed;
  return out;
}

absl::StatusOr<ChangeSet> Decode(std::string_view bundle) {
  if (bundle.size() < sizeof(kMagic) || std::memcmp(bundle.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(
        "not a change set bundle (it does not start with K8HZCSET); make one with k8shazgpu vllm "
        "package");
  }
  if (bundle.size() < kHeaderSize) {
    return Corrupt(StrCat("truncated: ", bundle.size(), " bytes, shorter than the header"));
  }
  Reader header(bundle.substr(sizeof(kMagic), kHeaderSize - sizeof(kMagic)));
  uint32_t version, flags, packed_crc, raw_crc;
  uint64_t raw_size, packed_size;
  header.U32(&version);
  header.U32(&flags);
  header.U64(&raw_size);
  header.U64(&packed_size);
  header.U32(&packed_crc);
  header.U32(&raw_crc);
  if (version != kBundleVersion) {
    return absl::FailedPreconditionError(StrCat("change set bundle version ", version,
                                                " is not the one this k8shazgpu reads (",
                                                kBundleVersion, "); use matching versions"));
  }
  if (flags != 0) return Corrupt(StrCat("unknown flags ", flags));
  const std::string_view packed = bundle.substr(kHeaderSize);
  if (packed.size() < packed_size) {
    return Corrupt(StrCat("truncated: ", packed.size(), " of ", packed_size,
                          " compressed bytes (a missing part?)"));
  }
  if (packed.size() > packed_size) return Corrupt("bytes after the compressed data");
  if (Crc32(packed) != packed_crc) return Corrupt("checksum mismatch in the compressed data");
  absl::StatusOr<std::string> raw = Inflate(packed, raw_size);
  if (!raw.ok()) return raw.status();
  if (Crc32(*raw) != raw_crc) return Corrupt("checksum mismatch in the inflated data");
  return ParseRaw(*raw);
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
