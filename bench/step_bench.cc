// Training-step time as a run takes it: a spec runs through RunExperiment (engine/experiment.h)
// with its results discarded, and the time between consecutive steps is measured from the run
// loop's step callback. Steps next to an evaluation (the first and the last) are left out, so the
// figure is the step alone: the workers' minibatch gradients, compression, the exchange and the
// update, plus the metrics the loop records every step.
//
// Workloads (issue 19): logistic regression on 784 Gaussian features and the 784-256-10 MLP on
// Fashion-MNIST, 8 workers x 64 samples, fp32, for Adam, Birder and 1-bit Adam. Each benchmark
// reports `step_us` (median step) and `vs_adam`, its median over the median of Adam's step on
// the same problem, measured in the same process just before it. `gemm_ceiling` (MLP only) is
// the time of the step's matrix products alone, run back to back as one batch of 512 rows
// through the same library call, over the median step: 1.0 would mean everything but the
// products is free.
//
//   build/release/bench/step_bench --benchmark_counters_tabular=true
// BM_Kernels compares the OpenBLAS kernels chosen at start with every other set the CPU runs
// (issue 37). bench/side_by_side.py runs this next to the same loops in PyTorch and numpy.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/gemm_ceiling.h"
#include "core/blas.h"
#include "engine/experiment.h"
#include "engine/spec.h"
#include "problems/supervised.h"

namespace lemmalab {
namespace {

constexpr int kSteps = 60;

const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist";

// A spec of kSteps steps, 8 workers, fp32, no evaluation but at the ends, with these [data] and
// [problem] tables and one optimizer.
std::string Spec(const std::string& data_and_problem, const std::string& optimizer) {
  return fmt::format(R"(seed = 1
steps = {}
workers = 8
precision = "fp32"
eval_every = 1000000
{}
[[optimizer]]
name = "{}"
schedule = {{ name = "constant", lr = 1e-3 }}
)",
                     kSteps, data_and_problem, optimizer);
}

std::string LogregSpec(const std::string& optimizer) {
  return Spec(R"([data]
source = "synthetic-logistic"
samples = 8192
features = 784
[problem]
name = "logreg"
batch_size = 64)",
              optimizer);
}

std::string MlpSpec(const std::string& optimizer) {
  return Spec(fmt::format(R"([data]
source = "idx"
dir = "{}"
normalize = "pixels"
[problem]
name = "mlp"
hidden = [256]
activation = "relu"
batch_size = 64)",
                          kFashionMnist),
              optimizer);
}

// The median time between consecutive steps of one run of `spec`, leaving out the first two and
// the last (the evaluations at step 0 and at the last step fall into those intervals).
double MedianStepSeconds(const std::string& spec_text, DataCache& cache) {
  const RunSpec spec = ParseSpec(spec_text, "step_bench.toml", {});
  std::vector<std::chrono::steady_clock::time_point> at;
  at.reserve(kSteps + 1);
  ExperimentOptions options;
  options.progress = false;
  options.discard_results = true;
  options.data_cache = &cache;
  options.on_step = [&](std::int64_t, double) { at.push_back(std::chrono::steady_clock::now()); };
  RunExperiment(spec, options);
  std::vector<double> steps;
  for (std::size_t i = 2; i + 1 < at.size(); ++i) {
    steps.push_back(std::chrono::duration<double>(at[i] - at[i - 1]).count());
  }
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  return steps[steps.size() / 2];
}

DataCache& Cache() {
  static DataCache cache;
  return cache;
}

void BM_Step(benchmark::State& state, bool mlp, const std::string& optimizer) {
  if (mlp && !std::filesystem::exists(kFashionMnist)) {
    state.SkipWithError("Fashion-MNIST is not installed (scripts/install-deps)");
    return;
  }
  const auto spec = [&](const std::string& name) { return mlp ? MlpSpec(name) : LogregSpec(name); };
  double adam = 0, self = 0;
  for (auto _ : state) {
    adam = MedianStepSeconds(spec("adam"), Cache());
    self = optimizer == "adam" ? adam : MedianStepSeconds(spec(optimizer), Cache());
  }
  state.counters["step_us"] = 1e6 * self;
  state.counters["vs_adam"] = self / adam;
  if (mlp) {
    const double flops = 8 * MlpPassFlops(64, {784, 256, 10});  // 8 workers' minibatches
    state.counters["gemm_ceiling"] = flops / PeakGemmFlops(omp_get_max_threads()) / self;
  }
}

// The MLP step (Adam) on the kernels chosen at start (core/blas.h) and on every other OpenBLAS
// kernel set this CPU can run, switched in this process and measured in turns (the machine is
// shared and noisy): `chosen_vs_best` is the chosen kernels' median step over the fastest set's,
// whose name is the label; 1.0 means the choice is the best there is.
void BM_Kernels(benchmark::State& state) {
  if (!std::filesystem::exists(kFashionMnist)) {
    state.SkipWithError("Fashion-MNIST is not installed (scripts/install-deps)");
    return;
  }
  const std::string chosen = openblas_get_corename();
  std::vector<std::string> kernels{chosen};
  for (const char* k : {"SkylakeX", "Haswell", "Zen", "Sandybridge", "Prescott"}) {
    if (k != chosen && KernelVectorIsa(k) <= CpuVectorIsa()) kernels.emplace_back(k);
  }
  std::vector<double> best(kernels.size(), 1e300);
  for (auto _ : state) {
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      if (UseOpenBlasKernels(kernels[k]).empty()) {
        state.SkipWithError("this OpenBLAS cannot switch kernels");
        return;
      }
      best[k] = std::min(best[k], MedianStepSeconds(MlpSpec("adam"), Cache()));
    }
  }
  UseOpenBlasKernels(chosen);
  const std::size_t fastest =
      static_cast<std::size_t>(std::min_element(best.begin(), best.end()) - best.begin());
  state.counters["chosen_us"] = 1e6 * best[0];
  state.counters["best_us"] = 1e6 * best[fastest];
  state.counters["chosen_vs_best"] = best[0] / best[fastest];
  std::string label = fmt::format("chosen {}, fastest {};", chosen, kernels[fastest]);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    label += fmt::format(" {} {:.0f} us", kernels[k], 1e6 * best[k]);
  }
  state.SetLabel(label);
}

// BM_Step/<problem>_<optimizer> (bench/side_by_side.py reads the names), problems in turn.
void Register() {
  for (const bool mlp : {false, true}) {
    for (const std::string optimizer : {"adam", "birder", "onebit-adam"}) {
      std::string name = std::string(mlp ? "mlp_" : "logreg_") + optimizer;
      std::replace(name.begin(), name.end(), '-', '_');
      benchmark::RegisterBenchmark(("BM_Step/" + name).c_str(), BM_Step, mlp, optimizer)
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark("BM_Kernels/mlp_adam", BM_Kernels)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace lemmalab

int main(int argc, char** argv) {
  lemmalab::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
