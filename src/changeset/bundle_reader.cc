#include "changeset/bundle_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>

#include "changeset/bundle.h"
#include "changeset/bundle_format.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

using internal::Crc32;

// Big enough that zlib's call overhead does not show, small enough to
// stay in the CPU cache on its way to the sink.
constexpr size_t kInflateChunk = 64 * 1024;

absl::Status CorruptBundle(const std::string& why) {
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

// The raw payload, inflated on demand: reads never go past what the
// header promised, and every byte produced is counted and checksummed.
class InflatingReader {
 public:
  InflatingReader(std::string_view packed, uint64_t raw_size)
      : packed_(packed), raw_size_(raw_size), chunk_(kInflateChunk, '\0') {}
  ~InflatingReader() {
    if (initialized_) inflateEnd(&stream_);
  }
  InflatingReader(const InflatingReader&) = delete;
  InflatingReader& operator=(const InflatingReader&) = delete;

  absl::Status Init() {
    if (inflateInit(&stream_) != Z_OK) return absl::InternalError("zlib: inflateInit failed");
    initialized_ = true;
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed_.data()));
    stream_.avail_in = static_cast<uInt>(packed_.size());
    return absl::OkStatus();
  }

  // Hands the next `n` bytes to `take`, a piece at a time; false when the
  // payload ends first (`error_` says why when it is not a plain end).
  template <typename Take>
  bool Read(uint64_t n, Take take) {
    while (n > 0) {
      if (pos_ == end_ && !Fill()) return false;
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, end_ - pos_));
      if (absl::Status s = take(std::string_view(chunk_.data() + pos_, k)); !s.ok()) {
        error_ = s;
        return false;
      }
      pos_ += k;
      n -= k;
    }
    return true;
  }
  bool Bytes(uint64_t n, std::string* out) {
    out->clear();
    return Read(n, [out](std::string_view piece) {
      out->append(piece);
      return absl::OkStatus();
    });
  }
  bool U8(uint8_t* v) {
    uint64_t wide;
    if (!Fixed(1, &wide)) return false;
    *v = static_cast<uint8_t>(wide);
    return true;
  }
  bool U32(uint32_t* v) {
    uint64_t wide;
    if (!Fixed(4, &wide)) return false;
    *v = static_cast<uint32_t>(wide);
    return true;
  }
  bool U64(uint64_t* v) { return Fixed(8, v); }

  // Why the last read failed: a zlib or sink error, else `fallback`.
  absl::Status Error(const std::string& fallback) const {
    return error_.ok() ? CorruptBundle(fallback) : error_;
  }

  // After the last entry: the payload must end here, exactly where the
  // header said, with the checksum it gave.
  absl::Status Finish(uint32_t raw_crc) {
    if (pos_ != end_ || Fill()) return CorruptBundle("bytes after the last entry");
    if (!error_.ok()) return error_;
    if (stream_.avail_in != 0) return CorruptBundle("bytes after the compressed data");
    if (produced_ != raw_size_) return CorruptBundle("less data than the header says");
    if (crc_ != raw_crc) return CorruptBundle("checksum mismatch in the inflated data");
    return absl::OkStatus();
  }

 private:
  bool Fixed(int n, uint64_t* v) {
    *v = 0;
    int shift = 0;
    return Read(static_cast<uint64_t>(n), [&](std::string_view piece) {
      for (char c : piece) {
        *v |= static_cast<uint64_t>(static_cast<uint8_t>(c)) << shift;
        shift += 8;
      }
      return absl::OkStatus();
    });
  }

  // Inflates the next chunk; false at the end of the stream or on an error.
  bool Fill() {
    pos_ = end_ = 0;
    while (!ended_ && end_ == 0) {
      stream_.next_out = reinterpret_cast<Bytef*>(chunk_.data());
      stream_.avail_out = static_cast<uInt>(chunk_.size());
      const int code = inflate(&stream_, Z_NO_FLUSH);
      if (code != Z_OK && code != Z_STREAM_END) {
        error_ = CorruptBundle(StrCat("the compressed data does not inflate (zlib ", code, ")"));
        return false;
      }
      end_ = chunk_.size() - stream_.avail_out;
      produced_ += end_;
      if (produced_ > raw_size_) {
        error_ = CorruptBundle("more data than the header says");
        return false;
      }
      crc_ = Crc32(crc_, std::string_view(chunk_.data(), end_));
      if (code == Z_STREAM_END) {
        ended_ = true;
      } else if (stream_.avail_in == 0 && stream_.avail_out != 0) {
        error_ = CorruptBundle("the compressed data ends early");
        return false;
      }
    }
    return end_ > 0;
  }

  std::string_view packed_;
  uint64_t raw_size_;
  z_stream stream_{};
  bool initialized_ = false;
  bool ended_ = false;
  std::string chunk_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t produced_ = 0;
  uint32_t crc_ = 0;
  absl::Status error_;
};

struct BundleHeader {
  uint64_t raw_size = 0;
  uint32_t raw_crc = 0;
  std::string_view packed;
};

absl::StatusOr<BundleHeader> ReadHeader(std::string_view bundle, const BundleLimits& limits) {
  using internal::kBundleHeaderSize;
  using internal::kBundleMagic;
  if (bundle.size() < sizeof(kBundleMagic) ||
      std::memcmp(bundle.data(), kBundleMagic, sizeof(kBundleMagic)) != 0) {
    return absl::InvalidArgumentError(
        "not a change set bundle (it does not start with K8HZCSET); make one with k8shazgpu vllm "
        "package");
  }
  if (bundle.size() < kBundleHeaderSize) {
    return CorruptBundle(StrCat("truncated: ", bundle.size(), " bytes, shorter than the header"));
  }
  uint64_t fields[6];
  const int widths[6] = {4, 4, 8, 8, 4, 4};  // version, flags, raw, packed, 2 CRCs
  size_t at = sizeof(kBundleMagic);
  for (int i = 0; i < 6; ++i) {
    fields[i] = 0;
    for (int b = 0; b < widths[i]; ++b) {
      fields[i] |= static_cast<uint64_t>(static_cast<uint8_t>(bundle[at++])) << (8 * b);
    }
  }
  const uint64_t version = fields[0], flags = fields[1], packed_size = fields[3];
  BundleHeader header{.raw_size = fields[2], .raw_crc = static_cast<uint32_t>(fields[5])};
  if (version != kBundleVersion) {
    return absl::FailedPreconditionError(StrCat("change set bundle version ", version,
                                                " is not the one this k8shazgpu reads (",
                                                kBundleVersion, "); use matching versions"));
  }
  if (flags != 0) return CorruptBundle(StrCat("unknown flags ", flags));
  header.packed = bundle.substr(kBundleHeaderSize);
  if (header.packed.size() < packed_size) {
    return CorruptBundle(StrCat("truncated: ", header.packed.size(), " of ", packed_size,
                                " compressed bytes (a missing part?)"));
  }
  if (header.packed.size() > packed_size) return CorruptBundle("bytes after the compressed data");
  if (Crc32(0, header.packed) != static_cast<uint32_t>(fields[4])) {
    return CorruptBundle("checksum mismatch in the compressed data");
  }
  // The header's count bounds what inflating may produce, so checking it
  // here bounds the whole read.
  if (header.raw_size > limits.expanded) {
    return absl::FailedPreconditionError(
        StrCat("change set bundle expands to ", FormatBytes(header.raw_size), ", over the ",
               FormatBytes(limits.expanded), " limit on a bundle's expanded size"));
  }
  return header;
}

// The entries after the notes, each checked and handed to `sink`.
absl::Status ReadEntries(InflatingReader& r, BundleSink& sink, const BundleLimits& limits) {
  uint32_t count;
  if (!r.U32(&count)) return r.Error("cut short before the entries");
  // Sorted order puts a symlink before any path below it.
  std::set<std::string> symlinks;
  std::string previous;
  for (uint32_t i = 0; i < count; ++i) {
    ChangeEntry e;
    uint8_t has_base, kind;
    uint32_t path_size;
    if (!r.U32(&path_size)) return r.Error("cut short in an entry");
    if (path_size > kMaxPathSize) {
      return CorruptBundle(StrCat("a path of ", path_size, " bytes (at most ", kMaxPathSize, ")"));
    }
    if (!r.Bytes(path_size, &e.path) || !r.U8(&has_base)) return r.Error("cut short in an entry");
    if (std::string why = UnsafePathReason(e.path); !why.empty()) {
      return CorruptBundle(StrCat(why, " ('", e.path, "')"));
    }
    if (i > 0 && !(previous < e.path)) {
      return CorruptBundle(StrCat("entries out of order or repeated at '", e.path, "'"));
    }
    for (size_t slash = e.path.find('/'); slash != std::string::npos;
         slash = e.path.find('/', slash + 1)) {
      // A file below a symlink the change set makes would be written
      // wherever the link points.
      if (symlinks.contains(e.path.substr(0, slash))) {
        return CorruptBundle(
            StrCat("'", e.path, "' is below the symlink '", e.path.substr(0, slash), "'"));
      }
    }
    if (has_base > 1) return CorruptBundle(StrCat("a bad base flag for '", e.path, "'"));
    if (has_base == 1) {
      std::string id;
      if (!r.Bytes(GIT_OID_RAWSZ, &id)) return r.Error("cut short in an entry");
      git_oid oid;
      std::memcpy(oid.id, id.data(), GIT_OID_RAWSZ);
      e.base_blob = oid;
    }
    if (!r.U8(&kind) || kind > 2) {
      return r.Error(StrCat("a bad entry kind for '", e.path, "'"));
    }
    e.kind = static_cast<EntryKind>(kind);
    if (e.kind == EntryKind::kFile) {
      if (!r.U32(&e.mode)) return r.Error("cut short in an entry");
      if (e.mode != 0644 && e.mode != 0755) {
        return CorruptBundle(StrCat("mode ", e.mode, " for '", e.path, "' (want 0644 or 0755)"));
      }
    }
    if (e.kind == EntryKind::kDeleted && !e.base_blob.has_value()) {
      return CorruptBundle(StrCat("a deletion of '", e.path, "', which the base does not have"));
    }
    uint64_t size = 0;
    if (e.kind != EntryKind::kDeleted && !r.U64(&size)) {
      return r.Error(StrCat("cut short in the data of '", e.path, "'"));
    }
    if (e.kind == EntryKind::kSymlink) {
      if (size > kMaxPathSize) {
        return CorruptBundle(StrCat("a symlink target of ", size, " bytes for '", e.path,
                                    "' (at most ", kMaxPathSize, ")"));
      }
      if (!r.Bytes(size, &e.data))
        return r.Error(StrCat("cut short in the data of '", e.path, "'"));
      symlinks.insert(e.path);
    }
    if (e.kind == EntryKind::kFile && size > limits.file) {
      return absl::FailedPreconditionError(StrCat("change set bundle: '", e.path, "' is ",
                                                  FormatBytes(size), ", over the ",
                                                  FormatBytes(limits.file), " limit on one file"));
    }
    RETURN_IF_ERROR(sink.OnEntry(e, e.kind == EntryKind::kFile ? size : 0));
    if (e.kind == EntryKind::kFile &&
        !r.Read(size, [&sink](std::string_view piece) { return sink.OnData(piece); })) {
      return r.Error(StrCat("cut short in the data of '", e.path, "'"));
    }
    RETURN_IF_ERROR(sink.OnEntryEnd());
    previous = std::move(e.path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadBundle(std::string_view bundle, BundleSink& sink, const BundleLimits& limits) {
  ASSIGN_OR_RETURN(const BundleHeader header, ReadHeader(bundle, limits));
  InflatingReader r(header.packed, header.raw_size);
  RETURN_IF_ERROR(r.Init());
  ChangeSet start;
  if (!r.Bytes(GIT_OID_HEXSZ, &start.base_commit)) return r.Error("no base commit");
  if (!git::ParseOid(start.base_commit).ok()) return CorruptBundle("no base commit");
  uint32_t notes;
  if (!r.U32(&notes)) return r.Error("cut short in the notes");
  for (uint32_t i = 0; i < notes; ++i) {
    std::string note;
    uint32_t size;
    if (!r.U32(&size) || !r.Bytes(size, &note)) return r.Error("cut short in the notes");
    start.notes.push_back(std::move(note));
  }
  RETURN_IF_ERROR(sink.OnStart(start));
  RETURN_IF_ERROR(ReadEntries(r, sink, limits));
  return r.Finish(header.raw_crc);
}

}  // namespace canhazgpu::changeset
