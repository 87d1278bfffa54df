// The one YAML reader: a YAML document as JSON, bounded so that a small
// hostile file cannot take the process's memory or stack. Every module that
// reads YAML (config files, kubeconfigs, CDI specs, apply bodies and
// manifests in the simulated API server) reads it here and walks JSON.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::yaml {

struct ReadOptions {
  // Every scalar a JSON string, exactly as written (`0x10`, `yes`, `1e3`
  // stay text), for readers that keep settings as text. Otherwise scalars
  // are typed as Kubernetes reads them: quoted ones are strings, then
  // booleans, null, integers, numbers.
  bool scalars_as_text = false;
  // Fill Document::lines.
  bool record_lines = false;
  // A node more than this many keys and indices below the root is refused.
  int max_depth = 128;
  // Values counted as they are made: YAML aliases let a small file name the
  // same subtree many times ("billion laughs"), and each use counts, so
  // expansion stops at the bound instead of at the end of memory.
  int64_t max_values = 1'000'000;
};

// One document and, when asked, where each of its values starts.
struct Document {
  nlohmann::json value;  // null for an empty document
  // JSON pointer ("" for the root, "/clusters/0/name") → 1-based line. A
  // null value's line is its key's.
  std::map<std::string, int> lines;

  // The line of `pointer`, 0 when not recorded.
  int LineOf(const std::string& pointer) const;
};

// Why a read failed: the parser's or a bound's message, and its line (0 when
// it is about the whole text, as the value bound is).
struct ReadError {
  int line = 0;
  std::string message;
};

// The first document of `text`. On failure returns InvalidArgument with
// "line N: message" and, when `error` is given, fills it.
absl::StatusOr<Document> ReadDocument(std::string_view text, const ReadOptions& options = {},
                                      ReadError* error = nullptr);

// ReadDocument's value.
absl::StatusOr<nlohmann::json> ToJson(std::string_view text, const ReadOptions& options = {});

// Every document of a multi-document stream, without the empty ones (a file
// of comments, a trailing `---`), as `kubectl apply -f` reads a file. The
// value bound holds for the whole stream.
absl::StatusOr<std::vector<nlohmann::json>> DocumentsToJson(std::string_view text,
                                                            const ReadOptions& options = {});

// A boolean as YAML 1.1 (and yaml-cpp) writes one: true/false, yes/no,
// on/off, y/n, each in lower, Title or UPPER case; nullopt otherwise.
std::optional<bool> BoolOf(std::string_view text);

// JSON pointer escaping of one key ("a/b" → "a~1b", "~" → "~0").
std::string PointerToken(std::string_view key);

}  // namespace canhazgpu::yaml
