// Where a run's results go: DIR/results.sqlite (everything), DIR/metrics.csv (the metric and
// probe series in long format, for notebooks) and DIR/params.npy (final parameters, one row per
// run in spec order).
//
// Files are written under ".partial" names and renamed only when the whole experiment has
// finished; if anything fails, the partial files are removed and earlier results in DIR stay as
// they were. Nothing half-written is left looking complete.
//
// Schema (results.sqlite):
//   meta(key, value)                       spec path and text, seed, precision, version, ...
//   runs(run_id, label, optimizer, schedule, status, steps_done, final_loss, final_accuracy,
//        final_grad_sq_norm, final_test_loss, final_test_accuracy, bits_sent_per_worker,
//        wall_seconds, bytes_intra_per_step, bytes_inter_per_step, step_seconds,
//        comm_seconds_per_step)           NULL where the problem has no such quantity
//   constants(run_id, name, value, certainty, basis)
//                                          L, mu, G, sigma, sigma_g, f_star (problems/problem.h);
//                                          certainty exact / bound / estimate; run_id NULL for
//                                          the problem's, set for what a run observed (G)
//   shards(worker, samples, label, count)  shard sizes and label histograms (data problems)
//   hyperparameters(run_id, key, value, type)
//                                          every option the run's optimizer, compressor and
//                                          schedule read, defaults filled in ("beta",
//                                          "compressor.name", "schedule.lr"); type boolean (0/1),
//                                          integer, number or string (core/hyperparameters.h)
//   metrics(run_id, step, name, worker, value)
//   probes(run_id, step, probe, series, worker, value)
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
#include "problems/problem.h"

namespace lemmalab {

struct RunRecord {
  std::string label;
  std::string optimizer;
  std::string schedule;
  std::string status;
  std::int64_t steps_done = 0;
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
};

class ResultsWriter {
 public:
  explicit ResultsWriter(std::filesystem::path dir);
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

  // Writes metrics.csv and params.npy and moves all three files into place.
  void Commit(const std::vector<Eigen::VectorXd>& params, Precision precision);

  static constexpr std::string_view kDatabase = "results.sqlite";
  static constexpr std::string_view kMetrics = "metrics.csv";
  static constexpr std::string_view kParams = "params.npy";

 private:
  ResultsWriter();
  void Open(const std::string& db_path);
  std::filesystem::path Partial(std::string_view name) const;
  void Exec(const char* sql);
  void WriteCsv(const std::filesystem::path& path);
  void RemovePartials() noexcept;

  std::filesystem::path dir_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_metric_ = nullptr;
  sqlite3_stmt* insert_probe_ = nullptr;
  bool committed_ = false;
  bool discarding_ = false;
};

}  // namespace lemmalab
