// The step loop of one run: from x_0 (or the checkpoint it resumes) to its last step or its
// divergence, recording the metrics (theory/metrics.h), the probes' series and the run's record
// into the results, and saving checkpoints when due.
//
// Every metrics_every steps (and at every evaluated step and the last), the metrics table
// receives the step metrics: lr (the step's), minibatch_loss (mean over workers, averaged over
// the steps since the last record), max_grad_norm (the largest ||g|| of the workers' stochastic
// gradients in those steps), and, summed over those steps so that their running sum is the
// cumulative total: bits_sent and bits_received (per worker), bytes_intra and bytes_inter (sent
// over intra-node and inter-node links by all endpoints) and comm_seconds (communication time
// projected by the [network] model, comm/network.h). With metrics_every = 1 every value is the
// step's own. Probes observe every step and record their series every probe_every steps (and at
// the last), so their summaries cover the whole run. Every eval_every steps and at the last step,
// the evaluation metrics. A run whose parameters, losses or compressor inputs stop being finite
// is stopped and reported as diverged.
#pragma once

#include <cstdint>

#include "engine/experiment.h"
#include "engine/job.h"
#include "engine/prepared.h"
#include "engine/progress.h"
#include "engine/resume.h"

namespace lemmalab {

// Runs run `index` of `experiment` from `initial` (the evaluation of x_0, shared by every run),
// or continues it when it is the run `checkpoints` resumes; returns its report.
template <typename T>
RunReport RunLoop(PreparedExperiment<T>& experiment, std::int64_t index, const Evaluation& initial,
                  const ExperimentOptions& options, const Job& job, Progress& progress,
                  Checkpoints& checkpoints);

}  // namespace lemmalab
