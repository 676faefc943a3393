#include "engine/estimates.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <variant>

#include "core/error.h"
#include "core/state.h"
#include "core/text.h"
#include "optimizers/optimizer.h"
#include "theory/metrics.h"

namespace lemmalab {
namespace {

constexpr Footprint kUnmeasured = {4, 4};

}  // namespace

template <typename T>
Footprint MeasureFootprint(const OptimizerSpec& spec) {
  constexpr std::int64_t kSmall = 4096;
  const auto saved_vectors = [&](int workers, std::int64_t dimension) {
    const auto optimizer =
        MakeOptimizer<T>(*spec.AlgorithmOptions(), OptimizerContext{dimension, workers});
    double bytes = 0;
    for (const auto& [path, item] : SaveState(*optimizer)) {
      bytes += static_cast<double>(item.bytes.size());
    }
    return bytes / sizeof(T);
  };
  try {
    const double one = saved_vectors(1, kSmall);
    const double worker = (saved_vectors(2, kSmall) - one) / kSmall;
    const double process = (saved_vectors(1, 2 * kSmall) - one) / kSmall - worker;
    return {std::max(0.0, process), std::max(0.0, worker)};
  } catch (const OptionError&) {
    throw;
  } catch (const UserError&) {
    return kUnmeasured;
  }
}

template <typename T>
MemoryEstimate EstimateMemory(const RunSpec& spec, const Problem<T>& problem, const Dataset* data,
                              const std::vector<Footprint>& footprints, int local_workers,
                              int threads, double held, bool gradients_on_device) {
  const auto d = static_cast<double>(problem.dimension());
  const double t = sizeof(T);
  // What sets d: the problem and its size options, and the data's features.
  std::string size = fmt::format("d = {} parameters of problem '{}'", problem.dimension(),
                                 spec.problem->GetString("name", ""));
  for (const char* key : {"hidden", "dimension"}) {
    const auto it = spec.problem->entries().find(key);
    if (it == spec.problem->entries().end()) continue;
    const auto* list = std::get_if<OptionValue::Array>(&it->second.data);
    if (list == nullptr) {
      size += fmt::format(" with {} = {}", key, it->second.Show());
      continue;
    }
    std::vector<std::string> shown;  // the first few widths of a long list, and its length
    for (std::size_t i = 0; i < list->size() && i < 4; ++i) shown.push_back((*list)[i].Show());
    if (list->size() > 4) shown.push_back(fmt::format("... ({} values)", list->size()));
    size += fmt::format(" with {} = [{}]", key, JoinNames(shown));
  }
  if (data != nullptr) size += fmt::format(" on {} features", data->num_features());
  MemoryEstimate estimate;
  if (held > 0) {
    estimate.Add("what the process holds already", held,
                 "measured before the first step: the program, the data and the problem");
  } else if (data != nullptr) {
    double bytes = 0;
    for (const auto& buffer : data->Buffers()) bytes += static_cast<double>(buffer.size());
    estimate.Add("the data", bytes, "[data]");
  }
  // A GPU run keeps its optimizers' state and messages on the device, and its gradients too
  // where the problem computes them there (EstimateDeviceMemory, engine/device.h, counts them):
  // the host keeps each run's x, the CPU's gradients on their way to the device, and copies of
  // the device state where probes or checkpoints read it (batched/device_state.h).
  const bool on_device = spec.device == Device::kCuda;
  const int cpu_gradients = on_device && gradients_on_device ? 0 : local_workers;
  problem.AddWorkingMemory(cpu_gradients, threads, estimate);
  double process = 0, worker = 0, state = 0;
  for (const Footprint& f : footprints) {
    process += on_device ? 1 : 1 + f.process_vectors + 2;  // x, the state, the reply, its decoding
    worker += f.worker_vectors;
    state += f.process_vectors + local_workers * f.worker_vectors;
  }
  const auto optimizers = static_cast<double>(footprints.size());
  estimate.Add("the parameters and the optimizers' state kept once", process * d * t,
               fmt::format("{} x {:.3g} vectors over {} optimizers x {} bytes", size, process,
                           footprints.size(), t));
  if (!on_device) {
    worker += 3 * optimizers;  // the gradient, the message and its parts, of each run's workers
    estimate.Add("every worker's optimizer state, gradient and message",
                 local_workers * worker * d * t,
                 fmt::format("workers = {} x {} x {:.3g} vectors over {} optimizers x {} bytes",
                             local_workers, size, worker, footprints.size(), t));
  } else if (cpu_gradients > 0) {
    // The cluster's gradient, the device optimizer's copy of it for the upload, and the host
    // copy of the worker's own x where the algorithm keeps one (0/1 Adam's local steps).
    estimate.Add("every worker's gradient, computed on the CPU for the GPU",
                 3 * cpu_gradients * optimizers * d * t,
                 fmt::format("workers = {} x {} x 3 vectors x {} optimizers x {} bytes",
                             cpu_gradients, size, footprints.size(), t));
  }
  // Measured on a quadratic of d = 2e6 (fp32, 1 and 4 workers, SGD, Birder, EF21, 0/1 Adam): the
  // parts above left 1.01-1.22x of the peak unexplained, two vectors of doubles per process.
  estimate.Add("the final parameters and an evaluation's gradient", 2 * d * 8,
               fmt::format("2 x {} x 8 bytes", size));
  // Measured with ef-norm, q-domain and min-b on 4 workers: about half a vector per worker and
  // probe (a probe's previous values, its per-worker sums).
  const auto probes = static_cast<double>(spec.probes.size() + spec.check_probes.size());
  if (on_device && (probes > 0 || spec.checkpoint_every > 0)) {
    // Probes also see every worker's gradient, copied from the GPU (Cluster::consumed_gradients).
    const double copies = state + (probes > 0 ? local_workers * optimizers : 0);
    estimate.Add("the host copies of the GPU state that probes and checkpoints read",
                 copies * d * t,
                 fmt::format("the optimizers' state{}, {:.3g} vectors of {} x {} bytes",
                             probes > 0 ? " and the workers' gradients" : "", copies, size, t));
  }
  if (probes > 0) {
    estimate.Add("the probes' buffers", probes * (local_workers + 1) * 0.5 * d * t,
                 fmt::format("{} probes x (workers = {} + 1) x half a vector of d x {} bytes",
                             probes, local_workers, t));
  }
  if (spec.checkpoint_every > 0) {
    estimate.Add(
        "a checkpoint's copy of the state",
        (on_device ? state : process + local_workers * worker) * d * t,
        fmt::format("checkpoint_every = {}: the state above, saved", spec.checkpoint_every));
  }
  return estimate;
}

MemoryEstimate EstimateResults(const RunSpec& spec, std::size_t runs, std::size_t probes) {
  const auto steps = static_cast<double>(spec.steps);
  const auto every = [](std::int64_t k) {
    return static_cast<double>(std::max<std::int64_t>(1, k));
  };
  const double records = std::ceil(steps / every(spec.metrics_every));
  const double evaluations = std::ceil(steps / every(spec.eval_every)) + 1;
  const auto n = static_cast<double>(runs);
  MemoryEstimate estimate;
  estimate.Add("the per-step metrics", n * records * kStepMetrics * kBytesPerResultRow,
               fmt::format("steps = {} / metrics_every = {} x {} metrics x {} runs", spec.steps,
                           std::max<std::int64_t>(1, spec.metrics_every), kStepMetrics, runs));
  // Every evaluation metric counts, though a problem without test data or a known f* records
  // fewer: an estimate that refuses a run must not fall short.
  estimate.Add("the evaluations", n * evaluations * kEvaluationMetrics * kBytesPerResultRow,
               fmt::format("steps = {} / eval_every = {} x {} metrics x {} runs", spec.steps,
                           spec.eval_every, kEvaluationMetrics, runs));
  // A probe records a few series per sender (the workers and the server) at each kept step.
  estimate.Add(
      "the probe series",
      static_cast<double>(probes) * std::ceil(steps / every(spec.probe_every)) *
          (spec.workers + 1) * 4 * kBytesPerResultRow,
      fmt::format("steps = {} / probe_every = {} x {} probes x {} senders x 4 series", spec.steps,
                  std::max<std::int64_t>(1, spec.probe_every), probes, spec.workers + 1));
  return estimate;
}

double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void RequireResidentWithin(const MemoryLimit& limit, std::int64_t t) {
  const double resident = ResidentBytes();
  if (resident <= 1.1 * limit.bytes) return;
  throw UserError(fmt::format(
      "the run holds {} at step {}, more than {} allows ({}) by over 10%; its estimate before the "
      "first step fell short (please report the spec): no results written",
      FormatBytes(resident), t, limit.source, FormatBytes(limit.bytes)));
}

template Footprint MeasureFootprint<float>(const OptimizerSpec&);
template Footprint MeasureFootprint<double>(const OptimizerSpec&);
template MemoryEstimate EstimateMemory(const RunSpec&, const Problem<float>&, const Dataset*,
                                       const std::vector<Footprint>&, int, int, double, bool);
template MemoryEstimate EstimateMemory(const RunSpec&, const Problem<double>&, const Dataset*,
                                       const std::vector<Footprint>&, int, int, double, bool);

}  // namespace lemmalab
