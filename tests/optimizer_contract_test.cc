// What every registered optimizer must do, checked for all of them (new ones included
// automatically): build from an empty table (valid defaults, listed options), run in both
// precisions, repeat itself bit for bit, and descend on a quadratic whose answer is known.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "optimizers/optimizer.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using testing::Int;
using testing::MakeNamed;
using testing::OptionPairs;
using testing::Real;

// f(x) = (1/2) sum_j x_j^2 split over n workers; worker i sees x + noise_i with sum_i noise_i = 0
// so the mean gradient is exactly x. Returns the parameters after `steps` steps and the bytes
// of every message, in order.
template <typename T>
Vector<T> RunQuadratic(DistributedOptimizer<T>& opt, int workers, int steps, double lr,
                       std::vector<std::uint8_t>* wire) {
  Vector<T> x(6);
  x << 1, -2, 0.5, 3, -1, 0.25;
  std::vector<Vector<T>> g(static_cast<std::size_t>(workers));
  std::vector<Message> up(static_cast<std::size_t>(workers));
  Message down;
  Vector<T> decayed;
  for (int t = 1; t <= steps; ++t) {
    const StepContext ctx{t, lr, 99};
    for (int i = 0; i < workers; ++i) {
      const Vector<T>* local = opt.LocalParameters(i);
      const Vector<T> at = local != nullptr ? *local : x;
      const T noise = static_cast<T>(0.1 * (2 * i - (workers - 1)) * std::cos(t));
      auto& gi = g[static_cast<std::size_t>(i)];
      gi = at.array() + noise;
      opt.WorkerStep(ctx, i, at, ConsumedGradient<T>(opt.weight_decay(), ctx, i, gi, at, decayed),
                     up[static_cast<std::size_t>(i)]);
    }
    opt.ServerStep(ctx, 0, up, down);
    DecayBeforeApply<T>(opt.weight_decay(), ctx, x);
    opt.Apply(ctx, std::span<const Message>(&down, 1), x);
    if (wire != nullptr) {
      for (const Message& m : up) wire->insert(wire->end(), m.bytes.begin(), m.bytes.end());
      wire->insert(wire->end(), down.bytes.begin(), down.bytes.end());
    }
  }
  return x;
}

class EveryOptimizer : public ::testing::TestWithParam<std::string> {
 protected:
  const OptimizerInfo& info() const { return *Optimizers().Find(GetParam()); }
};

TEST_P(EveryOptimizer, HasAReferenceAndListsItsOptionsWithDefaults) {
  EXPECT_FALSE(info().reference.empty());
  for (const OptionTable::Use& use : OptimizerOptions(info())) {
    EXPECT_FALSE(use.description.empty()) << use.key;
    EXPECT_NE(use.description, "optional") << use.key << ": describe it (OptionTable::Describe)";
  }
}

// Every moving-average factor an optimizer reads (beta, beta1, beta2, beta3, momentum) follows
// the one rule the premises and bounds state, kMovingAverageFactor: 1 is refused, naming it.
TEST_P(EveryOptimizer, RefusesAMovingAverageFactorOfOne) {
  for (const OptionTable::Use& use : OptimizerOptions(info())) {
    if (!use.key.starts_with("beta") && use.key != "momentum") continue;
    SCOPED_TRACE(use.key);
    EXPECT_NO_THROW(MakeNamed<double>(info().name, {{use.key, Real(0.5)}}, {6, 3}));
    try {
      MakeNamed<double>(info().name, {{use.key, Real(1.0)}}, {6, 3});
      ADD_FAILURE() << use.key << " = 1 accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(kMovingAverageFactor.ToString()), std::string::npos)
          << e.what();
    }
  }
}

TEST_P(EveryOptimizer, RepeatsItselfBitForBit) {
  std::vector<std::uint8_t> wire1, wire2;
  auto a = MakeNamed<float>(info().name, {}, {6, 3}), b = MakeNamed<float>(info().name, {}, {6, 3});
  const Vector<float> x1 = RunQuadratic(*a, 3, 20, 0.01, &wire1),
                      x2 = RunQuadratic(*b, 3, 20, 0.01, &wire2);
  EXPECT_EQ(x1, x2);
  EXPECT_EQ(wire1, wire2);
}

// Every algorithm, with its defaults, must make progress on the simplest problem there is; a
// sign error or a dropped update anywhere fails this for the algorithm that has it.
TEST_P(EveryOptimizer, DescendsOnAQuadraticInBothPrecisions) {
  auto f = [](const auto& x) { return 0.5 * static_cast<double>(x.squaredNorm()); };
  auto single = MakeNamed<float>(info().name, {}, {6, 2});
  auto dbl = MakeNamed<double>(info().name, {}, {6, 2});
  const double f0 = 0.5 * (1 + 4 + 0.25 + 9 + 1 + 0.0625);
  const double f_float = f(RunQuadratic(*single, 2, 400, 0.02, nullptr));
  const double f_double = f(RunQuadratic(*dbl, 2, 400, 0.02, nullptr));
  EXPECT_LT(f_float, 0.25 * f0);
  EXPECT_LT(f_double, 0.25 * f0);
  EXPECT_TRUE(std::isfinite(f_float) && std::isfinite(f_double));
}

// What probes see is each optimizer's declared state (optimizers/optimizer_state.h), found by
// who holds it. Before and after a warm-up (every option that ends one set to 2): a quantity one
// worker has, every worker has, at the run's size (d, or one entry per layer); a vector every
// replica holds alike (the same address for every worker) is the server's too; and the server
// never sees a worker's own vector.
TEST_P(EveryOptimizer, ShowsItsStateByWhoHoldsIt) {
  constexpr int kWorkers = 3;
  constexpr Eigen::Index kD = 6;
  OptionPairs short_phases;
  for (const OptionTable::Use& use : OptimizerOptions(info())) {
    if (use.key == "warmup_steps" || use.key == "var_freeze_step") {
      short_phases.emplace_back(use.key, Int(2));
    }
  }
  for (const int steps : {1, 5}) {
    auto optimizer = MakeNamed<double>(info().name, short_phases, {kD, kWorkers});
    RunQuadratic(*optimizer, kWorkers, steps, 0.01, nullptr);
    const Observable<double>& view = optimizer->observable();
    for (int q = 0; q <= static_cast<int>(Quantity::kShift); ++q) {
      const auto quantity = static_cast<Quantity>(q);
      SCOPED_TRACE(fmt::format("quantity {} after {} steps", q, steps));
      const bool per_layer = quantity == Quantity::kLayerRatio ||
                             quantity == Quantity::kLayerScale ||
                             quantity == Quantity::kLayerTarget;
      const Vector<double>* first = view.Observe(quantity, 0);
      const Vector<double>* server = view.Observe(quantity, kServer);
      for (const Vector<double>* v : {first, server}) {
        if (v != nullptr) EXPECT_EQ(v->size(), per_layer ? 1 : kD);
      }
      for (int w = 1; w < kWorkers; ++w) {
        const Vector<double>* v = view.Observe(quantity, w);
        ASSERT_EQ(v == nullptr, first == nullptr) << "worker " << w << " against worker 0";
        if (v == nullptr) continue;
        EXPECT_EQ(v->size(), first->size());
        if (v == first) {
          EXPECT_EQ(server, first) << "every replica's vector, hidden from the server";
        } else {
          EXPECT_NE(server, v) << "worker " << w << "'s own vector, seen as the server's";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryOptimizer, ::testing::ValuesIn(Optimizers().names()),
                         testing::RegistryTestName);

}  // namespace
}  // namespace lemmalab
