// A results database (engine/results.h) opened read-only, row by row: what `check --from` and
// `report` read results through. Reading never blocks a sweep writing the same database.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace lemmalab {

class ResultsReader {
 public:
  // UserError naming the file when it cannot be opened.
  explicit ResultsReader(const std::filesystem::path& file);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  // Calls `row` with the statement positioned on each row of `sql`; UserError naming the file
  // when the database has no such tables (not lemmalab's, or an older version's).
  void ForEachRow(const char* sql, const std::function<void(sqlite3_stmt*)>& row);

  // Whether `table` exists with `column` (results of an older lemmalab lack newer ones).
  bool HasColumn(std::string_view table, std::string_view column);

  // A column as text ("" for NULL) and as a number (NaN for NULL: SQLite stores NaN as NULL).
  static std::string Text(sqlite3_stmt* row, int column);
  static double Real(sqlite3_stmt* row, int column);

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
};

}  // namespace lemmalab
