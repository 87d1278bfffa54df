// libFuzzer target: a change set bundle as `k8shazgpu vllm unpack` reads it
// from a ConfigMap anyone in the namespace could edit. Beyond crashes,
// leaks and timeouts it checks that a refusal is one line; that small
// expansion limits hold (a few KiB may inflate to megabytes, and the
// reader must stop at the limit, not after); that the streamed read hands
// over exactly the sizes it announced; that the index agrees with the full
// decode; and that what decodes encodes back to a bundle that decodes to
// the same entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "changeset/bundle.h"
#include "changeset/bundle_reader.h"

namespace {

using namespace canhazgpu::changeset;  // NOLINT

// Small, so that the fuzzer reaches them with inputs of a few KiB.
constexpr BundleLimits kFuzzLimits = {.expanded = 1 << 20, .file = 256 << 10};

// Checks what ReadBundle promises a sink, whatever the input.
class CheckingSink : public BundleSink {
 public:
  absl::Status OnStart(const ChangeSet& header) override {
    if (started_ || !header.entries.empty()) std::abort();
    started_ = true;
    return absl::OkStatus();
  }
  absl::Status OnEntry(const ChangeEntry& entry, uint64_t size) override {
    if (!started_ || in_entry_ || size > kFuzzLimits.file) std::abort();
    if (entry.kind != EntryKind::kFile && size != 0) std::abort();
    in_entry_ = true;
    left_ = size;
    return absl::OkStatus();
  }
  absl::Status OnData(std::string_view piece) override {
    if (!in_entry_ || piece.empty() || piece.size() > left_) std::abort();
    left_ -= piece.size();
    total_ += piece.size();
    if (total_ > kFuzzLimits.expanded) std::abort();
    return absl::OkStatus();
  }
  absl::Status OnEntryEnd() override {
    if (!in_entry_ || left_ != 0) std::abort();
    in_entry_ = false;
    return absl::OkStatus();
  }

 private:
  bool started_ = false;
  bool in_entry_ = false;
  uint64_t left_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckingSink sink;
  const absl::Status streamed = ReadBundle(input, sink, kFuzzLimits);
  absl::StatusOr<ChangeSet> decoded = Decode(input, kFuzzLimits);
  absl::StatusOr<ChangeSet> index = DecodeIndex(input, kFuzzLimits);
  if (streamed.ok() != decoded.ok() || index.ok() != decoded.ok()) std::abort();
  if (!decoded.ok()) {
    if (decoded.status().message().find('\n') != std::string_view::npos) std::abort();
    if (decoded.status() != streamed || index.status() != streamed) std::abort();
    return 0;
  }
  if (index->entries.size() != decoded->entries.size()) std::abort();
  uint64_t total = 0;
  for (size_t i = 0; i < decoded->entries.size(); ++i) {
    const ChangeEntry& e = decoded->entries[i];
    if (e.kind == EntryKind::kFile && e.data.size() > kFuzzLimits.file) std::abort();
    if (index->entries[i].path != e.path ||
        (e.kind == EntryKind::kFile && !index->entries[i].data.empty())) {
      std::abort();
    }
    total += e.data.size();
  }
  if (total > kFuzzLimits.expanded) std::abort();
  absl::StatusOr<ChangeSet> again = Decode(Encode(*decoded), kFuzzLimits);
  if (!again.ok() || again->entries.size() != decoded->entries.size()) std::abort();
  for (size_t i = 0; i < again->entries.size(); ++i) {
    if (again->entries[i].path != decoded->entries[i].path ||
        again->entries[i].data != decoded->entries[i].data) {
      std::abort();
    }
  }
  return 0;
}
