// Every registered probe on every registered optimizer it applies to, bare and wrapped in weight
// decay (both modes): a wrapper keeps every probe the bare optimizer supports, and the probe
// records the same series through it. New optimizers and probes are picked up by themselves.
// The finding this pins: with weight_decay = 0.01 a Birder run lost its q-unbiased and birder-z
// probes, because the wrapper forwarded only part of what probes read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "comm/cluster.h"
#include "problems/quadratic.h"
#include "tests/optimizer_test_util.h"
#include "tests/theory_doubles.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

constexpr std::int64_t kDimension = 16;
constexpr int kWorkers = 3;

struct Recorded {
  bool applies = false;
  std::set<std::string> series;  // "probe/series"
  RunEvidence evidence;
};

// Runs `optimizer_toml` for 12 steps on a noisy quadratic with `probe` attached, as a run does.
Recorded Observe(const ProbeInfo& probe, const std::string& optimizer_toml) {
  QuadraticOptions q;
  q.spectrum.dimension = kDimension;
  q.noise.sigma = 0.1;
  const auto problem = MakeQuadratic<double>(BuildQuadraticModel(q, kWorkers, 5));
  auto table = ParseOptionTable(optimizer_toml, "optimizer", "test.toml");
  auto optimizer = MakeOptimizer<double>(*table, OptimizerContext{kDimension, kWorkers});
  ProbeContext context{kDimension, kWorkers, 7};
  context.hyperparameters = table->Resolved();
  auto instance = FactoryFor<double>(probe)(context);
  Observable<double>& view = optimizer->observable();
  Recorded out;
  out.applies = instance->AppliesTo(view);
  if (!out.applies) return out;
  Cluster<double> cluster(*problem, *optimizer);
  Eigen::VectorXd x = problem->InitialPoint();
  instance->Attach(view, x);
  testing::EvidenceSink sink;
  sink.run = &out.evidence;
  sink.probe = std::string(probe.name);
  for (std::int64_t t = 1; t <= 12; ++t) {
    const double lr = 0.05 / std::sqrt(static_cast<double>(t));
    cluster.Step({t, lr, 11}, x);
    sink.step = t;
    const std::span<const Eigen::VectorXd> consumed = view.ConsumedGradients();
    instance->Observe({t, lr, x, consumed.empty() ? cluster.gradients() : consumed, *problem}, view,
                      sink);
  }
  for (const auto& [key, series] : out.evidence.probes) out.series.insert(key);
  return out;
}

TEST(ProbeContract, EveryProbeSurvivesWeightDecayOnEveryOptimizer) {
  int pairs = 0;
  for (const OptimizerInfo& optimizer : Optimizers().entries()) {
    const std::string bare = fmt::format("name = '{}'", optimizer.name);
    for (const ProbeInfo& probe : Probes().entries()) {
      const Recorded plain = Observe(probe, bare);
      for (const char* mode : {"decoupled", "l2"}) {
        const Recorded decayed = Observe(
            probe, fmt::format("{}\nweight_decay = 0.01\nweight_decay_mode = '{}'", bare, mode));
        EXPECT_EQ(decayed.applies, plain.applies)
            << probe.name << " on " << optimizer.name << " with " << mode << " weight decay";
        EXPECT_EQ(decayed.series, plain.series)
            << probe.name << " on " << optimizer.name << " with " << mode << " weight decay";
      }
      pairs += plain.applies ? 1 : 0;
    }
  }
  // Every probe applies to some optimizer (the registry has no dead probe).
  EXPECT_GE(pairs, static_cast<int>(Probes().entries().size()));
}

// Lemma 2's identity replays Birder's update from the gradients the worker phases consumed: with
// l2 weight decay those are g + lambda x, and the residual stays at rounding.
TEST(ProbeContract, BirderIdentityHoldsUnderL2WeightDecay) {
  const Recorded l2 =
      Observe(*Probes().Find("birder-z"),
              "name = 'birder'\nbeta = 0.9\nweight_decay = 0.01\nweight_decay_mode = 'l2'");
  ASSERT_TRUE(l2.applies);
  const Series& relative = l2.evidence.probes.at("birder-z/relative");
  ASSERT_EQ(relative.points.size(), 12u);
  EXPECT_LT(relative.Max()->value, 1e-13);
}

}  // namespace
}  // namespace lemmalab
