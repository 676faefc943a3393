// Where a run's results go: DIR/results.sqlite (everything), DIR/metrics.csv (the metric and
// probe series in long format, for notebooks), DIR/runs.csv (the runs table: one row per run,
// its hyperparameters as columns) and DIR/params.npy (final parameters, one row per run in spec
// order).
//
// The folder is locked (engine/directory_lock.h) while the writer lives: two runs into one folder
// cannot mix their files. The files are written into DIR/.results/next and published together
// when the whole experiment has finished (engine/result_folder.h): a reader sees the earlier set
// or the new one, whole. If anything fails, the staging folder is removed and earlier results
// in DIR stay as they were; nothing half-written is left looking complete.
//
// With checkpoints (engine/checkpoint.h) the database is written in WAL mode and committed at each
// checkpoint together with the checkpoint's step (table checkpoint(run, step)), so that a run
// killed at any moment leaves the results of its last checkpoint, which a resumed run continues;
// the staging folder then stays after a failure, and the table is dropped when the run
// completes.
//
// results.sqlite holds the tables meta, runs (one row per run: its outcome, then one column per
// hyperparameter), points, constants, shards, hyperparameters, metrics, probes, probe_series and
// extents; each table's columns and what they mean:
// docs/commands.md#the-results-database-table-by-table.
// `worker` is NULL for run-wide values, -1 for the server, i for worker i. Step 0 is the
// initial point.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperparameters.h"
#include "core/types.h"
#include "engine/directory_lock.h"
#include "engine/result_folder.h"
#include "problems/problem.h"
#include "theory/evidence.h"

namespace lemmalab {

struct RunRecord {
  std::string label;
  std::string optimizer;
  std::string schedule;
  std::string status;
  std::int64_t steps_done = 0;
  std::int64_t dimension = 0;
  double final_loss = 0;
  std::optional<double> final_accuracy;
  double final_grad_sq_norm = 0;
  std::optional<double> final_test_loss;
  std::optional<double> final_test_accuracy;
  double bits_sent_per_worker = 0;
  double wall_seconds = 0;
  // Per step, averaged over the steps run: bytes sent over intra-node and inter-node links by
  // all endpoints, the measured wall time of the step (gradients, compression and the
  // in-memory or MPI exchange), and the communication time the network model projects.
  double bytes_intra_per_step = 0;
  double bytes_inter_per_step = 0;
  double step_seconds = 0;
  double comm_seconds_per_step = 0;

  // Calls f(name, sql_type, field) for every field, in the runs table's column order: the one
  // list the table's columns, its update and the checkpoints' copy are made from.
  template <typename Record, typename F>
  static void ForEachField(Record& r, F&& f) {
    f("label", "TEXT NOT NULL", r.label);
    f("optimizer", "TEXT NOT NULL", r.optimizer);
    f("schedule", "TEXT NOT NULL", r.schedule);
    f("status", "TEXT NOT NULL", r.status);
    f("steps_done", "INTEGER NOT NULL", r.steps_done);
    f("dimension", "INTEGER", r.dimension);
    f("final_loss", "REAL", r.final_loss);
    f("final_accuracy", "REAL", r.final_accuracy);
    f("final_grad_sq_norm", "REAL", r.final_grad_sq_norm);
    f("final_test_loss", "REAL", r.final_test_loss);
    f("final_test_accuracy", "REAL", r.final_test_accuracy);
    f("bits_sent_per_worker", "REAL", r.bits_sent_per_worker);
    f("wall_seconds", "REAL", r.wall_seconds);
    f("bytes_intra_per_step", "REAL", r.bytes_intra_per_step);
    f("bytes_inter_per_step", "REAL", r.bytes_inter_per_step);
    f("step_seconds", "REAL", r.step_seconds);
    f("comm_seconds_per_step", "REAL", r.comm_seconds_per_step);
  }
};

// The runs table's fixed columns, in order, with their SQL types: the row's id and sweep point,
// RunRecord's fields, then the build that wrote the row. The hyperparameter columns follow them.
struct RunColumn {
  std::string_view name;
  std::string_view type;
};
const std::vector<RunColumn>& RunColumns();

// Whether `column` is one of RunColumns().
bool IsRunColumn(std::string_view column);

// Whether a hyperparameter key has a column in the runs table (the optimizer's name and label
// are `optimizer` and `label` already).
bool IsHyperparameterColumn(std::string_view key);
// Writes `text` to `path` under a .partial name and renames it into place when complete, so a
// reader never sees half a file; UserError naming the file when it cannot be written.
void WriteTextFile(const std::filesystem::path& path, std::string_view text);

// A text field for CSV, quoted (libcsv), so that commas, quotes and newlines survive.
std::string CsvText(std::string_view text);
// A column name as SQL text: "compressor.name" with its quotes.
std::string QuoteColumn(std::string_view name);
// Runs `sql` (statements without parameters); UserError "<where>: <SQLite's message>" otherwise.
void ExecSql(sqlite3* db, const char* sql, std::string_view where);
// The columns of `schema`.`table`, in order.
std::vector<std::string> TableColumns(sqlite3* db, std::string_view schema, std::string_view table);
// Writes the runs table of `db` (every column, hyperparameters included) to `path` as CSV.
void WriteRunsCsv(sqlite3* db, const std::filesystem::path& path);
// Adds the hyperparameter columns `schema`.runs does not have yet.
void AddRunsColumns(sqlite3* db, const std::vector<std::string>& names,
                    std::string_view schema = "main");

// The step of a checkpoint, and the run (0-based, in spec order) it belongs to.
struct CheckpointMark {
  std::int64_t run = 0;
  std::int64_t step = 0;
};

class ResultsWriter {
 public:
  enum class Mode {
    kFresh,         // a new set of results
    kCheckpointed,  // a new set, committed at every CommitCheckpoint
    kResume,        // continue the staged set of DIR's last checkpoint
  };
  // Writes into `dir` the results of `command` (which takes the folder: result_folder.h); with
  // `database_only`, results.sqlite alone (a sweep's run, whose database is merged into the
  // sweep's). A new set is refused (UserError) where DIR holds a checkpoint, which only --resume
  // may continue or the user may remove; kResume is refused where it holds none.
  explicit ResultsWriter(std::filesystem::path dir, bool database_only = false,
                         Mode mode = Mode::kFresh, std::string_view command = "lemmalab run");
  // A writer that keeps nothing: an in-memory database, no files (the MPI ranks that do not
  // report run the same code as the one that does).
  static ResultsWriter Discarding() { return ResultsWriter(); }
  ResultsWriter(ResultsWriter&& other) noexcept;
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(ResultsWriter&&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  void SetMeta(std::string_view key, std::string_view value);
  // Returns the run's id (1, 2, ... in spec order).
  std::int64_t AddRun(const RunRecord& run);
  void UpdateRun(std::int64_t run_id, const RunRecord& run);
  void AddMetric(std::int64_t run_id, std::int64_t step, std::string_view name,
                 std::optional<int> worker, double value);
  // A problem constant (run_id empty) or one a run observed.
  void AddConstant(std::optional<std::int64_t> run_id, const Constant& constant);
  void AddShards(const std::vector<ShardSummary>& shards);
  // The run's resolved options (core/hyperparameters.h).
  void AddHyperparameters(std::int64_t run_id, const Hyperparameters& options);
  void AddProbe(std::int64_t run_id, std::int64_t step, std::string_view probe,
                std::string_view series, std::optional<int> worker, double value);
  // The extent of every value of a series (`kind` "metric" or "probe"; `worker` kRunWide for a
  // run-wide series), written when the run ends.
  void AddExtent(std::int64_t run_id, std::string_view kind, std::string_view name, int worker,
                 const Extent& extent);

  // Writes metrics.csv, runs.csv and params.npy and publishes all four files at once.
  void Commit(const std::vector<Eigen::VectorXd>& params, Precision precision);

  // Records a checkpoint at `mark` and commits everything written so far with it (kCheckpointed
  // and kResume writers; nothing for a discarding one).
  void CommitCheckpoint(const CheckpointMark& mark);
  // The checkpoint a kResume writer continues.
  const CheckpointMark& resumed() const { return resumed_; }
  // A value of the meta table ("" when absent).
  std::string Meta(std::string_view key);
  // The checkpoint recorded in the staged database of `dir`, if any.
  static std::optional<CheckpointMark> StagedCheckpoint(const std::filesystem::path& dir);

  static constexpr std::string_view kDatabase = "results.sqlite";
  static constexpr std::string_view kMetrics = "metrics.csv";
  static constexpr std::string_view kRuns = "runs.csv";
  static constexpr std::string_view kParams = "params.npy";

 private:
  ResultsWriter();
  void Open(const std::string& db_path);
  std::filesystem::path Partial(std::string_view name) const;
  void Exec(const char* sql);
  void WriteCsv(const std::filesystem::path& path);

  std::filesystem::path dir_;
  ResultFolder folder_;
  std::optional<DirectoryLock> lock_;  // held from construction until destruction
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_metric_ = nullptr;
  sqlite3_stmt* insert_probe_ = nullptr;
  Mode mode_ = Mode::kFresh;  // a discarding writer's too
  CheckpointMark resumed_;
  bool checkpoint_committed_ = false;  // the staged set holds a checkpoint: kept on failure
  bool committed_ = false;
  bool discarding_ = false;
  bool database_only_ = false;
};

// A sweep's results database, DIR/results.sqlite, filled point by point (cli/sweep.h): the
// schema above, plus meta `kind` = "sweep". Each finished point's runs arrive as the database
// of a ResultsWriter(database_only) and are merged in one transaction, with the point's row in
// `points`, so a point is either wholly in or not at all (a SIGKILL mid-merge rolls back). The
// database is in WAL mode: a reader (lemmalab report) never blocks the sweep.
class SweepStore {
 public:
  // Opens DIR/results.sqlite, creating it with `meta` when it does not exist; an existing one
  // must be a sweep whose meta `sweep_base` equals meta's (the same spec outside [sweep]),
  // otherwise UserError.
  SweepStore(const std::filesystem::path& dir,
             const std::vector<std::pair<std::string, std::string>>& meta);
  ~SweepStore();
  SweepStore(const SweepStore&) = delete;
  SweepStore& operator=(const SweepStore&) = delete;

  // The labels of the points already in the database.
  std::vector<std::string> FinishedPoints();
  // Merges the runs of `database` (a finished point) as point `label` in one transaction.
  void AddPoint(const std::filesystem::path& database, const std::string& label, int index,
                const std::string& axes_json);
  // Writes the runs table, hyperparameters as columns, to `path` as CSV (atomically: written
  // under a .partial name, then renamed).
  void ExportRuns(const std::filesystem::path& path);

 private:
  void Exec(const std::string& sql);
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
};

}  // namespace lemmalab
