// What the preparation of an experiment hands to the rest of it (engine/experiment.cc): every
// component built and every option checked, so that the phases after it (start or resume, the
// step loop of each run, commit) read this value and never the spec.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/network.h"
#include "comm/scheme.h"
#include "core/hyperparameters.h"
#include "engine/experiment.h"
#include "engine/results.h"
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/problem.h"
#include "theory/probe.h"

namespace lemmalab {

// One [[optimizer]] of the spec, built: the algorithm, its schedule and the probes that apply.
template <typename T>
struct PreparedRun {
  std::string label;
  std::string optimizer;  // the registry name
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<DistributedOptimizer<T>> algorithm;
  Hyperparameters hyperparameters;  // what the optimizer and its schedule read, resolved
  std::vector<std::unique_ptr<Probe<T>>> probes;
};

// How every run of the experiment steps and what it records, from the spec.
struct LoopPlan {
  std::int64_t steps = 0;  // each run's last step (the spec's, or fewer for a trace)
  std::int64_t eval_every = 1;
  std::int64_t metrics_every = 1;
  std::int64_t probe_every = 1;
  int workers = 1;
  std::uint64_t seed = 0;
  CommSpec comm;
};

template <typename T>
struct PreparedExperiment {
  LoopPlan plan;
  std::shared_ptr<const Dataset> data;  // null when the problem makes its own
  std::unique_ptr<Problem<T>> problem;
  // The problem in float64 for its reference constants (spec `reference`), on an fp32 run that
  // starts rather than resumes; released once they are computed.
  std::unique_ptr<Problem<double>> exact;
  std::optional<int> reference_iterations;  // set when the spec asks for reference constants
  std::vector<Constant> constants;
  std::vector<PreparedRun<T>> runs;
  std::vector<std::string> unused_probes;  // listed, applying to no run (probes_may_not_apply)
  std::optional<NetworkModel> network;
  std::string communication;  // scheme, topology, backend and network model, in words
  Precision precision = Precision::kFp32;
  std::int64_t checkpoint_every = 0;
  double result_values = 0;  // ExperimentReport::result_values
  // The results' metadata, in the order it is recorded: the spec as given, the build, the job.
  std::vector<std::pair<std::string, std::string>> meta;
  std::optional<ResultsWriter> writer;
};

}  // namespace lemmalab
