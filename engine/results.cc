#include "engine/results.h"

#include <csv.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <concepts>
#include <cstring>
#include <fstream>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/build_info.h"
#include "core/error.h"
#include "engine/npy.h"
#include "engine/spec.h"
#include "theory/probe_series.h"

namespace lemmalab {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE points(point TEXT PRIMARY KEY, idx INTEGER NOT NULL, axes TEXT NOT NULL);
CREATE TABLE probe_series(
  probe TEXT NOT NULL, series TEXT NOT NULL, meaning TEXT NOT NULL, per_dimension INTEGER NOT NULL,
  PRIMARY KEY (probe, series));
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, name TEXT NOT NULL,
  worker INTEGER, value REAL);
CREATE TABLE constants(
  run_id INTEGER REFERENCES runs(run_id), name TEXT NOT NULL, value REAL,
  certainty TEXT NOT NULL, basis TEXT NOT NULL, point TEXT, region_position TEXT,
  region_radius REAL, region TEXT);
CREATE TABLE shards(
  worker INTEGER NOT NULL, samples INTEGER NOT NULL, label INTEGER NOT NULL,
  count INTEGER NOT NULL, point TEXT);
CREATE TABLE hyperparameters(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), key TEXT NOT NULL, value, type TEXT NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE TABLE probes(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, probe TEXT NOT NULL,
  series TEXT NOT NULL, worker INTEGER, value REAL);
)sql";

// Exact statistics of every value of each series (theory/evidence.h Extent), whatever the
// metrics and probes tables kept of them; `kind` is "metric" or "probe", `name` the metric or
// "probe/series". IF NOT EXISTS: a sweep started by an older lemmalab gains it.
constexpr const char* kExtentsTable = R"sql(
CREATE TABLE IF NOT EXISTS extents(
  run_id INTEGER NOT NULL REFERENCES runs(run_id), kind TEXT NOT NULL, name TEXT NOT NULL,
  worker INTEGER, count INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL,
  sum REAL, sum_squares REAL, min REAL, min_step INTEGER NOT NULL, min_worker INTEGER, max REAL,
  max_step INTEGER NOT NULL, max_worker INTEGER, non_finite INTEGER NOT NULL,
  first_non_finite_step INTEGER NOT NULL, first_non_finite_worker INTEGER, first_non_finite REAL);
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

// The tables: runs from RunColumns(), a sweep's point and label naming one run at most.
std::string Schema() {
  std::string runs = "CREATE TABLE runs(";
  for (const RunColumn& c : RunColumns()) {
    runs += fmt::format("{} {}, ", QuoteColumn(c.name), c.type);
  }
  return runs + "UNIQUE (point, label));\n" + kSchema + kExtentsTable;
}

// What each probe series means (theory/probe_series.h), so that a database explains itself.
void AddProbeSeries(sqlite3* db) {
  sqlite3_stmt* insert = Prepare(db, "INSERT INTO probe_series VALUES (?, ?, ?, ?)");
  for (const SeriesInfo& s : ProbeSeries()) {
    sqlite3_reset(insert);
    Bind(insert, 1, s.probe);
    Bind(insert, 2, s.series);
    Bind(insert, 3, s.meaning);
    Bind(insert, 4, int{s.per_dimension});
    if (sqlite3_step(insert) != SQLITE_DONE) {
      sqlite3_finalize(insert);
      throw UserError(fmt::format("writing results failed: {}", sqlite3_errmsg(db)));
    }
  }
  sqlite3_finalize(insert);
}

}  // namespace

void WriteTextFile(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::path partial = path;
  partial += ".partial";
  {
    std::ofstream out = CreateFresh(partial);
    out << text;
    out.close();
    if (!out) {
      std::filesystem::remove(partial);
      throw WriteFailed(partial.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  CheckFileOperation(ec, "move into place", path);
}

std::string CsvText(std::string_view text) {
  std::string buffer(2 * text.size() + 2, '\0');
  buffer.resize(csv_write(buffer.data(), buffer.size(), text.data(), text.size()));
  return buffer;
}

std::string QuoteColumn(std::string_view name) {
  std::string out = "\"";
  for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

const std::vector<RunColumn>& RunColumns() {
  static const std::vector<RunColumn> columns = [] {
    std::vector<RunColumn> c = {{"run_id", "INTEGER PRIMARY KEY"}, {"point", "TEXT"}};
    const RunRecord record;
    RunRecord::ForEachField(record, [&](std::string_view name, std::string_view type, const auto&) {
      c.push_back({name, type});
    });
    for (const std::string_view name : {"version", "commit", "build"}) c.push_back({name, "TEXT"});
    return c;
  }();
  return columns;
}

bool IsRunColumn(std::string_view column) {
  const std::vector<RunColumn>& columns = RunColumns();
  return std::any_of(columns.begin(), columns.end(),
                     [&](const RunColumn& c) { return c.name == column; });
}

bool IsHyperparameterColumn(std::string_view key) {
  // The optimizer's name and label are the runs table's `optimizer` and `label` already.
  if (key == "name" || key == "label") return false;
  if (IsRunColumn(key)) {
    throw InternalError(fmt::format("the option '{}' has the name of a runs column", key));
  }
  return true;
}

std::vector<std::string> TableColumns(sqlite3* db, std::string_view schema,
                                      std::string_view table) {
  sqlite3_stmt* statement =
      Prepare(db, fmt::format("PRAGMA {}.table_info({})", schema, table).c_str());
  std::vector<std::string> columns;
  while (sqlite3_step(statement) == SQLITE_ROW) {
    columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 1)));
  }
  sqlite3_finalize(statement);
  return columns;
}

void AddRunsColumns(sqlite3* db, const std::vector<std::string>& names, std::string_view schema) {
  const std::vector<std::string> columns = TableColumns(db, schema, "runs");
  for (const std::string& name : names) {
    if (std::find(columns.begin(), columns.end(), name) != columns.end()) continue;
    const std::string sql =
        fmt::format("ALTER TABLE {}.runs ADD COLUMN {}", schema, QuoteColumn(name));
    ExecSql(db, sql.c_str(), fmt::format("writing results failed: {}", sql));
  }
}

void WriteRunsCsv(sqlite3* db, const std::filesystem::path& partial) {
  sqlite3_stmt* query = Prepare(db, "SELECT * FROM runs ORDER BY run_id");
  std::ofstream out;
  try {
    out = CreateFresh(partial);
  } catch (const UserError&) {
    sqlite3_finalize(query);
    throw;
  }
  // Text quoted (labels and statuses may hold commas), numbers as the shortest text that reads
  // back the same double.
  const auto quoted = [](std::string_view text) { return CsvText(text); };
  const int columns = sqlite3_column_count(query);
  for (int c = 0; c < columns; ++c) {
    out << (c ? "," : "") << quoted(sqlite3_column_name(query, c));
  }
  out << "\n";
  int rc;
  while ((rc = sqlite3_step(query)) == SQLITE_ROW) {
    for (int c = 0; c < columns; ++c) {
      if (c) out << ',';
      switch (sqlite3_column_type(query, c)) {
        case SQLITE_NULL:
          break;
        case SQLITE_INTEGER:
          out << sqlite3_column_int64(query, c);
          break;
        case SQLITE_FLOAT:
          out << fmt::format("{}", sqlite3_column_double(query, c));
          break;
        default:
          out << quoted(reinterpret_cast<const char*>(sqlite3_column_text(query, c)));
      }
    }
    out << "\n";
  }
  sqlite3_finalize(query);
  if (rc != SQLITE_DONE)
    throw UserError(fmt::format("reading results failed: {}", sqlite3_errmsg(db)));
  if (!out.flush()) throw WriteFailed(partial.string());
}

void ExecSql(sqlite3* db, const char* sql, std::string_view where) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw UserError(fmt::format("{}: {}", where, message));
  }
}

std::filesystem::path ResultsWriter::Partial(std::string_view name) const {
  return folder_.staging() / name;
}

std::optional<CheckpointMark> ResultsWriter::StagedCheckpoint(const std::filesystem::path& dir) {
  const std::filesystem::path file = ResultFolder(dir).staging() / kDatabase;
  if (!std::filesystem::exists(file)) return std::nullopt;
  sqlite3* db = nullptr;
  std::optional<CheckpointMark> mark;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* query = nullptr;
    // No such table (a run without checkpoints) or no row (none written yet): no checkpoint.
    if (sqlite3_prepare_v2(db, "SELECT run, step FROM checkpoint", -1, &query, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(query) == SQLITE_ROW) {
      mark = CheckpointMark{sqlite3_column_int64(query, 0), sqlite3_column_int64(query, 1)};
    }
    sqlite3_finalize(query);
  }
  sqlite3_close(db);
  return mark;
}

ResultsWriter::ResultsWriter(std::filesystem::path dir, bool database_only, Mode mode,
                             std::string_view command)
    : dir_(std::move(dir)), folder_(dir_), mode_(mode), database_only_(database_only) {
  lock_.emplace(dir_, command);
  for (const std::string_view name : {kDatabase, kMetrics, kRuns, kParams}) {
    const std::filesystem::path target = dir_ / name;
    if (std::filesystem::exists(target) && !std::filesystem::is_regular_file(target)) {
      throw UserError(
          fmt::format("--out {}: '{}' exists and is not a file; results cannot "
                      "replace it",
                      dir_.string(), name));
    }
  }
  const std::optional<CheckpointMark> staged = StagedCheckpoint(dir_);
  if (mode_ == Mode::kResume) {
    if (!staged) {
      throw UserError(
          fmt::format("--resume {}: there is no checkpoint to resume there (a run writes one every "
                      "checkpoint_every steps; a run that finished leaves none)",
                      dir_.string()));
    }
    resumed_ = *staged;
    checkpoint_committed_ = true;
    Open(Partial(kDatabase).string());
    return;
  }
  if (staged) {
    throw UserError(fmt::format(
        "--out {}: it holds the checkpoint of an unfinished run (run {}, step {}); continue it "
        "with lemmalab run SPEC --resume {}, or remove {} to start over",
        dir_.string(), staged->run + 1, staged->step, dir_.string(), folder_.staging().string()));
  }
  folder_.ResetStaging();  // what an interrupted run without checkpoints left there
  Open(Partial(kDatabase).string());
}

ResultsWriter::ResultsWriter() : folder_({}), discarding_(true) { Open(":memory:"); }

ResultsWriter::ResultsWriter(ResultsWriter&& other) noexcept
    : dir_(std::move(other.dir_)),
      folder_(std::move(other.folder_)),
      lock_(std::move(other.lock_)),
      db_(std::exchange(other.db_, nullptr)),
      insert_metric_(std::exchange(other.insert_metric_, nullptr)),
      insert_probe_(std::exchange(other.insert_probe_, nullptr)),
      mode_(other.mode_),
      resumed_(other.resumed_),
      checkpoint_committed_(other.checkpoint_committed_),
      committed_(std::exchange(other.committed_, true)),
      discarding_(other.discarding_),
      database_only_(other.database_only_) {}

void ResultsWriter::Open(const std::string& db_path) {
  if (sqlite3_open(db_path.c_str(), &db_) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: cannot open: {}", db_path, message));
  }
  if (mode_ == Mode::kFresh) {
    // One transaction, published whole or removed: nothing to recover, so no journal.
    Exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;");
  } else {
    // Committed at each checkpoint: a process killed between checkpoints must find the last
    // one intact, which the write-ahead log guarantees (uncommitted frames are ignored).
    Exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
  }
  if (mode_ != Mode::kResume) {
    Exec(Schema().c_str());
    if (mode_ == Mode::kCheckpointed) {
      Exec("CREATE TABLE checkpoint(run INTEGER NOT NULL, step INTEGER NOT NULL)");
    }
  }
  Exec("BEGIN");
  if (mode_ != Mode::kResume) AddProbeSeries(db_);
  insert_metric_ = Prepare(db_, "INSERT INTO metrics VALUES (?, ?, ?, ?, ?)");
  insert_probe_ = Prepare(db_, "INSERT INTO probes VALUES (?, ?, ?, ?, ?, ?)");
}

ResultsWriter::~ResultsWriter() {
  sqlite3_finalize(insert_metric_);
  sqlite3_finalize(insert_probe_);
  if (db_ != nullptr) sqlite3_close(db_);  // rolls back what the last checkpoint did not commit
  if (!committed_ && !discarding_ && !checkpoint_committed_) folder_.RemoveStaging();
}

void ResultsWriter::Exec(const char* sql) { ExecSql(db_, sql, Partial(kDatabase).string()); }

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
  const BuildInfo& build = Build();
  ExecuteOnce(db_,
              "INSERT INTO runs(label, optimizer, schedule, status, steps_done, version, "
              "\"commit\", build) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
              run.label, run.optimizer, run.schedule, run.status, run.steps_done,
              std::string_view(build.version), std::string_view(build.commit),
              std::string_view(build.build));
  return sqlite3_last_insert_rowid(db_);
}

void ResultsWriter::UpdateRun(std::int64_t run_id, const RunRecord& run) {
  std::string sql = "UPDATE runs SET ";
  RunRecord::ForEachField(run, [&](std::string_view name, std::string_view, const auto&) {
    sql += fmt::format("{} = ?, ", QuoteColumn(name));
  });
  sql.resize(sql.size() - 2);
  sql += " WHERE run_id = ?";
  sqlite3_stmt* statement = Prepare(db_, sql.c_str());
  int i = 0;
  RunRecord::ForEachField(run, [&](std::string_view, std::string_view, const auto& value) {
    Bind(statement, ++i, value);
  });
  Bind(statement, ++i, run_id);
  const bool done = sqlite3_step(statement) == SQLITE_DONE;
  sqlite3_finalize(statement);
  if (!done) throw UserError(fmt::format("writing results failed: {}", sqlite3_errmsg(db_)));
}

void ResultsWriter::AddConstant(std::optional<std::int64_t> run_id, const Constant& constant) {
  const std::optional<Region>& region = constant.region;
  ExecuteOnce(db_, "INSERT INTO constants VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)", run_id,
              constant.name, constant.value, CertaintyName(constant.certainty), constant.basis,
              region ? std::optional<std::string_view>(region->position) : std::nullopt,
              region ? std::optional<double>(region->radius) : std::nullopt,
              region ? std::optional<std::string_view>(region->description) : std::nullopt);
}

void ResultsWriter::AddExtent(std::int64_t run_id, std::string_view kind, std::string_view name,
                              int worker, const Extent& e) {
  const auto who = [](int w) { return w == kRunWide ? std::nullopt : std::optional<int>(w); };
  ExecuteOnce(
      db_, "INSERT INTO extents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      run_id, kind, name, who(worker), e.count, e.first_step, e.last_step, e.sum, e.sum_squares,
      e.min, e.min_step, who(e.min_worker), e.max, e.max_step, who(e.max_worker), e.non_finite,
      e.first_non_finite_step, who(e.first_non_finite_worker), e.first_non_finite);
}

void ResultsWriter::AddHyperparameters(std::int64_t run_id, const Hyperparameters& options) {
  std::vector<std::string> columns;
  for (const auto& [key, value] : options.entries()) {
    if (IsHyperparameterColumn(key)) columns.push_back(key);
  }
  AddRunsColumns(db_, columns);
  for (const auto& [key, value] : options.entries()) {
    ExecuteOnce(db_, "INSERT INTO hyperparameters VALUES (?, ?, ?, ?)", run_id,
                std::string_view(key), value, Hyperparameters::TypeName(value));
    if (!IsHyperparameterColumn(key)) continue;
    ExecuteOnce(db_,
                fmt::format("UPDATE runs SET {} = ? WHERE run_id = ?", QuoteColumn(key)).c_str(),
                value, run_id);
  }
}

void ResultsWriter::AddShards(const std::vector<ShardSummary>& shards) {
  for (std::size_t w = 0; w < shards.size(); ++w) {
    for (std::size_t label = 0; label < shards[w].label_counts.size(); ++label) {
      ExecuteOnce(db_, "INSERT INTO shards VALUES (?, ?, ?, ?, NULL)", static_cast<std::int64_t>(w),
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
  std::ofstream out = CreateFresh(path);
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
  if (!out.flush()) throw WriteFailed(path.string());
}

void ResultsWriter::CommitCheckpoint(const CheckpointMark& mark) {
  if (discarding_) return;
  LEMMALAB_CHECK(mode_ != Mode::kFresh, "a checkpoint into results written without them");
  Exec("DELETE FROM checkpoint");
  ExecuteOnce(db_, "INSERT INTO checkpoint VALUES (?, ?)", mark.run, mark.step);
  Exec("COMMIT");
  checkpoint_committed_ = true;
  Exec("BEGIN");
}

std::string ResultsWriter::Meta(std::string_view key) {
  sqlite3_stmt* query = Prepare(db_, "SELECT value FROM meta WHERE key = ?");
  Bind(query, 1, key);
  std::string value;
  if (sqlite3_step(query) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(query, 0));
  }
  sqlite3_finalize(query);
  return value;
}

void ResultsWriter::Commit(const std::vector<Eigen::VectorXd>& params, Precision precision) {
  if (mode_ != Mode::kFresh) Exec("DROP TABLE checkpoint");
  Exec("COMMIT");
  if (discarding_) {
    committed_ = true;
    return;
  }
  if (!database_only_) {
    WriteCsv(Partial(kMetrics));
    WriteRunsCsv(db_, Partial(kRuns));
    WriteNpy(Partial(kParams), params, precision);
  }
  sqlite3_finalize(insert_metric_);
  sqlite3_finalize(insert_probe_);
  insert_metric_ = insert_probe_ = nullptr;
  // One self-contained file (the write-ahead log folded in) that any reader opens read-only.
  if (mode_ != Mode::kFresh) Exec("PRAGMA journal_mode = DELETE");
  if (sqlite3_close(db_) != SQLITE_OK) {
    throw UserError(
        fmt::format("{}: cannot close: {}", Partial(kDatabase).string(), sqlite3_errmsg(db_)));
  }
  db_ = nullptr;
  if (database_only_) {
    folder_.Publish(std::array{kDatabase});
  } else {
    folder_.Publish(std::array{kDatabase, kMetrics, kRuns, kParams});
  }
  committed_ = true;
}

SweepStore::SweepStore(const std::filesystem::path& dir,
                       const std::vector<std::pair<std::string, std::string>>& meta)
    : file_(dir / ResultsWriter::kDatabase) {
  const bool exists = std::filesystem::exists(file_);
  if (sqlite3_open(file_.string().c_str(), &db_) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: cannot open: {}", file_.string(), message));
  }
  sqlite3_busy_timeout(db_, 10000);
  if (!exists) {
    Exec("PRAGMA journal_mode = WAL");
    Exec("BEGIN");
    Exec(Schema());
    AddProbeSeries(db_);
    for (const auto& [key, value] : meta) {
      ExecuteOnce(db_, "INSERT INTO meta VALUES (?, ?)", std::string_view(key),
                  std::string_view(value));
    }
    Exec("COMMIT");
    return;
  }
  std::map<std::string, std::string> stored;
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT key, value FROM meta", -1, &query, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(
        fmt::format("{}: not a lemmalab results database; choose another --out", file_.string()));
  }
  while (sqlite3_step(query) == SQLITE_ROW) {
    stored[reinterpret_cast<const char*>(sqlite3_column_text(query, 0))] =
        reinterpret_cast<const char*>(sqlite3_column_text(query, 1));
  }
  sqlite3_finalize(query);
  const auto wanted = [&](std::string_view key) {
    for (const auto& [k, v] : meta) {
      if (k == key) return v;
    }
    return std::string();
  };
  std::string problem;
  if (stored["kind"] != "sweep") {
    problem = "holds the results of a lemmalab run or check, not of a sweep";
  } else if (stored["sweep_base"] != wanted("sweep_base")) {
    problem = fmt::format("holds a sweep of a spec that differs outside [sweep] (it ran {})",
                          stored["spec_path"]);
    const std::vector<std::string> differences =
        SpecDifferences(stored["spec_text"], wanted("spec_text"), /*outside_sweep=*/true);
    if (!differences.empty()) problem += ": " + ListDifferences(differences);
  }
  if (!problem.empty()) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("--out {}: {}; choose another --out, or delete it to start over",
                                dir.string(), problem));
  }
  Exec("PRAGMA journal_mode = WAL");
  // A sweep an older lemmalab began gains what its later points bring.
  Exec(kExtentsTable);
  const std::vector<std::string> constant_columns = TableColumns(db_, "main", "constants");
  for (const auto& [column, type] :
       {std::pair{"region_position", "TEXT"}, std::pair{"region_radius", "REAL"},
        std::pair{"region", "TEXT"}}) {
    if (std::find(constant_columns.begin(), constant_columns.end(), column) ==
        constant_columns.end()) {
      Exec(fmt::format("ALTER TABLE constants ADD COLUMN {} {}", column, type));
    }
  }
  // The spec may have grown axes since: keep its latest text and axes.
  Exec("BEGIN");
  for (const auto& [key, value] : meta) {
    ExecuteOnce(db_, "INSERT OR REPLACE INTO meta VALUES (?, ?)", std::string_view(key),
                std::string_view(value));
  }
  Exec("COMMIT");
}

SweepStore::~SweepStore() {
  // Back to a self-contained file (no -wal, -shm beside it) that any reader opens read-only.
  sqlite3_exec(db_, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr);
  sqlite3_close(db_);
}

void SweepStore::Exec(const std::string& sql) { ExecSql(db_, sql.c_str(), file_.string()); }

std::vector<std::string> SweepStore::FinishedPoints() {
  std::vector<std::string> labels;
  sqlite3_stmt* query = Prepare(db_, "SELECT point FROM points ORDER BY idx");
  while (sqlite3_step(query) == SQLITE_ROW) {
    labels.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(query, 0)));
  }
  sqlite3_finalize(query);
  return labels;
}

void SweepStore::AddPoint(const std::filesystem::path& database, const std::string& label,
                          int index, const std::string& axes_json) {
  ExecuteOnce(db_, "ATTACH DATABASE ? AS point", std::string_view(database.string()));
  try {
    Exec("BEGIN IMMEDIATE");
    // The point's run ids follow the sweep's; its hyperparameter columns join the sweep's.
    std::vector<std::string> columns = TableColumns(db_, "point", "runs");
    AddRunsColumns(db_, columns);
    std::string list;
    for (const std::string& column : columns) {
      if (column == "run_id" || column == "point") continue;
      list += ", " + QuoteColumn(column);
    }
    const std::string offset = "(SELECT COALESCE(MAX(run_id), 0) FROM main.runs)";
    Exec(
        fmt::format("CREATE TEMP TABLE ids AS SELECT run_id AS old, run_id + {} AS new "
                    "FROM point.runs",
                    offset));
    ExecuteOnce(db_,
                fmt::format("INSERT INTO main.runs(run_id, point{}) SELECT ids.new, ?{} FROM "
                            "point.runs JOIN ids ON ids.old = point.runs.run_id",
                            list, list)
                    .c_str(),
                std::string_view(label));
    Exec(
        "INSERT INTO main.metrics SELECT new, step, name, worker, value FROM point.metrics "
        "JOIN ids ON old = run_id ORDER BY point.metrics.rowid");
    Exec(
        "INSERT INTO main.probes SELECT new, step, probe, series, worker, value FROM "
        "point.probes JOIN ids ON old = run_id ORDER BY point.probes.rowid");
    Exec(
        "INSERT INTO main.hyperparameters SELECT new, key, value, type FROM "
        "point.hyperparameters JOIN ids ON old = run_id");
    ExecuteOnce(db_,
                "INSERT INTO main.constants SELECT ids.new, name, value, certainty, basis, ?, "
                "region_position, region_radius, region FROM point.constants LEFT JOIN ids ON "
                "ids.old = point.constants.run_id",
                std::string_view(label));
    Exec(
        "INSERT INTO main.extents SELECT new, kind, name, worker, count, first_step, last_step, "
        "sum, sum_squares, min, min_step, min_worker, max, max_step, max_worker, non_finite, "
        "first_non_finite_step, first_non_finite_worker, first_non_finite FROM point.extents "
        "JOIN ids ON old = run_id ORDER BY point.extents.rowid");
    ExecuteOnce(db_,
                "INSERT INTO main.shards SELECT worker, samples, label, count, ? FROM "
                "point.shards",
                std::string_view(label));
    ExecuteOnce(db_, "INSERT INTO main.points VALUES (?, ?, ?)", std::string_view(label), index,
                std::string_view(axes_json));
    Exec("DROP TABLE temp.ids");
    Exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_exec(db_, "DROP TABLE IF EXISTS temp.ids", nullptr, nullptr, nullptr);
    sqlite3_exec(db_, "DETACH DATABASE point", nullptr, nullptr, nullptr);
    throw;
  }
  Exec("DETACH DATABASE point");
}

void SweepStore::ExportRuns(const std::filesystem::path& path) {
  const std::filesystem::path partial = path.string() + ".partial";
  WriteRunsCsv(db_, partial);
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    throw UserError(fmt::format("{}: cannot move into place: {}", path.string(), ec.message()));
  }
}

}  // namespace lemmalab
