#include "engine/results_reader.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace lemmalab {

ResultsReader::ResultsReader(const std::filesystem::path& file) : file_(file) {
  if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw UserError(fmt::format("{}: cannot open: {}", file.string(), message));
  }
  sqlite3_busy_timeout(db_, 10000);
}

ResultsReader::~ResultsReader() { sqlite3_close(db_); }

void ResultsReader::ForEachRow(const char* sql, const std::function<void(sqlite3_stmt*)>& row) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr) != SQLITE_OK) {
    throw UserError(fmt::format("{}: not a lemmalab results database ({})", file_.string(),
                                sqlite3_errmsg(db_)));
  }
  try {
    while (sqlite3_step(statement) == SQLITE_ROW) row(statement);
  } catch (...) {
    sqlite3_finalize(statement);
    throw;
  }
  sqlite3_finalize(statement);
}

bool ResultsReader::HasColumn(std::string_view table, std::string_view column) {
  bool found = false;
  ForEachRow(fmt::format("PRAGMA table_info({})", table).c_str(),
             [&](sqlite3_stmt* row) { found = found || Text(row, 1) == column; });
  return found;
}

std::string ResultsReader::Text(sqlite3_stmt* row, int column) {
  const unsigned char* text = sqlite3_column_text(row, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

double ResultsReader::Real(sqlite3_stmt* row, int column) {
  return sqlite3_column_type(row, column) == SQLITE_NULL ? std::nan("")
                                                         : sqlite3_column_double(row, column);
}

}  // namespace lemmalab
