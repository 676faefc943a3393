// Every registered probe on every registered optimizer it applies to, bare and with weight decay
// (both modes): weight decay keeps every probe the bare optimizer supports, and the probe records
// the same series with it. New optimizers and probes are picked up by themselves. The finding
// this pins: with weight_decay = 0.01 a Birder run once lost its q-unbiased and birder-z probes,
// because weight decay was a wrapper that forwarded only part of what probes read (it is now
// applied by the cluster around the phases, optimizers/weight_decay.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "comm/cluster.h"
#include "problems/quadratic.h"
#include "tests/optimizer_test_util.h"
#include "tests/theory_doubles.h"
#include "theory/probe.h"
#include "theory/probe_series.h"

namespace lemmalab {
namespace {

constexpr std::int64_t kDimension = 16;
constexpr int kWorkers = 3;

struct Recorded {
  bool applies = false;
  std::set<std::string> series;  // "probe/series"
  RunEvidence evidence;
  int most_fetches = 0;  // of the gradients in one step (ProbeStep's StepGradients)
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
    int fetches = 0;
    const StepGradients<double> gradients([&] {
      ++fetches;
      return cluster.consumed_gradients();
    });
    instance->Observe({t, lr, x, gradients, *problem}, view, sink);
    out.most_fetches = std::max(out.most_fetches, fetches);
  }
  for (const auto& [key, series] : out.evidence.probes) out.series.insert(key);
  return out;
}

constexpr std::array<std::string_view, 2> kDecayModes = {"decoupled", "l2"};

// One registered probe on one registered optimizer, bare and with weight decay in each of
// kDecayModes.
struct Pairing {
  const OptimizerInfo& optimizer;
  const ProbeInfo& probe;
  Recorded plain;
  std::array<Recorded, kDecayModes.size()> decayed;
};

// Calls `visit(const Pairing&)` for every registered probe on every registered optimizer.
template <typename Visit>
void ForEveryPairing(Visit&& visit) {
  for (const OptimizerInfo& optimizer : Optimizers().entries()) {
    const std::string bare = fmt::format("name = '{}'", optimizer.name);
    for (const ProbeInfo& probe : Probes().entries()) {
      Pairing pairing{optimizer, probe, Observe(probe, bare), {}};
      for (std::size_t k = 0; k < kDecayModes.size(); ++k) {
        pairing.decayed[k] = Observe(
            probe,
            fmt::format("{}\nweight_decay = 0.01\nweight_decay_mode = '{}'", bare, kDecayModes[k]));
      }
      visit(pairing);
    }
  }
}

TEST(ProbeContract, EveryProbeSurvivesWeightDecayOnEveryOptimizer) {
  int pairs = 0;
  ForEveryPairing([&](const Pairing& p) {
    for (std::size_t k = 0; k < kDecayModes.size(); ++k) {
      EXPECT_EQ(p.decayed[k].applies, p.plain.applies)
          << p.probe.name << " on " << p.optimizer.name << " with " << kDecayModes[k]
          << " weight decay";
      EXPECT_EQ(p.decayed[k].series, p.plain.series)
          << p.probe.name << " on " << p.optimizer.name << " with " << kDecayModes[k]
          << " weight decay";
    }
    pairs += p.plain.applies ? 1 : 0;
  });
  // Every probe applies to some optimizer (the registry has no dead probe).
  EXPECT_GE(pairs, static_cast<int>(Probes().entries().size()));
}

// A probe's step fetches the workers' gradients only if the probe reads them, and once: a GPU
// run copies them from the device for it (theory/probe.h names the probes that read them).
TEST(ProbeContract, OnlyTheProbesThatReadGradientsFetchThemOncePerStep) {
  std::set<std::string> fetching;
  ForEveryPairing([&](const Pairing& p) {
    EXPECT_LE(p.plain.most_fetches, 1) << p.probe.name << " on " << p.optimizer.name;
    if (p.plain.most_fetches > 0) fetching.insert(std::string(p.probe.name));
  });
  EXPECT_EQ(fetching, (std::set<std::string>{"birder-z", "shift-error", "spams-moments"}));
}

// Declared series that the runs above cannot record: they exist once 1-bit Adam's or 1-bit LAMB's
// variance is frozen, at the end of step warmup_steps (default 100), and the runs take 12 steps.
constexpr std::array<std::string_view, 7> kRecordedOnlyAfterWarmup = {
    "onebit-error/frozen_sqrt_min", "onebit-error/frozen_sqrt_max",
    "lamb-ratios/target",           "lamb-ratios/r",
    "lamb-ratios/r_clip_excess",    "lamb-ratios/r_step_excess",
    "lamb-ratios/c_product_excess"};

// theory/probe_series.cc declares exactly the series the probes record: every series recorded on
// any optimizer (bare or with weight decay) has a declaration, and every declaration is recorded
// by some run (none is stale), but for kRecordedOnlyAfterWarmup.
TEST(ProbeContract, EveryRecordedSeriesIsDeclaredAndEveryDeclarationRecorded) {
  std::set<std::string, std::less<>> recorded;  // "probe/series"
  ForEveryPairing([&](const Pairing& p) {
    recorded.insert(p.plain.series.begin(), p.plain.series.end());
    for (const Recorded& decayed : p.decayed) {
      recorded.insert(decayed.series.begin(), decayed.series.end());
    }
  });
  for (const std::string& key : recorded) {
    const std::string_view name = key;
    const std::size_t slash = name.find('/');
    ASSERT_NE(slash, std::string_view::npos) << key;
    EXPECT_NE(FindProbeSeries(name.substr(0, slash), name.substr(slash + 1)), nullptr)
        << key << " is recorded but not declared in theory/probe_series.cc";
  }
  std::set<std::string, std::less<>> declared;
  for (const SeriesInfo& info : ProbeSeries()) {
    const std::string key = fmt::format("{}/{}", info.probe, info.series);
    EXPECT_TRUE(declared.insert(key).second) << key << " is declared twice";
    if (std::ranges::find(kRecordedOnlyAfterWarmup, std::string_view(key)) !=
        kRecordedOnlyAfterWarmup.end()) {
      EXPECT_FALSE(recorded.contains(key))
          << key << " is recorded here now: take it out of kRecordedOnlyAfterWarmup";
      continue;
    }
    EXPECT_TRUE(recorded.contains(key))
        << key << " is declared in theory/probe_series.cc but no probe recorded it";
  }
  for (const std::string_view key : kRecordedOnlyAfterWarmup) {
    EXPECT_TRUE(declared.contains(key)) << key << " is excluded but not declared";
  }
}

// Lemma 2's identity replays Birder's update from the gradients the worker phases consumed: with
// l2 weight decay those are g + lambda x, and the residual stays at rounding.
TEST(ProbeContract, BirderIdentityHoldsUnderL2WeightDecay) {
  const Recorded l2 =
      Observe(*Probes().Find("birder-z"),
              "name = 'birder'\nbeta = 0.9\nweight_decay = 0.01\nweight_decay_mode = 'l2'");
  ASSERT_TRUE(l2.applies);
  const Series& relative = l2.evidence.probes.at("birder-z/relative");
  ASSERT_EQ(relative.points().size(), 12u);
  EXPECT_LT(relative.Max()->value, 1e-13);
}

}  // namespace
}  // namespace lemmalab
