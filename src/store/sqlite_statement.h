// A thin RAII wrapper over sqlite3_stmt with positional binding, used only
// inside store/. Errors carry the database file name and SQLite's message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"

namespace canhazgpu::store {

// Maps a SQLite result code to a status whose message names the file.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view path);

// Prepared statements kept for a connection's lifetime: a command runs the
// same query once per GPU, and preparing them again was half of its CPU time.
class StatementCache {
 public:
  explicit StatementCache(sqlite3* db) : db_(db) {}
  ~StatementCache() { Clear(); }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  sqlite3* db() const { return db_; }
  // The statement for `sql` (a string literal: it is the key), prepared on
  // first use; SQLITE_OK or the error code of preparing it.
  int Get(const char* sql, sqlite3_stmt** out);
  // Finalizes every statement; required before the connection closes.
  void Clear();

 private:
  sqlite3* db_;
  std::unordered_map<std::string_view, sqlite3_stmt*> statements_;
};

class Statement {
 public:
  // A one-off statement, finalized when this goes away.
  Statement(sqlite3* db, std::string_view path, const char* sql);
  // A statement from `cache`, reset and unbound when this goes away.
  Statement(StatementCache& cache, std::string_view path, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int64_t value);
  Statement& Bind(std::string_view value);
  Statement& Bind(const std::optional<int64_t>& value);
  // Text or NULL. (Not a Bind() overload: a std::string would convert to
  // both this and std::string_view.)
  Statement& BindOptional(const std::optional<std::string>& value);

  // Steps once: true with a row, false when done; errors in status().
  bool Step();
  absl::Status status() const { return status_; }
  // Runs to completion, for statements without rows.
  absl::Status Exec();

  int64_t Int(int column) const;
  std::optional<int64_t> OptionalInt(int column) const;
  std::string Text(int column) const;
  std::optional<std::string> OptionalText(int column) const;

 private:
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
  bool cached_ = false;
  int next_bind_ = 1;
  absl::Status status_;
};

}  // namespace canhazgpu::store
