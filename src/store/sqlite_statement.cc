#include "store/sqlite_statement.h"

#include "core/strings.h"

namespace canhazgpu::store {

absl::Status SqliteError(sqlite3* db, int rc, std::string_view path) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(
          StrCat("state file ", path, " is locked by another canhazgpu process (", detail, ")"));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(StrCat("cannot write state file ", path, ": ", detail));
    case SQLITE_CANTOPEN:
      return absl::PermissionDeniedError(StrCat("cannot open state file ", path, ": ", detail));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::DataLossError(
          StrCat("state file ", path, " is corrupted or not a canhazgpu database (", detail, ")"));
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(StrCat("state file ", path, ": ", detail));
    default:
      return absl::InternalError(StrCat("state file ", path, ": ", detail));
  }
}

Statement::Statement(sqlite3* db, std::string_view path, const char* sql) : db_(db), path_(path) {
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) status_ = SqliteError(db, rc, path_);
}

int StatementCache::Get(const char* sql, sqlite3_stmt** out) {
  auto [it, inserted] = statements_.try_emplace(sql, nullptr);
  if (inserted) {
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &it->second, nullptr);
    if (rc != SQLITE_OK) {
      statements_.erase(it);
      *out = nullptr;
      return rc;
    }
  }
  *out = it->second;
  return SQLITE_OK;
}

void StatementCache::Clear() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
}

Statement::Statement(StatementCache& cache, std::string_view path, const char* sql)
    : db_(cache.db()), path_(path), cached_(true) {
  int rc = cache.Get(sql, &stmt_);
  if (rc != SQLITE_OK) status_ = SqliteError(db_, rc, path_);
}

Statement::~Statement() {
  if (!cached_) {
    sqlite3_finalize(stmt_);
  } else if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement& Statement::Bind(int64_t value) {
  if (stmt_ != nullptr) sqlite3_bind_int64(stmt_, next_bind_, value);
  ++next_bind_;
  return *this;
}

Statement& Statement::Bind(std::string_view value) {
  if (stmt_ != nullptr) {
    sqlite3_bind_text(stmt_, next_bind_, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
  }
  ++next_bind_;
  return *this;
}

Statement& Statement::Bind(const std::optional<int64_t>& value) {
  if (value) return Bind(*value);
  if (stmt_ != nullptr) sqlite3_bind_null(stmt_, next_bind_);
  ++next_bind_;
  return *this;
}

Statement& Statement::BindOptional(const std::optional<std::string>& value) {
  if (value) return Bind(std::string_view(*value));
  if (stmt_ != nullptr) sqlite3_bind_null(stmt_, next_bind_);
  ++next_bind_;
  return *this;
}

bool Statement::Step() {
  if (!status_.ok()) return false;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = SqliteError(db_, rc, path_);
  return false;
}

absl::Status Statement::Exec() {
  while (Step()) {
  }
  return status_;
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<int64_t> Statement::OptionalInt(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return Int(column);
}

std::optional<std::string> Statement::OptionalText(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return Text(column);
}

std::string Statement::Text(int column) const {
  // The stored bytes exactly: text need not be UTF-8 (it is what users
  // typed), and the length comes from SQLite, not from a terminating NUL.
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

}  // namespace canhazgpu::store
