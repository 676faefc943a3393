#include "cli/evidence_reader.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "cli/results.h"
#include "core/error.h"

namespace lemmalab {
namespace {

using Database = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;
using Statement = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

Statement Query(sqlite3* db, const char* sql, const std::filesystem::path& file) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    throw UserError(
        fmt::format("{}: not a lemmalab results database ({})", file.string(), sqlite3_errmsg(db)));
  }
  return Statement(s, &sqlite3_finalize);
}

std::string Text(sqlite3_stmt* s, int column) {
  const unsigned char* text = sqlite3_column_text(s, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

double Real(sqlite3_stmt* s, int column) {
  return sqlite3_column_type(s, column) == SQLITE_NULL ? std::nan("")
                                                       : sqlite3_column_double(s, column);
}

int Worker(sqlite3_stmt* s, int column) {
  return sqlite3_column_type(s, column) == SQLITE_NULL ? kRunWide : sqlite3_column_int(s, column);
}

Certainty ParseCertainty(const std::string& name) {
  if (name == "exact") return Certainty::kExact;
  if (name == "bound") return Certainty::kBound;
  return Certainty::kEstimate;
}

}  // namespace

std::vector<RunEvidence> ReadEvidence(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / ResultsWriter::kDatabase;
  if (!std::filesystem::is_regular_file(file)) {
    throw UserError(fmt::format(
        "--from {}: no {} there (results are written only when a run finishes; run lemmalab "
        "check without --from to produce them)",
        dir.string(), ResultsWriter::kDatabase));
  }
  sqlite3* raw = nullptr;
  const int opened = sqlite3_open_v2(file.string().c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Database db(raw, &sqlite3_close);
  if (opened != SQLITE_OK) {
    throw UserError(fmt::format("{}: cannot open: {}", file.string(), sqlite3_errmsg(raw)));
  }

  std::map<std::string, std::string> meta;
  for (Statement s = Query(db.get(), "SELECT key, value FROM meta", file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    meta[Text(s.get(), 0)] = Text(s.get(), 1);
  }
  for (const char* key : {"seed", "steps", "workers", "precision", "dimension"}) {
    if (!meta.contains(key)) {
      throw UserError(fmt::format("{}: the results lack '{}' (written by an older lemmalab?)",
                                  file.string(), key));
    }
  }

  std::vector<Constant> problem_constants;
  std::map<std::int64_t, std::vector<Constant>> run_constants;
  for (Statement s = Query(db.get(),
                           "SELECT run_id, name, value, certainty, basis FROM constants ORDER BY "
                           "rowid",
                           file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    Constant c{Text(s.get(), 1), Real(s.get(), 2), ParseCertainty(Text(s.get(), 3)),
               Text(s.get(), 4)};
    if (sqlite3_column_type(s.get(), 0) == SQLITE_NULL) {
      problem_constants.push_back(std::move(c));
    } else {
      run_constants[sqlite3_column_int64(s.get(), 0)].push_back(std::move(c));
    }
  }

  std::vector<RunEvidence> runs;
  std::map<std::int64_t, std::size_t> index;
  for (Statement s = Query(db.get(),
                           "SELECT run_id, label, optimizer, status, steps_done, final_loss FROM "
                           "runs ORDER BY run_id",
                           file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    RunEvidence run;
    run.label = Text(s.get(), 1);
    run.optimizer = Text(s.get(), 2);
    run.status = Text(s.get(), 3);
    run.steps_done = sqlite3_column_int64(s.get(), 4);
    run.final_loss = Real(s.get(), 5);
    run.seed = std::stoull(meta["seed"]);
    run.workers = std::stoi(meta["workers"]);
    run.dimension = std::stoll(meta["dimension"]);
    run.precision = meta["precision"] == "fp64" ? Precision::kFp64 : Precision::kFp32;
    run.constants = problem_constants;
    const std::int64_t id = sqlite3_column_int64(s.get(), 0);
    for (const Constant& c : run_constants[id]) run.constants.push_back(c);
    index[id] = runs.size();
    runs.push_back(std::move(run));
  }
  for (Statement s = Query(
           db.get(), "SELECT run_id, key, value, type FROM hyperparameters ORDER BY rowid", file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s.get(), 0)));
    const std::string type = Text(s.get(), 3);
    Hyperparameters::Value value;
    if (type == "boolean") {
      value = sqlite3_column_int64(s.get(), 2) != 0;
    } else if (type == "integer") {
      value = static_cast<std::int64_t>(sqlite3_column_int64(s.get(), 2));
    } else if (type == "number") {
      value = Real(s.get(), 2);
    } else {
      value = Text(s.get(), 2);
    }
    run.hyperparameters.Set(Text(s.get(), 1), std::move(value));
  }
  for (Statement s = Query(
           db.get(), "SELECT run_id, step, name, worker, value FROM metrics ORDER BY rowid", file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s.get(), 0)));
    run.metrics[Text(s.get(), 2)].points.push_back(
        {sqlite3_column_int64(s.get(), 1), Worker(s.get(), 3), Real(s.get(), 4)});
  }
  for (Statement s = Query(db.get(),
                           "SELECT run_id, step, probe, series, worker, value FROM probes ORDER "
                           "BY rowid",
                           file);
       sqlite3_step(s.get()) == SQLITE_ROW;) {
    RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s.get(), 0)));
    run.probes[fmt::format("{}/{}", Text(s.get(), 2), Text(s.get(), 3))].points.push_back(
        {sqlite3_column_int64(s.get(), 1), Worker(s.get(), 4), Real(s.get(), 5)});
  }
  return runs;
}

}  // namespace lemmalab
