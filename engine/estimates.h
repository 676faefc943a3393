// What a run will take before it takes it: its memory, estimated part by part and checked
// against --max-memory before the first step (and its resident set watched during the run), and
// the size of its results on disk, checked against --max-results. Every part names the options
// that drive it, so a refusal tells the user what to change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/resources.h"
#include "engine/spec.h"
#include "problems/dataset.h"
#include "problems/problem.h"

namespace lemmalab {

// Vectors of the run's scalar that an optimizer configuration keeps per process (replicas' and
// servers' state) and per worker the process runs (momentum, error feedback).
struct Footprint {
  double process_vectors = 0;
  double worker_vectors = 0;
};

// Measured from the state the optimizer saves (core/state.h) when built for one and two workers
// at a small dimension, so nothing has to be declared and kept in step with the code. It is
// built from a copy of its table, so a wrong option is reported here, before the data load
// (OptionError); a refusal that depends on the dimension (k > d) waits for the real build, and
// the estimate then assumes 4 vectors of each kind.
template <typename T>
Footprint MeasureFootprint(const OptimizerSpec& spec);

// The memory a run will take, part by part: what the process holds already (`held`: its
// resident set, measured after the data and problem were built; 0 when other runs share the
// process, and the data is estimated instead), the problem's working memory, the parameters and
// the optimizers' per-process state (every optimizer of the spec is built before the first step),
// and every worker's state with its gradient and message. A GPU run (device = "cuda") holds only
// its parameters here, the CPU's gradients unless `gradients_on_device`, and host copies of its
// state for probes and checkpoints; the rest is on the GPU (EstimateDeviceMemory).
template <typename T>
MemoryEstimate EstimateMemory(const RunSpec& spec, const Problem<T>& problem, const Dataset* data,
                              const std::vector<Footprint>& footprints, int local_workers,
                              int threads, double held, bool gradients_on_device);

// About how many bytes a row of the metrics or probes table takes in results.sqlite and
// metrics.csv together (measured on lemmalab's own runs: 86).
inline constexpr double kBytesPerResultRow = 100;

// The results' size on disk for `runs` runs with `probes` probes among them, estimated from the
// steps and how often each kind of row is recorded, part by part with the options that drive it.
MemoryEstimate EstimateResults(const RunSpec& spec, std::size_t runs, std::size_t probes);

// The memory this process holds now (its resident set, /proc/self/statm), in bytes; 0 where it
// cannot be read.
double ResidentBytes();

// Throws UserError when this process holds more than 10% past `limit` at step `t`: the run loop
// checks it every 16 steps when --max-memory was given (and the run has the process alone).
void RequireResidentWithin(const MemoryLimit& limit, std::int64_t t);

}  // namespace lemmalab
