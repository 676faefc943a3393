// The optimizer phases of a step as a GPU run takes them (batched/optimizers.h): every worker's
// phase, the 1-bit exchange with error feedback, the server and the update, one launch each for
// all workers, for the Fashion-MNIST MLP's 203 530 parameters (784-256-10), with 8 and 1 024
// workers. The gradients are given (a run still computes them on the CPU), so this is the part of
// issue 35's step goals that runs on the device today. The host backend, the same arithmetic
// one element after another, is measured at 8 workers in the same process for reference.
//
// Time is per step; worker_steps_per_s counts a step of n workers as n.
//
//   build/release/bench/batched_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "batched/optimizers.h"
#include "core/rng.h"

namespace lemmalab::batched {
namespace {

constexpr std::int64_t kMlpParameters = 784 * 256 + 256 + 256 * 10 + 10;

void BM_Step(benchmark::State& state, const std::string& optimizer, Backend backend) {
  const int workers = static_cast<int>(state.range(0));
  const std::int64_t d = kMlpParameters;
  OptionTable table("optimizer '" + optimizer + "'", "");
  table.Set("name", {optimizer, ""});
  auto step = MakeBatchedOptimizer<float>(table, {workers, d, backend});
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
    benchmark::RegisterBenchmark((optimizer + "/host").c_str(), BM_Step, optimizer, Backend::kHost)
        ->Arg(8)
        ->Unit(benchmark::kMicrosecond);
    if (!gpu) continue;
    benchmark::RegisterBenchmark((optimizer + "/cuda").c_str(), BM_Step, optimizer, Backend::kCuda)
        ->Arg(8)
        ->Arg(1024)
        ->Unit(benchmark::kMicrosecond);
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
