// A thin RAII wrapper over sqlite3_stmt with positional binding, used only
// inside store/. Errors carry the database file name and SQLite's message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace canhazgpu::store {

// Maps a SQLite result code to a status whose message names the file.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view path);

class Statement {
 public:
  Statement(sqlite3* db, std::string_view path, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int64_t value);
  Statement& Bind(std::string_view value);
  Statement& Bind(const std::optional<int64_t>& value);

  // Steps once: true with a row, false when done; errors in status().
  bool Step();
  absl::Status status() const { return status_; }
  // Runs to completion, for statements without rows.
  absl::Status Exec();

  int64_t Int(int column) const;
  std::optional<int64_t> OptionalInt(int column) const;
  std::string Text(int column) const;

 private:
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
  int next_bind_ = 1;
  absl::Status status_;
};

}  // namespace canhazgpu::store
