// SPAMS (spams.txt Algorithms 2 and 3) step by step against the boxes written out in the test,
// and the single-machine form against the distributed one with one worker.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "compressors/block_sign.h"
#include "core/error.h"
#include "optimizers/optimizer.h"
#include "tests/optimizer_test_util.h"

namespace lemmalab {
namespace {

using testing::MakeFromToml;
using testing::Step;

// The StepContext seed of every Step in this file.
constexpr std::uint64_t kSeed = 7;

// Block-Sign with one block: sign(y) ||y||_1 / d, zero sent as +1 (docs/conventions.md §5), the
// scale sent as a float32.
Eigen::VectorXd BlockSign(const Eigen::VectorXd& y) {
  const double scale = static_cast<float>(y.lpNorm<1>() / static_cast<double>(y.size()));
  return y.unaryExpr([&](double v) { return v < 0 ? -scale : scale; });
}

std::vector<Eigen::VectorXd> Gradients(std::int64_t t, int n, Eigen::Index d) {
  std::vector<Eigen::VectorXd> g;
  for (int i = 0; i < n; ++i) {
    Eigen::VectorXd v(d);
    for (Eigen::Index j = 0; j < d; ++j) {
      v[j] = std::sin(1.3 * static_cast<double>(t) + 0.7 * i + 2.1 * static_cast<double>(j)) *
             (1.0 + static_cast<double>(j));
    }
    g.push_back(v);
  }
  return g;
}

// Algorithm 2 with Block-Sign over one block and n = 3 workers, the box written out: worker
// errors (lines 7-8), the mean (12), AMSGrad with eps inside the root (13-16).
TEST(DistSpams, FollowsAlgorithm2) {
  const int n = 3;
  const Eigen::Index d = 4;
  auto spams = MakeFromToml("name = 'dist-spams'\nbeta1 = 0.8\nbeta2 = 0.9\neps = 1e-3", d, n);
  Eigen::VectorXd x = Eigen::VectorXd::Constant(d, 0.5), expected = x;
  std::vector<Eigen::VectorXd> e(n, Eigen::VectorXd::Zero(d));
  Eigen::VectorXd m = Eigen::VectorXd::Zero(d), v = m, v_hat = m;
  for (std::int64_t t = 1; t <= 5; ++t) {
    const auto g = Gradients(t, n, d);
    Step(*spams, t, 0.01, g, x, kSeed);
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(d);
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd g_tilde = BlockSign(g[i] + e[i]);  // line 7
      e[i] = e[i] + g[i] - g_tilde;                            // line 8
      sum += g_tilde;
      EXPECT_NEAR((*spams->Observe(Quantity::kWorkerError, i) - e[i]).norm(), 0.0, 1e-14);
    }
    const Eigen::VectorXd g_bar = sum / n;                                 // line 12
    m = 0.8 * m + 0.2 * g_bar;                                             // line 13
    v = 0.9 * v + 0.1 * g_bar.cwiseAbs2();                                 // line 14
    v_hat = v_hat.cwiseMax(v);                                             // line 15
    expected.array() -= 0.01 * m.array() / (v_hat.array() + 1e-3).sqrt();  // line 16
    EXPECT_NEAR((x - expected).norm(), 0.0, 1e-14) << "t = " << t;
    EXPECT_NEAR((*spams->Observe(Quantity::kMaxVariance, kServer) - v_hat).norm(), 0.0, 1e-15);
  }
}

// Only the server holds m and v (spams.txt Sec. 3): the workers expose no momentum, the server
// sends d full-precision values and the workers 1 bit per element plus one scale.
TEST(DistSpams, StateLivesOnTheServerAndTheWireIsBlockSign) {
  auto spams = MakeFromToml("name = 'dist-spams'", 16, 2);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(16);
  const StepContext ctx{1, 0.1, kSeed};
  std::vector<Message> up(2);
  Message down;
  const auto g = Gradients(1, 2, 16);
  for (int i = 0; i < 2; ++i) spams->WorkerStep(ctx, i, x, g[i], up[i]);
  spams->ServerStep(ctx, 0, up, down);
  EXPECT_EQ(spams->Observe(Quantity::kMomentum, 0), nullptr);
  EXPECT_NE(spams->Observe(Quantity::kMomentum, kServer), nullptr);
  for (const Message& m : up) EXPECT_EQ(m.bits(), 16 + 32);  // 16 sign bits + a float32 scale
  EXPECT_EQ(down.bits(), 16 * 64);
}

// Algorithm 3 is Algorithm 2 with n = 1: the same compressor and error, the same AMSGrad step.
TEST(Spams, SingleMachineEqualsDistributedWithOneWorker) {
  const Eigen::Index d = 6;
  for (const char* compressor : {"'block-sign'", "{ name = 'top-k', k = 2 }"}) {
    auto single = MakeFromToml(fmt::format("name = 'spams'\ncompressor = {}", compressor), d, 1);
    auto dist = MakeFromToml(fmt::format("name = 'dist-spams'\ncompressor = {}", compressor), d, 1);
    Eigen::VectorXd x1 = Eigen::VectorXd::Ones(d), x2 = x1;
    for (std::int64_t t = 1; t <= 6; ++t) {
      const auto g = Gradients(t, 1, d);
      Step(*single, t, 0.05, g, x1, kSeed);
      Step(*dist, t, 0.05, g, x2, kSeed);
      ASSERT_EQ(x1, x2) << compressor << " t = " << t;
      EXPECT_EQ(*single->Observe(Quantity::kServerError, kServer),
                *dist->Observe(Quantity::kWorkerError, 0));
    }
  }
}

// With n workers the single-machine form compresses the averaged gradient once, at the server.
TEST(Spams, CompressesTheMeanGradientWithTheServersError) {
  const int n = 2;
  const Eigen::Index d = 3;
  auto spams = MakeFromToml("name = 'spams'\nbeta1 = 0\nbeta2 = 0\neps = 1e-12", d, n);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d);
  const std::vector<Eigen::VectorXd> g = {Eigen::Vector3d(1, -2, 4), Eigen::Vector3d(3, 0, -1)};
  Step(*spams, 1, 1.0, g, x, kSeed);
  // mean = (2, -1, 1.5); Block-Sign: scale 4.5 / 3 = 1.5, so g~ = (1.5, -1.5, 1.5) and
  // e = (0.5, 0.5, 0). With beta1 = beta2 = 0 the step is g~ / |g~| = sign.
  EXPECT_EQ(*spams->Observe(Quantity::kServerError, kServer), Eigen::Vector3d(0.5, 0.5, 0));
  EXPECT_NEAR((x - Eigen::Vector3d(-1, 1, -1)).norm(), 0.0, 1e-12);
}

// docs/conventions.md §6 and the reduction: with the identity compressor the error stays
// zero, and with one worker Algorithm 2 is AMSGrad with eps inside the root, no bias correction.
TEST(DistSpams, WithIdentityAndOneWorkerIsAmsGradWithEpsInsideTheRoot) {
  const Eigen::Index d = 5;
  auto spams = MakeFromToml("name = 'dist-spams'\ncompressor = 'identity'\neps = 1e-6", d, 1);
  auto amsgrad = MakeFromToml(
      "name = 'amsgrad'\nbias_correction = false\neps_placement = 'inside'\neps = 1e-6", d, 1);
  Eigen::VectorXd x1 = Eigen::VectorXd::LinSpaced(d, -1, 1), x2 = x1;
  for (std::int64_t t = 1; t <= 8; ++t) {
    const auto g = Gradients(t, 1, d);
    Step(*spams, t, 0.03, g, x1, kSeed);
    Step(*amsgrad, t, 0.03, g, x2, kSeed);
    // The same operations in the same order: equal to the last bit.
    EXPECT_EQ(x1, x2) << "t = " << t;
    EXPECT_EQ(*spams->Observe(Quantity::kWorkerError, 0), Eigen::VectorXd::Zero(d));
  }
  // Negative control: AMSGrad with eps outside the root is a different algorithm.
  auto outside = MakeFromToml("name = 'amsgrad'\nbias_correction = false\neps = 1e-6", d, 1);
  Eigen::VectorXd x3 = Eigen::VectorXd::LinSpaced(d, -1, 1), x4 = x3;
  auto spams2 = MakeFromToml("name = 'dist-spams'\ncompressor = 'identity'\neps = 1e-6", d, 1);
  for (std::int64_t t = 1; t <= 8; ++t) {
    Step(*spams2, t, 0.03, Gradients(t, 1, d), x3, kSeed);
    Step(*outside, t, 0.03, Gradients(t, 1, d), x4, kSeed);
  }
  EXPECT_GT((x3 - x4).norm(), 1e-9);
}

TEST(Spams, RejectsBadOptions) {
  EXPECT_THAT([] { MakeFromToml("name = 'dist-spams'\nbeta2 = 1", 4, 1); },
              ::testing::ThrowsMessage<UserError>(::testing::HasSubstr("beta2 must be in [0, 1)")));
  EXPECT_THAT([] { MakeFromToml("name = 'dist-spams'\nserver_feedback = 'classic'", 4, 1); },
              ::testing::ThrowsMessage<UserError>(::testing::HasSubstr("server_feedback")));
  EXPECT_THAT([] { MakeFromToml("name = 'spams'\neps = 0", 4, 1); },
              ::testing::ThrowsMessage<UserError>(::testing::HasSubstr("eps must be > 0")));
}

}  // namespace
}  // namespace lemmalab
