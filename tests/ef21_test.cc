// EF21 and EF21-SGDM (optimizers/ef21.h): steps computed by hand with top-1 (deterministic), the
// full-precision start, the reductions (identity = gradient descent; eta = 1 = EF21), the chunked
// layout against one chunk, and the options' errors and resolved defaults.
#include "optimizers/ef21.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeNamed;
using testing::Step;
using testing::StepChunked;
using testing::Str;
using testing::Traffic;
using testing::Vec;

using Gradients = testing::StepGradients;
using testing::DyadicGradients;
using testing::GaussianGradients;

// EF21 with top-1 (ties to the lower index), n = 2, lr = 1/2, x^0 = 0, init = "compressed":
//   t = 1: worker 0: grad = (1, -3, 2),  c = top1(grad - 0) = (0, -3, 0),  g_0 = (0, -3, 0)
//          worker 1: grad = (-4, 1, 0.5), c = (-4, 0, 0),                   g_1 = (-4, 0, 0)
//          g = 0 + mean c = (-2, -1.5, 0),  x = -(1/2) g = (1, 0.75, 0)
//   t = 2: the same gradients: worker 0: grad - g_0 = (1, 0, 2), c = (0, 0, 2), g_0 = (0, -3, 2)
//                              worker 1: grad - g_1 = (0, 1, 0.5), c = (0, 1, 0), g_1 = (-4, 1, 0)
//          g = (-2, -1.5, 0) + (0, 0.5, 1) = (-2, -1, 1),  x = (1, 0.75, 0) + (1, 0.5, -0.5)
//            = (2, 1.25, -0.5)
//   t = 3: worker 0: grad = (2, -2, 2), grad - g_0 = (2, 1, 0), c = (2, 0, 0), g_0 = (2, -3, 2)
//          worker 1: grad = (-3, 1, 1), grad - g_1 = (1, 0, 1): a tie, c = (1, 0, 0),
//                    g_1 = (-3, 1, 0)
//          g = (-2, -1, 1) + (1.5, 0, 0) = (-0.5, -1, 1) (= mean g_i),
//          x = (2, 1.25, -0.5) - (1/2)(-0.5, -1, 1) = (2.25, 1.75, -1)
const Gradients& TopOneGradients() {
  static const Gradients steps = {{Vec({1, -3, 2}), Vec({-4, 1, 0.5})},
                                  {Vec({1, -3, 2}), Vec({-4, 1, 0.5})},
                                  {Vec({2, -2, 2}), Vec({-3, 1, 1})}};
  return steps;
}

TEST(Ef21, TopOneThreeStepsByHand) {
  auto opt = MakeNamed("ef21", {}, {3, 2});  // the default compressor is top-k with k = 1
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  const Traffic traffic = Step(*opt, 1, 0.5, TopOneGradients()[0], x);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({0, -3, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({-4, 0, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({-2, -1.5, 0}));
  EXPECT_EQ(x, Vec({1, 0.75, 0}));
  EXPECT_THAT(traffic.up, ElementsAre(9, 9));  // one uint8 index and one fp64 value each
  EXPECT_EQ(traffic.down, 24u);                // the mean correction, in fp64
  Step(*opt, 2, 0.5, TopOneGradients()[1], x);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({0, -3, 2}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({-4, 1, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({-2, -1, 1}));
  EXPECT_EQ(x, Vec({2, 1.25, -0.5}));
  Step(*opt, 3, 0.5, TopOneGradients()[2], x);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({2, -3, 2}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({-3, 1, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({-0.5, -1, 1}));
  EXPECT_EQ(x, Vec({2.25, 1.75, -1}));
  // No classic error feedback: nothing to observe there, no momentum in plain EF21.
  EXPECT_EQ(opt->Observe(Quantity::kWorkerError, 0), nullptr);
  EXPECT_EQ(opt->Observe(Quantity::kMomentum, 0), nullptr);
}

// init = "full" on the same data: step 1 sends the gradients raw (3 fp64 values = 24 bytes each,
// counted), g_i^0 = grad, g^0 = (-1.5, -1, 1.25), x^1 = (0.75, 0.5, -0.625). Step 2 (the third
// gradients above): worker 0: (2, -2, 2) - (1, -3, 2) = (1, 1, 0), a tie, c = (1, 0, 0),
// g_0 = (2, -3, 2); worker 1: (-3, 1, 1) - (-4, 1, 0.5) = (1, 0, 0.5), c = (1, 0, 0),
// g_1 = (-3, 1, 0.5); g = (-0.5, -1, 1.25), x = (0.75, 0.5, -0.625) - (1/2) g = (1, 1, -1.25).
TEST(Ef21, FullInitSendsTheFirstGradientInFullPrecision) {
  auto opt = MakeNamed("ef21", {{"init", Str("full")}}, {3, 2});
  ASSERT_TRUE(opt->KeepCompressionRecords());
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  Traffic traffic = Step(*opt, 1, 0.5, TopOneGradients()[0], x);
  EXPECT_THAT(traffic.up, ElementsAre(24, 24));
  EXPECT_EQ(traffic.down, 24u);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({1, -3, 2}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({-1.5, -1, 1.25}));
  EXPECT_EQ(x, Vec({0.75, 0.5, -0.625}));
  EXPECT_EQ(opt->LastEncode(0)->elements, 3);   // the raw message's statistics
  EXPECT_EQ(opt->LastCompression(0), nullptr);  // nothing was compressed
  traffic = Step(*opt, 2, 0.5, TopOneGradients()[2], x);
  EXPECT_THAT(traffic.up, ElementsAre(9, 9));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({2, -3, 2}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({-3, 1, 0.5}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({-0.5, -1, 1.25}));
  EXPECT_EQ(x, Vec({1, 1, -1.25}));
  ASSERT_NE(opt->LastCompression(0), nullptr);
  EXPECT_EQ(opt->LastCompression(0)->input, Vec({1, 1, 0}));   // grad - g_0
  EXPECT_EQ(opt->LastCompression(0)->output, Vec({1, 0, 0}));  // c_0
}

// With C = identity, g_i = grad_i after every step and g = mean grad_i in exact arithmetic, so
// EF21 is gradient descent on the mean gradient. On dyadic data (n = 2 and 4, lr a power of 2)
// every operation is exact and the two agree bit for bit, both starts.
TEST(Ef21, WithIdentityIsGradientDescentBitForBitOnExactData) {
  for (const int n : {2, 4}) {
    for (const char* init : {"compressed", "full"}) {
      auto ef21 = MakeNamed("ef21", {{"compressor", Str("identity")}, {"init", Str(init)}}, {5, n});
      auto sgd = MakeNamed("sgd", {}, {5, n});
      Eigen::VectorXd x_ef = Eigen::VectorXd::Zero(5), x_sgd = x_ef;
      const Gradients g = DyadicGradients(n, 8);
      for (std::size_t s = 0; s < g.size(); ++s) {
        Step(*ef21, static_cast<std::int64_t>(s) + 1, 0.25, g[s], x_ef);
        Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.25, g[s], x_sgd);
        ASSERT_EQ(x_ef, x_sgd) << "n = " << n << ", init " << init << ", t = " << s + 1;
        EXPECT_EQ(*ef21->Observe(Quantity::kShift, 1), g[s][1]);
      }
      EXPECT_GT(x_sgd.norm(), 1);  // the steps are not vanishingly small
    }
  }
}

// On general data the replicas' g = g + mean(grad_i - g_i) telescopes to mean grad_i only up to
// rounding: each step adds a few ulps of |g| (|grad| ~ 1, so ~1e-16 each), and over 12 steps
// with lr = 0.1 the parameters stay within 1e-14 of gradient descent's.
TEST(Ef21, WithIdentityIsGradientDescentUpToRounding) {
  auto ef21 = MakeNamed("ef21", {{"compressor", Str("identity")}}, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_ef = Eigen::VectorXd::Zero(5), x_sgd = x_ef;
  const Gradients g = GaussianGradients(3, 12);
  for (std::size_t s = 0; s < g.size(); ++s) {
    Step(*ef21, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_ef);
    Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgd);
    EXPECT_LE((x_ef - x_sgd).lpNorm<Eigen::Infinity>(), 1e-14) << "t = " << s + 1;
    Eigen::VectorXd mean = (g[s][0] + g[s][1] + g[s][2]) / 3;
    EXPECT_LE((*ef21->Observe(Quantity::kShift, kServer) - mean).lpNorm<Eigen::Infinity>(), 1e-14);
  }
  EXPECT_GT(x_sgd.norm(), 0.1);
}

// eta = 1 makes v_i the gradient (0 v + 1 g = g exactly), so ef21-sgdm is ef21 operation for
// operation: the same parameters, shifts and message bytes, with a compressor that matters
// (top-2 of 5) and for both starts.
TEST(Ef21Sgdm, WithEtaOneIsEf21) {
  for (const char* init : {"compressed", "full"}) {
    auto sgdm = testing::MakeFromToml(
        fmt::format("name = 'ef21-sgdm'\neta = 1.0\ninit = '{}'\ncompressor = {{ name = 'top-k', "
                    "k = 2 }}",
                    init),
        5, 3);
    auto ef21 = testing::MakeFromToml(
        fmt::format("name = 'ef21'\ninit = '{}'\ncompressor = {{ name = 'top-k', k = 2 }}", init),
        5, 3);
    Eigen::VectorXd x_sgdm = testing::GaussianVector(5, 5), x_ef21 = x_sgdm;
    const Gradients g = GaussianGradients(3, 10);
    for (std::size_t s = 0; s < g.size(); ++s) {
      std::vector<Message> up_sgdm, up_ef21;
      Message down_sgdm, down_ef21;
      Step(*sgdm, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgdm, testing::kStepSeed, &up_sgdm,
           &down_sgdm);
      Step(*ef21, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_ef21, testing::kStepSeed, &up_ef21,
           &down_ef21);
      ASSERT_EQ(x_sgdm, x_ef21) << init << ", t = " << s + 1;
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(up_sgdm[static_cast<std::size_t>(i)].bytes,
                  up_ef21[static_cast<std::size_t>(i)].bytes);
        EXPECT_EQ(*sgdm->Observe(Quantity::kShift, i), *ef21->Observe(Quantity::kShift, i));
        EXPECT_EQ(*sgdm->Observe(Quantity::kMomentum, i), g[s][static_cast<std::size_t>(i)]);
      }
      EXPECT_EQ(down_sgdm.bytes, down_ef21.bytes);
    }
  }
}

// ef21-sgdm with top-1, one worker, eta = 1/2, lr = 1/2, the default start ("full"):
//   t = 1: grad = (2, -1): v = (2, -1) (v^0 = the first gradient), g_0 = v (sent raw),
//          x = -(1/2)(2, -1) = (-1, 0.5)
//   t = 2: grad = (0, 3): v = (1/2)(2, -1) + (1/2)(0, 3) = (1, 1), v - g_0 = (-1, 2), c = (0, 2),
//          g_0 = (2, 1), x = (-1, 0.5) - (1/2)(2, 1) = (-2, 0)
//   t = 3: grad = (4, 1): v = (2.5, 1), v - g_0 = (0.5, 0), c = (0.5, 0), g_0 = (2.5, 1),
//          x = (-2, 0) - (1/2)(2.5, 1) = (-3.25, -0.5)
TEST(Ef21Sgdm, MomentumThreeStepsByHand) {
  auto opt = MakeNamed("ef21-sgdm", {{"eta", {0.5, ""}}}, {2, 1});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  Traffic traffic = Step(*opt, 1, 0.5, {Vec({2, -1})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16));  // raw fp64: the paper's uncompressed g_i^0
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 0), Vec({2, -1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({2, -1}));
  EXPECT_EQ(x, Vec({-1, 0.5}));
  traffic = Step(*opt, 2, 0.5, {Vec({0, 3})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(9));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 0), Vec({1, 1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({2, 1}));
  EXPECT_EQ(x, Vec({-2, 0}));
  Step(*opt, 3, 0.5, {Vec({4, 1})}, x);
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 0), Vec({2.5, 1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({2.5, 1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({2.5, 1}));
  EXPECT_EQ(x, Vec({-3.25, -0.5}));
}

// Every phase is per coordinate, so a chunked run equals the one-chunk run bit for bit, the
// full-precision first step included; hierarchical layouts are refused.
TEST(Ef21, ChunkedLayoutEqualsOneChunk) {
  const OptimizerContext chunked{128, 2, {}, ExchangeLayout{{0, 64, 128}}};
  for (const char* name : {"ef21", "ef21-sgdm"}) {
    const testing::OptionPairs options = {{"compressor", Str("natural")}, {"init", Str("full")}};
    auto one = MakeNamed(name, options, {128, 2});
    auto two = MakeNamed(name, options, chunked);
    EXPECT_TRUE(two->SupportsChunks());
    EXPECT_FALSE(two->SupportsHierarchy());
    Eigen::VectorXd x_one = testing::GaussianVector(128, 1), x_two = x_one;
    const Gradients g = GaussianGradients(2, 5, 128);
    for (std::size_t s = 0; s < g.size(); ++s) {
      Step(*one, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_one);
      StepChunked(*two, 2, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_two);
      ASSERT_EQ(x_one, x_two) << name << ", t = " << s + 1;
      EXPECT_EQ(*one->Observe(Quantity::kShift, kServer), *two->Observe(Quantity::kShift, kServer));
    }
  }
}

TEST(Ef21, OptionsAreValidatedAndResolved) {
  using testing::UserErrorOf;
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("ef21", {{"worker_feedback", Str("classic")}}, {4, 2});
              }),
              HasSubstr("ef21 has no classic error feedback"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("ef21-sgdm", {{"server_compressor", Str("sign")}}, {4, 2});
              }),
              HasSubstr("ef21-sgdm has no server compression"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("ef21", {{"init", Str("zero")}}, {4, 2});
              }),
              HasSubstr("init"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("ef21-sgdm", {{"eta", {0.0, ""}}}, {4, 2});
              }),
              HasSubstr("eta"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("ef21-sgdm", {{"eta", {1.5, ""}}}, {4, 2});
              }),
              HasSubstr("eta"));
  EXPECT_EQ(UserErrorOf([] {
              MakeNamed("ef21-sgdm", {{"eta", {1.0, ""}}}, {4, 2});
            }),
            "(no error)");

  const Hyperparameters ef21 = testing::MakeFromTomlHyperparameters("name = 'ef21'");
  EXPECT_EQ(ef21.Text("compressor.name"), "top-k");
  EXPECT_EQ(ef21.Number("compressor.k"), 1);
  EXPECT_EQ(ef21.Text("init"), "compressed");
  EXPECT_FALSE(ef21.Has("worker_feedback"));
  const Hyperparameters sgdm = testing::MakeFromTomlHyperparameters("name = 'ef21-sgdm'");
  EXPECT_EQ(sgdm.Number("eta"), 0.1);
  EXPECT_EQ(sgdm.Text("init"), "full");
  // A compressor given as a table keeps its own options, not the default's k.
  const Hyperparameters given = testing::MakeFromTomlHyperparameters(
      "name = 'ef21'\ncompressor = { name = 'top-k', fraction = 0.5 }");
  EXPECT_EQ(given.Number("compressor.fraction"), 0.5);
  EXPECT_FALSE(given.Has("compressor.k"));
}

}  // namespace
}  // namespace lemmalab
