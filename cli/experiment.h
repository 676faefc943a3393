// Runs a spec: builds the data, the problem, every optimizer with its schedule and probes (so
// every option is validated before the first step), then runs each optimizer from the same
// initial point on the same shards and minibatch streams, recording metrics and probe series
// into the results folder.
//
// Per step, the metrics table receives lr, minibatch_loss (mean over workers), bits_sent and
// bits_received (per worker, this step), bytes_intra and bytes_inter (sent over intra-node and
// inter-node links by all endpoints this step), comm_seconds (the step's communication time
// projected by the [network] model, comm/network.h) and max_grad_norm (the largest ||g|| of the
// workers' stochastic gradients); every eval_every steps and at the last step, the full-batch
// train_loss, grad_sq_norm (||grad f(x_t)||^2), train_accuracy, test_loss and test_accuracy
// (when the problem has them) and optimality_gap (f(x_t) - f_star, when f_star is known or
// estimated). A run whose
// parameters, losses or compressor inputs stop being finite is stopped and reported as diverged.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/results.h"
#include "cli/spec.h"
#include "comm/transport.h"

namespace lemmalab {

struct ExperimentOptions {
  std::filesystem::path out_dir;
  int threads = 0;       // threads for the workers; 0 chooses (comm/cluster.h)
  bool progress = true;  // shown only on a terminal
  // Set (e.g. by SIGINT) to stop between steps; the experiment then throws Interrupted.
  const std::atomic<bool>* stop = nullptr;
  // The transport the workers run over; null: all of them in this process. With one that does
  // not report (an MPI rank other than 0) nothing is written and no progress is shown.
  Transport* transport = nullptr;
};

struct RunReport {
  RunRecord record;
  std::int64_t dimension = 0;
  std::vector<std::string> probe_lines;  // "<probe>: <line>"
  int threads = 1;                       // largest OpenMP team the workers ran on
  double observed_g = 0;                 // largest stochastic gradient norm seen
  Eigen::VectorXd final_params;
};

struct ExperimentReport {
  std::string problem;              // the problem's Describe()
  std::vector<Constant> constants;  // known, bounded and (with reference = true) estimated
  std::vector<ShardSummary> shards;
  int workers = 1;
  Precision precision = Precision::kFp32;
  std::string communication;  // scheme, topology, backend and network model, in words
  std::vector<RunReport> runs;
};

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

ExperimentReport RunExperiment(const RunSpec& spec, const ExperimentOptions& options);

// Refuses a spec with probes (UserError): under MPI a rank holds only its own worker's state.
void RequireNoProbes(const RunSpec& spec);

// The table `lemmalab run` prints.
std::string FormatReport(const ExperimentReport& report);

}  // namespace lemmalab
