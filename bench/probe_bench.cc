// What probes cost: one Birder step (8 workers, Birder's 1-bit quantizer, a diagonal quadratic of
// dimension d) through the cluster, timed three ways in the same process, interleaved step by
// step so that the machine's drift hits all three alike:
//   bare   the step alone (Cluster::Step), no probe code at all;
//   off    the step as the run loop takes it with no probe attached (engine/experiment.cc: the
//          probe pass over an empty list, an optimizer never asked to keep compression records);
//   on     the step with every probe that applies to Birder attached (ef-norm, min-b, q-domain,
//          birder-z, q-deviate, q-unbiased, and the SPAMS probes that read error feedback),
//          recording into a sink that keeps nothing.
// Counters: off_vs_bare and on_vs_bare, the ratios of total times. Issue 7 asks for off_vs_bare
// within 1% (1.00 +- 0.01).
//
//   build/release/bench/probe_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <chrono>

#include "comm/cluster.h"
#include "compressors/stochastic_binary.h"
#include "optimizers/birder.h"
#include "problems/quadratic.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

class NullSink final : public ProbeSink {
 public:
  void Record(std::string_view /*series*/, int /*worker*/, double value) override {
    benchmark::DoNotOptimize(value);
  }
};

struct Setup {
  std::unique_ptr<Problem<float>> problem;
  std::unique_ptr<DistributedOptimizer<float>> birder;
  std::unique_ptr<Cluster<float>> cluster;
  std::vector<std::unique_ptr<Probe<float>>> probes;
  Vector<float> x;

  Setup(std::int64_t d, int workers, bool with_probes) {
    QuadraticOptions q;
    q.spectrum.dimension = d;
    q.spectrum.rotate = false;
    q.noise.sigma = 0.1;
    problem = MakeQuadratic<float>(BuildQuadraticModel(q, workers, 1));
    const CompressorMaker<float> quantizer = [](const CompressorShape& shape) {
      return MakeStochasticBinary<float>(QuantizerDomain::kClip, shape.dimension);
    };
    birder = MakeBirder<float>(BirderOptions{}, Symmetric(quantizer), {d, workers});
    cluster = std::make_unique<Cluster<float>>(*problem, *birder);
    x = problem->InitialPoint();
    if (!with_probes) return;
    for (const ProbeInfo& info : Probes().entries()) {
      auto probe = info.make_f32({d, workers, 1});
      if (!probe->AppliesTo(*birder)) continue;
      probe->Attach(*birder, x);
      probes.push_back(std::move(probe));
    }
  }

  // One step as the run loop takes it (engine/experiment.cc).
  double Step(std::int64_t t, bool bare, NullSink& sink) {
    const auto start = std::chrono::steady_clock::now();
    const StepContext ctx{t, 1e-3, 7};
    cluster->Step(ctx, x);
    if (!bare && !probes.empty()) {
      const ProbeStep<float> step{t, ctx.lr, x, cluster->gradients(), *problem};
      for (auto& probe : probes) probe->Observe(step, *birder, sink);
    }
    benchmark::DoNotOptimize(x.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

void BM_ProbeOverhead(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const int workers = 8;
  // bare and off step the same optimizer (same memory, alternating which goes first), so the
  // only difference between them is the code of the probe pass.
  Setup plain(d, workers, false), on(d, workers, true);
  NullSink sink;
  double t_bare = 0, t_off = 0, t_on = 0;
  std::int64_t t = 0;
  for (auto _ : state) {
    ++t;
    if (t % 2 == 0) {
      t_bare += plain.Step(2 * t - 1, /*bare=*/true, sink);
      t_off += plain.Step(2 * t, /*bare=*/false, sink);
    } else {
      t_off += plain.Step(2 * t - 1, /*bare=*/false, sink);
      t_bare += plain.Step(2 * t, /*bare=*/true, sink);
    }
    t_on += on.Step(t, /*bare=*/false, sink);
  }
  state.counters["probes"] = static_cast<double>(on.probes.size());
  state.counters["bare_ms"] = 1e3 * t_bare / static_cast<double>(t);
  state.counters["off_vs_bare"] = t_off / t_bare;
  state.counters["on_vs_bare"] = t_on / t_bare;
}
BENCHMARK(BM_ProbeOverhead)
    ->Arg(1 << 16)
    ->Arg(1 << 18)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(300);

}  // namespace
}  // namespace lemmalab

BENCHMARK_MAIN();
