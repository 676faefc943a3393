// The error-feedback SGD baselines (ef-sgd, ef-signsgd, double-squeeze, ef-sgdm): reductions to
// the uncompressed optimizers, worker and server errors by hand, and EF-SIGNSGD against
// Karimireddy et al.'s box (the learning rate inside the feedback) written out in the test.
#include "optimizers/ef_sgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/sgd.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using testing::MakeNamed;
using testing::Step;
using testing::Str;
using testing::Traffic;
using testing::Vec;

using testing::GaussianGradients;

// With C = identity the worker error stays 0 and ef-sgd is SGD, with the same operations in the
// same order (the mean of the n messages, then x -= lr mean): equal bit for bit.
TEST(EfSgd, WithIdentityIsSgd) {
  auto ef = MakeNamed("ef-sgd", {{"compressor", Str("identity")}}, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_ef = testing::GaussianVector(5, 7), x_sgd = x_ef;
  const auto g = GaussianGradients(3, 6);
  for (std::size_t s = 0; s < g.size(); ++s) {
    const double lr = 0.1 / static_cast<double>(s + 1);
    Step(*ef, static_cast<std::int64_t>(s) + 1, lr, g[s], x_ef);
    Step(*sgd, static_cast<std::int64_t>(s) + 1, lr, g[s], x_sgd);
    EXPECT_EQ(x_ef, x_sgd) << "t = " << s + 1;
    EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 1), Eigen::VectorXd::Zero(5));
  }
  EXPECT_EQ(ef->Observe(Quantity::kServerError, kServer), nullptr);  // no server feedback
}

// ef-sgd with the 1-bit sign compressor (zero sent as +1), n = 2, lr = 1/2, x_0 = 0:
//   t = 1: worker 0: g = (0.5, -0.25, 0), C = (1, -1, 1), e = (-0.5, 0.75, -1)
//          worker 1: g = (-2, 1, 0.5),    C = (-1, 1, 1), e = (-1, 0, -0.5)
//          mean = (0, 0, 1), x = (0, 0, -0.5)
//   t = 2: worker 0: g + e = (0.25, 0.5, 1) + e = (-0.25, 1.25, 0), C = (-1, 1, 1),
//                    e = (0.75, 0.25, -1)
//          worker 1: g + e = (0.5, -0.5, -1) + e = (-0.5, -0.5, -1.5), C = (-1, -1, -1),
//                    e = (0.5, 0.5, -0.5)
//          mean = (-1, 0, 0), x = (0.5, 0, -0.5)
const std::vector<std::vector<Eigen::VectorXd>>& SignSteps() {
  static const std::vector<std::vector<Eigen::VectorXd>> steps = {
      {Vec({0.5, -0.25, 0}), Vec({-2, 1, 0.5})}, {Vec({0.25, 0.5, 1}), Vec({0.5, -0.5, -1})}};
  return steps;
}

TEST(EfSgd, SignCompressorTwoStepsByHand) {
  auto ef = MakeNamed("ef-sgd", {{"compressor", Str("sign")}}, {3, 2});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  Traffic traffic = Step(*ef, 1, 0.5, SignSteps()[0], x);
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 0), Vec({-0.5, 0.75, -1}));
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 1), Vec({-1, 0, -0.5}));
  EXPECT_EQ(x, Vec({0, 0, -0.5}));
  EXPECT_THAT(traffic.up, ElementsAre(1, 1));  // 3 sign bits in one byte
  EXPECT_EQ(traffic.down, 24u);                // the mean, in fp64
  Step(*ef, 2, 0.5, SignSteps()[1], x);
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 0), Vec({0.75, 0.25, -1}));
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 1), Vec({0.5, 0.5, -0.5}));
  EXPECT_EQ(x, Vec({0.5, 0, -0.5}));
}

// DoubleSqueeze on the same gradients: the workers are as above; the server re-compresses.
//   t = 1: mean = (0, 0, 1), C(mean + 0) = (1, 1, 1) (zeros as +1), e_bar = (-1, -1, 0),
//          x = -(0.5, 0.5, 0.5)
//   t = 2: mean = (-1, 0, 0), mean + e_bar = (-2, -1, 0), C = (-1, -1, 1), e_bar = (-1, 0, -1),
//          x = (-0.5, -0.5, -0.5) - 0.5 (-1, -1, 1) = (0, 0, -1)
TEST(DoubleSqueeze, ServerErrorTwoStepsByHand) {
  auto ds = MakeNamed("double-squeeze", {{"compressor", Str("sign")}}, {3, 2});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  const Traffic traffic = Step(*ds, 1, 0.5, SignSteps()[0], x);
  EXPECT_EQ(*ds->Observe(Quantity::kWorkerError, 0), Vec({-0.5, 0.75, -1}));
  EXPECT_EQ(*ds->Observe(Quantity::kServerError, kServer), Vec({-1, -1, 0}));
  EXPECT_EQ(x, Vec({-0.5, -0.5, -0.5}));
  EXPECT_EQ(traffic.down, 1u);  // the reply is 1-bit too
  Step(*ds, 2, 0.5, SignSteps()[1], x);
  EXPECT_EQ(*ds->Observe(Quantity::kWorkerError, 1), Vec({0.5, 0.5, -0.5}));
  EXPECT_EQ(*ds->Observe(Quantity::kServerError, kServer), Vec({-1, 0, -1}));
  EXPECT_EQ(x, Vec({0, 0, -1}));
}

// The default compressors, told apart by their scales on g = (1, -1, 3, 5) (one worker, lr 1):
// ef-sgd's scaled sign ||g||_2 / sqrt(4) = 6 / 2 = 3, ef-signsgd's block-sign ||g||_1 / 4 = 2.5
// on a problem without layers, and per layer with layers [0, 2) and [2, 4): 1 and 4.
TEST(EfSgd, DefaultCompressorsByHand) {
  const Eigen::VectorXd g = Vec({1, -1, 3, 5});
  const Eigen::VectorXd sign = Vec({1, -1, 1, 1});
  auto ef = MakeNamed("ef-sgd", {}, {4, 1});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(4);
  const Traffic traffic = Step(*ef, 1, 1.0, {g}, x);
  EXPECT_EQ(x, -3 * sign);
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 0), g - 3 * sign);
  EXPECT_THAT(traffic.up, ElementsAre(5));  // a float32 scale and 4 bits

  auto ef_sign = MakeNamed("ef-signsgd", {}, {4, 1});
  x.setZero();
  Step(*ef_sign, 1, 1.0, {g}, x);
  EXPECT_EQ(x, -2.5 * sign);

  const OptimizerContext layered{4, 1, {Layer{"a", 0, 2, 1}, Layer{"b", 2, 2, 1}}};
  auto ef_layers = MakeNamed("ef-signsgd", {}, layered);
  x.setZero();
  Step(*ef_layers, 1, 1.0, {g}, x);
  EXPECT_EQ(x, -Vec({1, -1, 4, 4}));
  EXPECT_EQ(*ef_layers->Observe(Quantity::kWorkerError, 0), Vec({0, 0, -1, 1}));
}

// Karimireddy et al.'s EF-SIGNSGD puts the rate inside the feedback: p = lr_t g + e,
// delta = (||p||_1 / d) sign(p), x -= delta, e = p - delta. With a varying rate that is
// worker_feedback = "scaled" (ef_sgd.h). The rates are powers of 2, so scaling by them commutes
// with rounding and the two forms agree up to the order in which ||.||_1 is summed and the
// float32 rounding of the scale, which also commutes with a power-of-2 factor: 1e-12 relative.
// Negative control: classic feedback under the same schedule is off by far more.
TEST(EfSignSgd, ScaledFeedbackIsThePapersBoxWithAVaryingRate) {
  const std::vector<double> rates = {0.5, 0.25, 0.125, 0.5, 1.0, 0.0625};
  const auto g = GaussianGradients(1, static_cast<int>(rates.size()));
  auto scaled = MakeNamed("ef-signsgd", {{"worker_feedback", Str("scaled")}}, {5, 1});
  auto classic = MakeNamed("ef-signsgd", {}, {5, 1});
  Eigen::VectorXd x_box = Eigen::VectorXd::Zero(5), x_scaled = x_box, x_classic = x_box;
  Eigen::VectorXd e = Eigen::VectorXd::Zero(5);
  double classic_gap = 0;
  for (std::size_t s = 0; s < rates.size(); ++s) {
    const Eigen::VectorXd p = rates[s] * g[s][0] + e;
    const double scale = static_cast<float>(p.lpNorm<1>() / 5);  // sent as float32
    const Eigen::VectorXd delta = scale * p.unaryExpr([](double v) { return v >= 0 ? 1.0 : -1.0; });
    x_box -= delta;
    e = p - delta;
    Step(*scaled, static_cast<std::int64_t>(s) + 1, rates[s], g[s], x_scaled);
    Step(*classic, static_cast<std::int64_t>(s) + 1, rates[s], g[s], x_classic);
    EXPECT_LE((x_scaled - x_box).norm(), 1e-12 * x_box.norm()) << "t = " << s + 1;
    // Our error is the box's divided by the step's rate.
    EXPECT_LE((rates[s] * *scaled->Observe(Quantity::kWorkerError, 0) - e).norm(), 1e-12 * e.norm())
        << "t = " << s + 1;
    classic_gap = std::max(classic_gap, (x_classic - x_box).norm() / x_box.norm());
  }
  EXPECT_GT(classic_gap, 1e-3);
}

// ef-sgdm with C = identity: every worker's m^(i) is linear in its gradients, so their mean is
// sgdm's m on the mean gradient. The two sum in different orders (mean of beta m_i + (1-beta) g_i
// against beta m + (1-beta) mean g), so they agree to rounding: each step adds a few ulps of |m|
// (|g| ~ 1, |m| <= 3), and lr = 0.1 over 8 steps keeps |x_ef - x_sgdm| far below 1e-14.
TEST(EfSgdm, WithIdentityIsSgdmOnTheMeanGradient) {
  auto ef = MakeNamed("ef-sgdm", {{"compressor", Str("identity")}, {"beta", {0.9, ""}}}, {5, 3});
  auto sgdm = MakeNamed("sgdm", {{"beta", {0.9, ""}}}, {5, 3});
  Eigen::VectorXd x_ef = Eigen::VectorXd::Zero(5), x_sgdm = x_ef;
  const auto g = GaussianGradients(3, 8);
  for (std::size_t s = 0; s < g.size(); ++s) {
    Step(*ef, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_ef);
    Step(*sgdm, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgdm);
    EXPECT_LE((x_ef - x_sgdm).lpNorm<Eigen::Infinity>(), 1e-14) << "t = " << s + 1;
    Eigen::VectorXd mean_m = Eigen::VectorXd::Zero(5);
    for (int i = 0; i < 3; ++i) mean_m += *ef->Observe(Quantity::kMomentum, i);
    EXPECT_LE((mean_m / 3 - *sgdm->Observe(Quantity::kMomentum, kServer)).lpNorm<Eigen::Infinity>(),
              1e-14);
  }
  EXPECT_GT(x_sgdm.norm(), 0.1);  // the steps are not vanishingly small
  // The first momentum is (1 - beta) g exactly: the workers keep their own m^(i).
  auto fresh = MakeNamed("ef-sgdm", {{"compressor", Str("identity")}}, {5, 3});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(5);
  Step(*fresh, 1, 0.1, g[0], x);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*fresh->Observe(Quantity::kMomentum, i),
              ((1 - 0.9) * g[0][static_cast<std::size_t>(i)]).eval());
  }
}

// ef-sgdm with the sign compressor, one worker, beta = 1/2, lr = 1/2: the momentum goes through
// the feedback. t = 1: m = (1, -0.5), C(m) = (1, -1), e = (0, 0.5), x = (-0.5, 0.5);
// t = 2: g = (-4, 1), m = (-1.5, 0.25), m + e = (-1.5, 0.75), C = (-1, 1), e = (-0.5, -0.25),
// x = (0, 0).
TEST(EfSgdm, SignCompressorTwoStepsByHand) {
  auto ef = MakeNamed("ef-sgdm", {{"compressor", Str("sign")}, {"beta", {0.5, ""}}}, {2, 1});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  Step(*ef, 1, 0.5, {Vec({2, -1})}, x);
  EXPECT_EQ(*ef->Observe(Quantity::kMomentum, 0), Vec({1, -0.5}));
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 0), Vec({0, 0.5}));
  EXPECT_EQ(x, Vec({-0.5, 0.5}));
  Step(*ef, 2, 0.5, {Vec({-4, 1})}, x);
  EXPECT_EQ(*ef->Observe(Quantity::kMomentum, 0), Vec({-1.5, 0.25}));
  EXPECT_EQ(*ef->Observe(Quantity::kWorkerError, 0), Vec({-0.5, -0.25}));
  EXPECT_EQ(x, Vec({0, 0}));
}

}  // namespace
}  // namespace lemmalab
