#pragma once
// Thin RAII over sqlite3: a Database owns the connection, a Statement owns a prepared statement.
// Errors name the database file and the SQLite message.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cmax::store {

class Statement;

/// One connection. Not thread-safe: use one per thread.
class Database {
 public:
  /// Opens (creating when missing) the database file; ":memory:" for a private in-memory one.
  static Result<Database> open(const std::string& path);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Runs one or more statements that return no rows.
  Result<void> exec(std::string_view sql);
  /// Prepares one statement.
  Result<Statement> prepare(std::string_view sql);
  std::int64_t last_insert_rowid() const;
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
  friend class Statement;
};

/// A prepared statement; bind 1-based parameters, step, read columns.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind_null(int index);
  /// true when a row is ready, false when done; an error otherwise.
  Result<bool> step();
  /// Steps to completion, expecting no rows (INSERT, UPDATE).
  Result<void> run();
  void reset();

  std::string column_text(int index) const;
  std::int64_t column_int(int index) const;
  double column_double(int index) const;
  bool column_is_null(int index) const;

 private:
  Statement(sqlite3_stmt* stmt, const Database* db) : stmt_(stmt), db_(db) {}
  sqlite3_stmt* stmt_ = nullptr;
  const Database* db_ = nullptr;
  friend class Database;
};

}  // namespace cmax::store
