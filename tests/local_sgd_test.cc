// Local SGD and local SGD with momentum: reduction to SGD at tau = 1, the replicas, the empty
// messages between synchronisations and the averaging by hand, and the runner taking each
// worker's gradient at its own replica.
#include "optimizers/local_sgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "comm/cluster.h"
#include "optimizers/sgd.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Int;
using testing::MakeNamed;
using testing::Step;
using testing::Traffic;
using testing::UserErrorOf;
using testing::Vec;

// With tau = 1 every step averages x - lr g_i, which in exact arithmetic is SGD's
// x - lr mean g_i. Small integer gradients, lr = 1/2 and n = 4 keep every operation exact, so
// the two agree bit for bit.
TEST(LocalSgd, TauOneIsSgdExactly) {
  auto local = MakeNamed("local-sgd", {{"tau", Int(1)}}, {3, 4});
  auto sgd = MakeNamed("sgd", {}, {3, 4});
  Eigen::VectorXd x_local = Vec({1, 2, -3}), x_sgd = x_local;
  for (std::int64_t t = 1; t <= 5; ++t) {
    std::vector<Eigen::VectorXd> g;
    for (int i = 0; i < 4; ++i) {
      g.push_back(Vec({static_cast<double>((3 * i + t) % 7 - 3), static_cast<double>(i - t),
                       static_cast<double>((i * t) % 5)}));
    }
    const Traffic traffic = Step(*local, t, 0.5, g, x_local);
    Step(*sgd, t, 0.5, g, x_sgd);
    EXPECT_EQ(x_local, x_sgd) << "t = " << t;
    EXPECT_THAT(traffic.up, ElementsAre(24, 24, 24, 24));  // every step synchronises
    for (int i = 0; i < 4; ++i) EXPECT_EQ(*local->LocalParameters(i), x_local);
  }
}

// The same with Gaussian gradients: mean_i(x - lr g_i) and x - lr mean_i g_i round differently,
// by a few ulps of |x| per step (each of the n subtractions, the sum and the division round
// once), so after 10 steps they agree to 1e-14 relative to max |x|.
TEST(LocalSgd, TauOneIsSgdUpToRounding) {
  auto local = MakeNamed("local-sgd", {{"tau", Int(1)}}, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_local = testing::GaussianVector(5, 1), x_sgd = x_local;
  for (std::int64_t t = 1; t <= 10; ++t) {
    std::vector<Eigen::VectorXd> g;
    for (int i = 0; i < 3; ++i) {
      g.push_back(testing::GaussianVector(5, static_cast<std::uint64_t>(10 * t + i)));
    }
    Step(*local, t, 0.1, g, x_local);
    Step(*sgd, t, 0.1, g, x_sgd);
    EXPECT_LE((x_local - x_sgd).lpNorm<Eigen::Infinity>(), 1e-14 * x_sgd.lpNorm<Eigen::Infinity>())
        << "t = " << t;
  }
}

// tau = 3, n = 2, lr = 1/2, x_0 = (1, 2):
//   t = 1: x^(0) = (1, 2) - (1, 0) = (0, 2),  x^(1) = (1, 2) - (0, 2) = (1, 0);   x = (1, 2)
//   t = 2: x^(0) = (0, 2) - (-1, 1) = (1, 1), x^(1) = (1, 0) - (1, -1) = (0, 1);  x = (1, 2)
//   t = 3: x^(0) = (1, 1) - (1, 1) = (0, 0),  x^(1) = (0, 1) - (-1, 0) = (1, 1);
//          synchronised: x = x^(0) = x^(1) = (0.5, 0.5)
//   t = 4: x^(0) = (0.5, 0.5) - (0.5, -1) = (0, 1.5), x^(1) unchanged (zero gradient); x stays
TEST(LocalSgd, TauThreeByHand) {
  auto local = MakeNamed("local-sgd", {{"tau", Int(3)}}, {2, 2});
  Eigen::VectorXd x = Vec({1, 2});
  EXPECT_EQ(local->LocalParameters(0), nullptr);  // before the first step: the runner uses x

  Traffic traffic = Step(*local, 1, 0.5, {Vec({2, 0}), Vec({0, 4})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(0, 0));  // nothing crosses the network
  EXPECT_EQ(traffic.down, 0u);
  EXPECT_EQ(x, Vec({1, 2}));
  EXPECT_EQ(*local->LocalParameters(0), Vec({0, 2}));
  EXPECT_EQ(*local->LocalParameters(1), Vec({1, 0}));

  traffic = Step(*local, 2, 0.5, {Vec({-2, 2}), Vec({2, -2})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(0, 0));
  EXPECT_EQ(traffic.down, 0u);
  EXPECT_EQ(x, Vec({1, 2}));
  EXPECT_EQ(*local->LocalParameters(0), Vec({1, 1}));
  EXPECT_EQ(*local->LocalParameters(1), Vec({0, 1}));

  traffic = Step(*local, 3, 0.5, {Vec({2, 2}), Vec({-2, 0})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16, 16));  // d = 2 fp64 values each way
  EXPECT_EQ(traffic.down, 16u);
  EXPECT_EQ(x, Vec({0.5, 0.5}));
  EXPECT_EQ(*local->LocalParameters(0), Vec({0.5, 0.5}));
  EXPECT_EQ(*local->LocalParameters(1), Vec({0.5, 0.5}));

  traffic = Step(*local, 4, 0.5, {Vec({1, -2}), Vec({0, 0})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(0, 0));
  EXPECT_EQ(x, Vec({0.5, 0.5}));
  EXPECT_EQ(*local->LocalParameters(0), Vec({0, 1.5}));
  EXPECT_EQ(*local->LocalParameters(1), Vec({0.5, 0.5}));
}

// local-sgdm, tau = 2, n = 2, d = 1, beta = lr = 1/2, x_0 = 0; gradients (4, 0), (0, 4), (0, 0):
//   t = 1: m = (2, 0),  x^(i) = (-1, 0)
//   t = 2: m = (1, 2),  x^(i) = (-1.5, -1); synchronised x = -1.25;
//          average_momentum: m = (1.5, 1.5), else m stays (1, 2)
//   t = 3: averaged: m = (0.75, 0.75), x^(i) = (-1.625, -1.625);
//          local:    m = (0.5, 1),     x^(i) = (-1.5, -1.75)
TEST(LocalSgdm, MomentumAveragedOrKeptLocalByHand) {
  for (const bool average : {false, true}) {
    auto local = MakeNamed(
        "local-sgdm", {{"tau", Int(2)}, {"beta", {0.5, ""}}, {"average_momentum", {average, ""}}},
        {1, 2});
    Eigen::VectorXd x = Vec({0});
    Step(*local, 1, 0.5, {Vec({4}), Vec({0})}, x);
    EXPECT_EQ(*local->Observe(Quantity::kMomentum, 0), Vec({2}));
    EXPECT_EQ(*local->LocalParameters(0), Vec({-1}));
    const Traffic traffic = Step(*local, 2, 0.5, {Vec({0}), Vec({4})}, x);
    EXPECT_EQ(x, Vec({-1.25}));
    // x^(i), and m^(i) when averaged: one or two fp64 values each way.
    EXPECT_THAT(traffic.up, ElementsAre(average ? 16 : 8, average ? 16 : 8));
    EXPECT_EQ(traffic.down, average ? 16u : 8u);
    EXPECT_EQ(*local->Observe(Quantity::kMomentum, 0), Vec({average ? 1.5 : 1}));
    EXPECT_EQ(*local->Observe(Quantity::kMomentum, 1), Vec({average ? 1.5 : 2}));
    Step(*local, 3, 0.5, {Vec({0}), Vec({0})}, x);
    EXPECT_EQ(x, Vec({-1.25}));
    EXPECT_EQ(*local->LocalParameters(0), Vec({average ? -1.625 : -1.5}));
    EXPECT_EQ(*local->LocalParameters(1), Vec({average ? -1.625 : -1.75}));
  }
}

// f_i(x) = ||x - c_i||^2 / 2: the gradient reveals where the runner evaluated it.
class Quadratic final : public Problem<double> {
 public:
  std::int64_t dimension() const override { return 2; }
  int num_workers() const override { return 2; }
  Vector<double> InitialPoint() const override { return Vector<double>::Zero(2); }
  double StochasticGradient(int worker, ConstVectorRef<double> x, PhiloxStream& /*stream*/,
                            VectorRef<double> g) const override {
    g = x - (worker == 0 ? Eigen::Vector2d(2, 0) : Eigen::Vector2d(0, 4));
    return 0;
  }
  double Objective(ConstVectorRef<double> /*x*/, Vector<double>* /*g*/) const override { return 0; }
  Evaluation Evaluate(ConstVectorRef<double> /*x*/) const override { return {}; }
  std::string Describe() const override { return "quadratic"; }
};

// Through the runner, tau = 2, lr = 1/2, x_0 = 0: at t = 1 there are no replicas yet, so both
// gradients are taken at x_0: x^(0) = (1, 0), x^(1) = (0, 2). At t = 2 they are taken at the
// replicas: g = (-1, 0) and (0, -2), x^(0) = (1.5, 0), x^(1) = (0, 3), and x = (0.75, 1.5). (At
// x instead of the replicas, t = 2 would give x^(0) = (2, 0).) t = 3: gradients at x = (0.75,
// 1.5), the replicas after the averaging.
TEST(LocalSgd, RunnerTakesGradientsAtTheReplicas) {
  const Quadratic problem;
  for (const int threads : {1, 2}) {
    auto local = MakeNamed("local-sgd", {{"tau", Int(2)}}, {2, 2});
    Cluster<double> cluster(problem, *local, {}, threads);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
    const StepResult& r1 = cluster.Step({1, 0.5, 7}, x);
    EXPECT_EQ(r1.traffic.sent(0) + r1.traffic.sent(1), 0);
    EXPECT_EQ(r1.traffic.received(0) + r1.traffic.received(1), 0);
    EXPECT_EQ(x, Vec({0, 0}));
    const StepResult& r2 = cluster.Step({2, 0.5, 7}, x);
    EXPECT_EQ(r2.traffic.sent(0), 16);
    EXPECT_EQ(r2.traffic.sent(1), 16);
    EXPECT_EQ(r2.traffic.received(0), 16);
    EXPECT_EQ(r2.traffic.received(1), 16);
    EXPECT_EQ(x, Vec({0.75, 1.5})) << threads << " threads";
    cluster.Step({3, 0.5, 7}, x);
    EXPECT_EQ(x, Vec({0.75, 1.5}));
    EXPECT_EQ(*local->LocalParameters(0), Vec({1.375, 0.75}));
    EXPECT_EQ(*local->LocalParameters(1), Vec({0.375, 2.75}));
  }
}

TEST(LocalSgd, BadOptionsNameKeyValueAndRule) {
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("local-sgd", {{"tau", Int(0)}}, {2, 2});
              }),
              HasSubstr("tau must be >= 1, got 0"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("local-sgdm", {{"beta", {1.0, ""}}}, {2, 2});
              }),
              HasSubstr("beta must be in [0, 1), got 1"));
  // Plain local SGD has no momentum to set.
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("local-sgd", {{"beta", {0.9, ""}}}, {2, 2});
              }),
              HasSubstr("unknown key 'beta'"));
}

}  // namespace
}  // namespace lemmalab
