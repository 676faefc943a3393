// A GPU run's step on the Fashion-MNIST-sized MLP (784-256-10 relu, 203 530 parameters, batch 64
// per worker), with 8 and 1 024 workers:
//   step/<optimizer>/<backend>/<n>    the whole step: every worker's minibatch drawn, its
//                                     gradient (batched/gradients.h), the optimizer's phases
//                                     (batched/optimizers.h), the losses and norms to the host;
//   phases/<optimizer>/<backend>/<n>  the optimizer's phases alone, from given gradients;
//   run/<optimizer>/<backend>/<n>     the step as `lemmalab run` takes it: the whole step above
//                                     driven by the cluster (comm/cluster.h) through the device
//                                     optimizer (batched/device_optimizer.h), with the parameter
//                                     server's rounds and the traffic counts, x to the host;
//                                     run/<optimizer>/cpu/8 is the CPU optimizer's step in the
//                                     same cluster, the CPU build's run on this machine's cores.
// The host backend, the same arithmetic one element after another, is measured at 8 workers in
// the same process for reference. Issue 35's goals (scripts/gpu-check prints them): at 8 workers
// Adam <= 96 us and Birder <= 200 us a step, at 1 024 workers Birder <= 5 ms and Adam <= 2.4 ms.
//
// Time is per step; worker_steps_per_s counts a step of n workers as n.
//
//   build/release/bench/batched_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "batched/device_optimizer.h"
#include "batched/gradients.h"
#include "batched/optimizers.h"
#include "comm/cluster.h"
#include "core/rng.h"
#include "problems/sharding.h"
#include "problems/supervised.h"

namespace lemmalab::batched {
namespace {

constexpr std::int64_t kMlpParameters = 784 * 256 + 256 + 256 * 10 + 10;
constexpr std::int64_t kBatch = 64;

std::unique_ptr<BatchedOptimizer<float>> Optimizer(const std::string& name, int workers,
                                                   Backend backend) {
  OptionTable table("optimizer '" + name + "'", "");
  table.Set("name", {name, ""});
  return MakeBatchedOptimizer<float>(table, {workers, kMlpParameters, backend});
}

// The MLP on synthetic data with 10 classes: 4 batches of samples per worker, iid shards.
std::unique_ptr<Problem<float>> MakeMlpProblem(int workers) {
  const std::int64_t samples = 4 * kBatch * workers;
  Dataset data = MakeSyntheticLogistic(samples, 784, 2.0, 3);
  for (Eigen::Index k = 0; k < samples; ++k) data.train.labels[k] = static_cast<int>(k % 10);
  data.classes = 10;
  Shards shards(static_cast<std::size_t>(workers));
  for (std::int64_t k = 0; k < samples; ++k)
    shards[static_cast<std::size_t>(k % workers)].push_back(k);
  SupervisedOptions options;
  options.batch_size = kBatch;
  return MakeSupervisedProblem<float>(MakeMlpModel<float>(784, {256}, 10, Activation::kRelu), data,
                                      shards, options);
}

// Made once per worker count and shared by the benchmarks (1 024 workers' data take seconds).
const Problem<float>& MlpProblem(int workers) {
  static std::map<int, std::unique_ptr<Problem<float>>> problems;
  std::unique_ptr<Problem<float>>& problem = problems[workers];
  if (problem == nullptr) problem = MakeMlpProblem(workers);
  return *problem;
}

void BM_WholeStep(benchmark::State& state, const std::string& optimizer, Backend backend) {
  const int workers = static_cast<int>(state.range(0));
  const Problem<float>& problem = MlpProblem(workers);
  BatchedGradients<float> gradients(DeviceSamples<float>::Of(problem, backend), kMlpParameters);
  auto step = Optimizer(optimizer, workers, backend);
  const Vector<float> x0 = problem.InitialPoint();
  Buffer<float> x(backend, static_cast<std::size_t>(kMlpParameters));
  x.Upload(std::span<const float>(x0.data(), static_cast<std::size_t>(x0.size())));
  Buffer<float> g(backend, static_cast<std::size_t>(workers * kMlpParameters));
  std::vector<double> losses(static_cast<std::size_t>(workers)), norms(losses.size());
  std::int64_t t = 1;
  const auto one_step = [&] {
    const StepContext ctx{t++, 1e-3, 7};
    gradients.Compute(ctx, {x.data(), 0}, g, losses, norms);
    step->Step(ctx, g, x);
    Synchronize(backend);
  };
  one_step();  // untimed: first touches
  for (auto _ : state) one_step();
  state.counters["worker_steps_per_s"] = benchmark::Counter(
      static_cast<double>(workers), benchmark::Counter::kIsIterationInvariantRate);
}

// `cpu`: the CPU optimizer instead of the device's (backend unused).
void RunStep(benchmark::State& state, const std::string& optimizer, Backend backend, bool cpu) {
  const int workers = static_cast<int>(state.range(0));
  const Problem<float>& problem = MlpProblem(workers);
  OptionTable table("optimizer '" + optimizer + "'", "");
  table.Set("name", {optimizer, ""});
  std::unique_ptr<DistributedOptimizer<float>> algorithm =
      cpu ? MakeOptimizer<float>(table, {kMlpParameters, workers, problem.Layers()})
          : MakeDeviceOptimizer<float>(table, {kMlpParameters, workers, problem.Layers()}, backend,
                                       DeviceSamples<float>::Of(problem, backend));
  Cluster<float> cluster(problem, *algorithm);
  if (!cpu) cluster.set_gradient_source(GradientSourceOf(*algorithm));
  Vector<float> x = problem.InitialPoint();
  std::int64_t t = 1;
  cluster.Step({t++, 1e-3, 7}, x);  // untimed: first touches
  for (auto _ : state) cluster.Step({t++, 1e-3, 7}, x);
  state.counters["worker_steps_per_s"] = benchmark::Counter(
      static_cast<double>(workers), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RunStep(benchmark::State& state, const std::string& optimizer, Backend backend) {
  RunStep(state, optimizer, backend, false);
}
void BM_CpuRunStep(benchmark::State& state, const std::string& optimizer) {
  RunStep(state, optimizer, Backend::kHost, true);
}

void BM_Step(benchmark::State& state, const std::string& optimizer, Backend backend) {
  const int workers = static_cast<int>(state.range(0));
  const std::int64_t d = kMlpParameters;
  auto step = Optimizer(optimizer, workers, backend);
  std::vector<std::uint32_t> words(static_cast<std::size_t>(workers * d));
  PhiloxStream({5, Purpose::kDataSynthesis, 0, 0}).Fill(words);
  std::vector<float> g(words.size());
  for (std::size_t k = 0; k < g.size(); ++k) {
    g[k] = static_cast<float>(words[k] >> 8) * 0x1p-24f - 0.5f;
  }
  Buffer<float> gradients(backend, g.size()), x(backend, static_cast<std::size_t>(d));
  gradients.Upload(g);
  std::int64_t t = 1;
  step->Step({t++, 1e-3, 7}, gradients, x);  // untimed: first touches
  Synchronize(backend);
  for (auto _ : state) {
    step->Step({t++, 1e-3, 7}, gradients, x);
    Synchronize(backend);
  }
  state.counters["worker_steps_per_s"] = benchmark::Counter(
      static_cast<double>(workers), benchmark::Counter::kIsIterationInvariantRate);
}

void Register(bool gpu) {
  for (const std::string optimizer : {"adam", "birder"}) {
    for (const auto& [kind, bench] :
         {std::pair{"step", &BM_WholeStep}, std::pair{"phases", &BM_Step},
          std::pair{"run", &BM_RunStep}}) {
      const std::string name = std::string(kind) + "/" + optimizer;
      if (std::string(kind) == "run") {
        benchmark::RegisterBenchmark((name + "/cpu").c_str(), &BM_CpuRunStep, optimizer)
            ->Arg(8)
            ->Unit(benchmark::kMicrosecond);
      }
      benchmark::RegisterBenchmark((name + "/host").c_str(), bench, optimizer, Backend::kHost)
          ->Arg(8)
          ->Unit(benchmark::kMicrosecond);
      if (!gpu) continue;
      benchmark::RegisterBenchmark((name + "/cuda").c_str(), bench, optimizer, Backend::kCuda)
          ->Arg(8)
          ->Arg(1024)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace lemmalab::batched

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::string missing = lemmalab::batched::CudaDeviceUnavailable();
  if (!missing.empty()) {
    std::fprintf(stderr, "batched_bench: no CUDA device (%s); the host backend only\n",
                 missing.c_str());
  }
  lemmalab::batched::Register(missing.empty());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
