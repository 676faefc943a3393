// The run engine's entry points: RunExperiment runs a spec (every [[optimizer]] from the same
// initial point on the same shards and minibatch streams) into a results folder, and
// ValidateExperiment builds everything a run would, so that every option is checked, and runs
// nothing. How a run goes, phase by phase: engine/experiment.cc; its step loop and the metrics
// it records: engine/run_loop.h; checkpoints: engine/checkpoint.h and engine/resume.h; the
// estimates checked before the first step: engine/estimates.h; MPI ranks: engine/job.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "batched/backend.h"
#include "comm/transport.h"
#include "core/resources.h"
#include "engine/results.h"
#include "engine/spec.h"
#include "optimizers/trace.h"
#include "problems/dataset.h"

namespace lemmalab {

// Datasets shared by the experiments of one process (a sweep's points): loaded once per distinct
// [data] table, and per seed for sources whose data depend on it (DataSourceInfo::uses_seed).
// Thread-safe.
class DataCache {
 public:
  struct Entry {
    std::shared_ptr<const Dataset> data;
    Hyperparameters resolved;  // the [data] table as it resolved when the data were loaded
  };
  Entry Get(OptionTable& table, const DataContext& context);

 private:
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

struct ExperimentOptions {
  std::filesystem::path out_dir;
  int threads = 0;       // threads for the workers; 0 chooses (comm/cluster.h)
  bool progress = true;  // shown only on a terminal
  // Set (e.g. by SIGINT) to stop between steps; the experiment then throws Interrupted.
  const std::atomic<bool>* stop = nullptr;
  // The signal that set `stop`, for the exit code 128 + signal (null: SIGINT's).
  const std::atomic<int>* stop_signal = nullptr;
  // The transport the workers run over; null: all of them in this process. With one that does
  // not report (an MPI rank other than 0) nothing is written and no progress is shown.
  Transport* transport = nullptr;
  // A listed probe that applies to none of the optimizers is an error (a typo'd intent), except
  // in a sweep's point, where another point's optimizer may be the one it measures: the runs
  // then record nothing for it.
  bool probes_may_not_apply = false;
  // Where to find data already loaded; null: load the spec's data.
  DataCache* data_cache = nullptr;
  // Whether other runs share this process at the same time (a sweep's points): the memory check
  // then cannot take this process's resident set as this run's own, and estimates it instead.
  bool shares_process = false;
  // results.sqlite alone, without metrics.csv and params.npy (a sweep's run).
  bool database_only = false;
  // The command whose results the run writes ("lemmalab check" for a check's runs): it takes the
  // folder under that name, and the database records its kind (engine/result_folder.h).
  std::string_view command = "lemmalab run";
  // Called after every step of every run with the step and its minibatch loss (a sweep's
  // progress display); may be empty.
  std::function<void(std::int64_t step, double minibatch_loss)> on_step;
  // Records the steps, workers and coordinates it selects (optimizers/trace.h); null: no trace.
  // Tracing changes no result.
  StepTrace* trace = nullptr;
  // > 0: every run ends after this step (`lemmalab trace` needs no more), evaluated there as at
  // a last step; the schedule still sees the spec's steps.
  std::int64_t last_step = 0;
  // Write nothing (`lemmalab trace`, the Python bindings' trace-only runs).
  bool discard_results = false;
  // Whether the spec's checkpoint_every is honoured (`lemmalab run`); elsewhere a spec that asks
  // for checkpoints is refused, since nothing could resume them (ignored where nothing is
  // written: a trace).
  bool checkpoints = false;
  // Continue the checkpoint in out_dir (`lemmalab run --resume`; engine/checkpoint.h).
  bool resume = false;
  // The most memory the run may take (--max-memory; default: what the machine has) and the most
  // disk space its results may take (--max-results; default: the free space where they go).
  // Both are checked against estimates before the first step (engine/estimates.h).
  std::optional<MemoryLimit> max_memory;
  std::optional<MemoryLimit> max_results;
  // Where a spec with device = "cuda" steps its optimizers: the GPU, or the host backend that
  // emulates it bit for bit (batched/backend.h), which lets a machine without a GPU run the
  // whole GPU path (tests do).
  batched::Backend device_backend = batched::Backend::kCuda;
  // Whether such a run also computes a supervised problem's gradients on the device
  // (batched/gradients.h), which agree with the CPU's to rounding; false copies the CPU's
  // gradients there every step, so that the run writes the CPU run's results bit for bit (tests
  // of the optimizers' emulation).
  bool device_gradients = true;
  // The GPU memory such a run may take (tests give the host emulation one); default: what the
  // GPU has free. Checked against the measured need before the runs are prepared.
  std::optional<MemoryLimit> device_memory;
};

struct RunReport {
  RunRecord record;
  std::int64_t dimension = 0;
  std::vector<std::string> probe_lines;  // "<probe>: <line>"
  int threads = 1;                       // largest OpenMP team the workers ran on
  double observed_g = 0;                 // largest stochastic gradient norm seen
  Eigen::VectorXd final_params;
  Hyperparameters hyperparameters;  // what the run resolved (ValidateExperiment fills it)
};

struct ExperimentReport {
  std::string problem;              // the problem's Describe()
  std::vector<Constant> constants;  // known, bounded and (with reference = true) estimated
  std::vector<ShardSummary> shards;
  int workers = 1;
  Precision precision = Precision::kFp32;
  std::string communication;  // scheme, topology, backend and network model, in words
  std::vector<RunReport> runs;
  std::vector<std::string> unused_probes;  // listed, applying to no run (probes_may_not_apply)
  // About how many values (metrics, evaluations, probe series) its results will hold, estimated
  // before the first step: what a check keeps of the experiment in memory until it judges it.
  double result_values = 0;
};

// Runs the spec. UserError for bad input; Interrupted when options.stop was set (under MPI on
// every rank at the same step: a stop any rank sees stops them all between two steps); under
// MPI, a failure before the first step is a SharedFailure on every rank.
ExperimentReport RunExperiment(const RunSpec& spec, const ExperimentOptions& options);

// Builds everything RunExperiment would (data, problem, optimizers, probes), so that every option
// is checked, and runs nothing: the report's runs carry only their label, optimizer and resolved
// hyperparameters. UserError as RunExperiment's.
ExperimentReport ValidateExperiment(const RunSpec& spec, DataCache* data_cache = nullptr,
                                    bool probes_may_not_apply = false);

// Refuses a spec with probes (UserError): under MPI a rank holds only its own worker's state.
void RequireNoProbes(const RunSpec& spec);

}  // namespace lemmalab
