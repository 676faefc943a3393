#include "cli/results.h"

#include <fmt/format.h>

#include <cmath>
#include <concepts>
#include <fstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "cli/npy.h"
#include "core/error.h"

namespace lemmalab {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  run_id INTEGER PRIMARY KEY, label TEXT NOT NULL UNIQUE, optimizer TEXT NOT NULL,
  schedule TEXT NOT NULL, status TEXT NOT NULL, steps_done INTEGER NOT NULL,
  final_loss REAL, final_accuracy REAL, final_grad_sq_norm REAL, final_test_loss REAL,
  final_test_accuracy REAL, bits_sent_per_worker REAL, wall_seconds REAL,
  bytes_intra_per_step REAL, bytes_inter_per_step REAL, step_seconds REAL,
  comm_seconds_per_step REAL);
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, name TEXT NOT NULL,
  worker INTEGER, value REAL);
CREATE TABLE constants(
  run_id INTEGER REFERENCES runs(run_id), name TEXT NOT NULL, value REAL,
  certainty TEXT NOT NULL, basis TEXT NOT NULL);
CREATE TABLE shards(
  worker INTEGER NOT NULL, samples INTEGER NOT NULL, label INTEGER NOT NULL,
  count INTEGER NOT NULL);
CREATE TABLE hyperparameters(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), key TEXT NOT NULL, value, type TEXT NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE TABLE probes(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, probe TEXT NOT NULL,
  series TEXT NOT NULL, worker INTEGER, value REAL);
)sql";

// SQLite stores NaN as NULL; the CSV export writes it back as "nan".
void Bind(sqlite3_stmt* s, int i, double v) { sqlite3_bind_double(s, i, v); }
void Bind(sqlite3_stmt* s, int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }
void Bind(sqlite3_stmt* s, int i, int v) { sqlite3_bind_int(s, i, v); }
void Bind(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
// lemmalab's SQL is fixed text: a statement that does not prepare is a bug.
sqlite3_stmt* Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) != SQLITE_OK) {
    throw InternalError(fmt::format("sqlite: {}: {}", sql, sqlite3_errmsg(db)));
  }
  return statement;
}

// A hyperparameter as SQLite's own type (a boolean as 0 or 1; its type column says which). A
// template on the exact type, so that strings still bind as text through the overload above.
template <typename V>
requires std::same_as<V, Hyperparameters::Value>
void Bind(sqlite3_stmt* s, int i, const V& v) {
  std::visit(
      [&](const auto& x) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, bool>) {
          Bind(s, i, std::int64_t{x});
        } else if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::string>) {
          Bind(s, i, std::string_view(x));
        } else {
          Bind(s, i, x);
        }
      },
      v);
}

template <typename V>
void Bind(sqlite3_stmt* s, int i, const std::optional<V>& v) {
  if (v) {
    Bind(s, i, *v);
  } else {
    sqlite3_bind_null(s, i);
  }
}

}  // namespace

std::filesystem::path ResultsWriter::Partial(std::string_view name) const {
  return dir_ / fmt::format("{}.partial", name);
}

ResultsWriter::ResultsWriter(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_)) {
    throw UserError(fmt::format("--out {}: cannot create the results folder: {}", dir_.string(),
                                ec ? ec.message() : "a file of that name exists"));
  }
  for (const std::string_view name : {kDatabase, kMetrics, kParams}) {
    const std::filesystem::path target = dir_ / name;
    if (std::filesystem::exists(target) && !std::filesystem::is_regular_file(target)) {
      throw UserError(
          fmt::format("--out {}: '{}' exists and is not a file; results cannot "
                      "replace it",
                      dir_.string(), name));
    }
  }
  RemovePartials();  // left over from an interrupted run
  Open(Partial(kDatabase).string());
}

ResultsWriter::ResultsWriter() : discarding_(true) { Open(":memory:"); }

ResultsWriter::ResultsWriter(ResultsWriter&& other) noexcept
    : dir_(std::move(other.dir_)),
      db_(std::exchange(other.db_, nullptr)),
      insert_metric_(std::exchange(other.insert_metric_, nullptr)),
      insert_probe_(std::exchange(other.insert_probe_, nullptr)),
      committed_(std::exchange(other.committed_, true)),
      discarding_(other.discarding_) {}

void ResultsWriter::Open(const std::string& db_path) {
  if (sqlite3_open(db_path.c_str(), &db_) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: cannot create: {}", db_path, message));
  }
  Exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;");
  Exec(kSchema);
  Exec("BEGIN");
  insert_metric_ = Prepare(db_, "INSERT INTO metrics VALUES (?, ?, ?, ?, ?)");
  insert_probe_ = Prepare(db_, "INSERT INTO probes VALUES (?, ?, ?, ?, ?, ?)");
}

ResultsWriter::~ResultsWriter() {
  sqlite3_finalize(insert_metric_);
  sqlite3_finalize(insert_probe_);
  if (db_ != nullptr) sqlite3_close(db_);
  if (!committed_) RemovePartials();
}

void ResultsWriter::RemovePartials() noexcept {
  if (discarding_ || dir_.empty()) return;
  std::error_code ignored;
  for (const std::string_view name : {kDatabase, kMetrics, kParams}) {
    std::filesystem::remove(Partial(name), ignored);
  }
}

void ResultsWriter::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw UserError(fmt::format("{}: {}", Partial(kDatabase).string(), message));
  }
}

namespace {

template <typename... Args>
void Execute(sqlite3* db, sqlite3_stmt* statement, const Args&... args) {
  sqlite3_reset(statement);
  int i = 0;
  (Bind(statement, ++i, args), ...);
  if (sqlite3_step(statement) != SQLITE_DONE) {
    throw UserError(fmt::format("writing results failed: {}", sqlite3_errmsg(db)));
  }
}

// A statement prepared for one use.
template <typename... Args>
void ExecuteOnce(sqlite3* db, const char* sql, const Args&... args) {
  sqlite3_stmt* statement = Prepare(db, sql);
  try {
    Execute(db, statement, args...);
  } catch (...) {
    sqlite3_finalize(statement);
    throw;
  }
  sqlite3_finalize(statement);
}

}  // namespace

void ResultsWriter::SetMeta(std::string_view key, std::string_view value) {
  ExecuteOnce(db_, "INSERT OR REPLACE INTO meta VALUES (?, ?)", key, value);
}

std::int64_t ResultsWriter::AddRun(const RunRecord& run) {
  ExecuteOnce(db_,
              "INSERT INTO runs(label, optimizer, schedule, status, steps_done) "
              "VALUES (?, ?, ?, ?, ?)",
              run.label, run.optimizer, run.schedule, run.status, run.steps_done);
  return sqlite3_last_insert_rowid(db_);
}

void ResultsWriter::UpdateRun(std::int64_t run_id, const RunRecord& run) {
  ExecuteOnce(db_,
              "UPDATE runs SET status = ?, steps_done = ?, final_loss = ?, final_accuracy = ?, "
              "final_grad_sq_norm = ?, final_test_loss = ?, final_test_accuracy = ?, "
              "bits_sent_per_worker = ?, wall_seconds = ?, bytes_intra_per_step = ?, "
              "bytes_inter_per_step = ?, step_seconds = ?, comm_seconds_per_step = ? "
              "WHERE run_id = ?",
              run.status, run.steps_done, run.final_loss, run.final_accuracy,
              run.final_grad_sq_norm, run.final_test_loss, run.final_test_accuracy,
              run.bits_sent_per_worker, run.wall_seconds, run.bytes_intra_per_step,
              run.bytes_inter_per_step, run.step_seconds, run.comm_seconds_per_step, run_id);
}

void ResultsWriter::AddConstant(std::optional<std::int64_t> run_id, const Constant& constant) {
  ExecuteOnce(db_, "INSERT INTO constants VALUES (?, ?, ?, ?, ?)", run_id, constant.name,
              constant.value, CertaintyName(constant.certainty), constant.basis);
}

void ResultsWriter::AddHyperparameters(std::int64_t run_id, const Hyperparameters& options) {
  for (const auto& [key, value] : options.entries()) {
    ExecuteOnce(db_, "INSERT INTO hyperparameters VALUES (?, ?, ?, ?)", run_id,
                std::string_view(key), value, Hyperparameters::TypeName(value));
  }
}

void ResultsWriter::AddShards(const std::vector<ShardSummary>& shards) {
  for (std::size_t w = 0; w < shards.size(); ++w) {
    for (std::size_t label = 0; label < shards[w].label_counts.size(); ++label) {
      ExecuteOnce(db_, "INSERT INTO shards VALUES (?, ?, ?, ?)", static_cast<std::int64_t>(w),
                  shards[w].samples, static_cast<std::int64_t>(label),
                  shards[w].label_counts[label]);
    }
  }
}

void ResultsWriter::AddMetric(std::int64_t run_id, std::int64_t step, std::string_view name,
                              std::optional<int> worker, double value) {
  Execute(db_, insert_metric_, run_id, step, name, worker, value);
}

void ResultsWriter::AddProbe(std::int64_t run_id, std::int64_t step, std::string_view probe,
                             std::string_view series, std::optional<int> worker, double value) {
  Execute(db_, insert_probe_, run_id, step, probe, series, worker, value);
}

void ResultsWriter::WriteCsv(const std::filesystem::path& path) {
  // Metrics and probe series (named "probe/series"), ordered by run, step, and insertion.
  constexpr const char* kQuery = R"sql(
    SELECT run_id, label, step, name, worker, value, 0 AS kind, m.rowid AS seq
      FROM metrics m JOIN runs USING (run_id)
    UNION ALL
    SELECT run_id, label, step, probe || '/' || series, worker, value, 1, p.rowid
      FROM probes p JOIN runs USING (run_id)
    ORDER BY run_id, step, kind, seq)sql";
  sqlite3_stmt* query = Prepare(db_, kQuery);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << "run,label,step,name,worker,value\n";
  const auto text = [&](int column) {
    return std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(query, column)));
  };
  int rc;
  while ((rc = sqlite3_step(query)) == SQLITE_ROW) {
    const std::string worker = sqlite3_column_type(query, 4) == SQLITE_NULL
                                   ? std::string()
                                   : fmt::format("{}", sqlite3_column_int(query, 4));
    const double value = sqlite3_column_type(query, 5) == SQLITE_NULL
                             ? std::nan("")
                             : sqlite3_column_double(query, 5);
    out << fmt::format("{},{},{},{},{},{}\n", sqlite3_column_int64(query, 0), text(1),
                       sqlite3_column_int64(query, 2), text(3), worker, value);
  }
  sqlite3_finalize(query);
  if (rc != SQLITE_DONE)
    throw UserError(fmt::format("reading results failed: {}", sqlite3_errmsg(db_)));
  if (!out.flush()) throw UserError(fmt::format("{}: write failed", path.string()));
}

void ResultsWriter::Commit(const std::vector<Eigen::VectorXd>& params, Precision precision) {
  Exec("COMMIT");
  if (discarding_) {
    committed_ = true;
    return;
  }
  WriteCsv(Partial(kMetrics));
  WriteNpy(Partial(kParams), params, precision);
  sqlite3_finalize(insert_metric_);
  sqlite3_finalize(insert_probe_);
  insert_metric_ = insert_probe_ = nullptr;
  if (sqlite3_close(db_) != SQLITE_OK) {
    throw UserError(fmt::format("{}: close failed", Partial(kDatabase).string()));
  }
  db_ = nullptr;
  // results.sqlite last: its presence means the set is complete.
  for (const std::string_view name : {kMetrics, kParams, kDatabase}) {
    std::error_code ec;
    std::filesystem::rename(Partial(name), dir_ / name, ec);
    if (ec)
      throw UserError(
          fmt::format("{}: cannot move into place: {}", (dir_ / name).string(), ec.message()));
  }
  committed_ = true;
}

}  // namespace lemmalab
