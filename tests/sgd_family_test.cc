// SGD, the two momentum SGDs (the papers' and PyTorch's) and signSGD, step by step against values
// computed by hand. Values are dyadic (beta = lr = 1/2, small integer gradients), so every
// operation is exact in fp64 and EXPECT_EQ compares the literals themselves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "optimizers/sgd.h"
#include "optimizers/sign_sgd.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::MakeNamed;
using testing::Step;
using testing::Traffic;
using testing::UserErrorOf;
using testing::Vec;

// Two workers, three steps; the mean gradients are (4, -2), (-2, 2), (1, -1).
const std::vector<std::vector<Eigen::VectorXd>>& ThreeSteps() {
  static const std::vector<std::vector<Eigen::VectorXd>> steps = {
      {Vec({2, -4}), Vec({6, 0})}, {Vec({0, 2}), Vec({-4, 2})}, {Vec({1, 1}), Vec({1, -3})}};
  return steps;
}

TEST(Sgd, AppliesTheMeanGradient) {
  auto sgd = MakeNamed("sgd", {}, {3, 2});
  Eigen::VectorXd x = Vec({1, 2, 3});
  const Traffic traffic = Step(*sgd, 1, 0.5, {Vec({1, 0, -2}), Vec({3, 4, 0})}, x);
  EXPECT_EQ(x, Vec({1 - 0.5 * 2, 2 - 0.5 * 2, 3 - 0.5 * -1}));
  EXPECT_THAT(traffic.up, ::testing::ElementsAre(24, 24));  // three fp64 values each way
  EXPECT_EQ(traffic.down, 24u);
}

// m = beta m + (1 - beta) g, x -= lr m with beta = lr = 1/2:
//   m1 = (2, -1),     x1 = (1, 1) - (1, -0.5)       = (0, 1.5)
//   m2 = (0, 0.5),    x2 = (0, 1.5) - (0, 0.25)     = (0, 1.25)
//   m3 = (0.5, -0.25), x3 = (0, 1.25) - (0.25, -0.125) = (-0.25, 1.375)
TEST(Sgdm, ThreeStepsByHand) {
  auto sgdm = MakeNamed("sgdm", {{"beta", {0.5, ""}}}, {2, 2});
  Eigen::VectorXd x = Vec({1, 1});
  const std::vector<Eigen::VectorXd> m = {Vec({2, -1}), Vec({0, 0.5}), Vec({0.5, -0.25})};
  const std::vector<Eigen::VectorXd> expected = {Vec({0, 1.5}), Vec({0, 1.25}),
                                                 Vec({-0.25, 1.375})};
  for (std::size_t s = 0; s < 3; ++s) {
    Step(*sgdm, static_cast<std::int64_t>(s) + 1, 0.5, ThreeSteps()[s], x);
    EXPECT_EQ(*sgdm->Observe(Quantity::kMomentum, kServer), m[s]) << "t = " << s + 1;
    EXPECT_EQ(x, expected[s]) << "t = " << s + 1;
  }
}

// PyTorch, momentum 1/2, dampening 0: buf1 = g1 = (4, -2), buf2 = (2, -1) + (-2, 2) = (0, 1),
// buf3 = (0, 0.5) + (1, -1) = (1, -0.5); x -= lr buf: (-1, 2), (-1, 1.5), (-1.5, 1.75).
// With dampening 1/2: buf1 = g1 still (the first step is undamped), buf2 = (2, -1) + (-1, 1) =
// (1, 0), buf3 = (0.5, 0) + (0.5, -0.5) = (1, -0.5); x: (-1, 2), (-1.5, 2), (-2, 2.25).
TEST(SgdmTorch, ThreeStepsByHand) {
  struct Case {
    double dampening;
    std::vector<Eigen::VectorXd> buf, x;
  };
  const std::vector<Case> cases = {
      {0.0,
       {Vec({4, -2}), Vec({0, 1}), Vec({1, -0.5})},
       {Vec({-1, 2}), Vec({-1, 1.5}), Vec({-1.5, 1.75})}},
      {0.5,
       {Vec({4, -2}), Vec({1, 0}), Vec({1, -0.5})},
       {Vec({-1, 2}), Vec({-1.5, 2}), Vec({-2, 2.25})}},
  };
  for (const Case& c : cases) {
    auto torch = MakeNamed("sgdm-torch",
                           {{"momentum", {0.5, ""}}, {"dampening", {c.dampening, ""}}}, {2, 2});
    Eigen::VectorXd x = Vec({1, 1});
    for (std::size_t s = 0; s < 3; ++s) {
      Step(*torch, static_cast<std::int64_t>(s) + 1, 0.5, ThreeSteps()[s], x);
      EXPECT_EQ(*torch->Observe(Quantity::kMomentum, kServer), c.buf[s])
          << "dampening " << c.dampening << ", t = " << s + 1;
      EXPECT_EQ(x, c.x[s]) << "dampening " << c.dampening << ", t = " << s + 1;
    }
  }
}

// The papers' momentum and PyTorch's are different algorithms (docs/conventions.md §9): even
// with dampening = 1 - beta, which makes the recursions equal, torch's first buffer is g1 and
// sgdm's first m is (1 - beta) g1, so the first steps differ by the factor 1/(1 - beta).
TEST(SgdmTorch, DiffersFromThePapersMomentumAtTheFirstStep) {
  auto sgdm = MakeNamed("sgdm", {{"beta", {0.5, ""}}}, {2, 2});
  auto torch = MakeNamed("sgdm-torch", {{"momentum", {0.5, ""}}, {"dampening", {0.5, ""}}}, {2, 2});
  Eigen::VectorXd x_papers = Vec({1, 1}), x_torch = x_papers;
  Step(*sgdm, 1, 0.5, ThreeSteps()[0], x_papers);
  Step(*torch, 1, 0.5, ThreeSteps()[0], x_torch);
  EXPECT_EQ(x_papers, Vec({0, 1.5}));  // (1, 1) - 0.5 * 0.5 * (4, -2)
  EXPECT_EQ(x_torch, Vec({-1, 2}));    // (1, 1) - 0.5 * (4, -2)
  EXPECT_EQ(x_torch - Vec({1, 1}), 2 * (x_papers - Vec({1, 1})));
  // With the defaults (beta = momentum = 0.9, dampening 0) the first steps are 0.1 lr g and lr g.
  auto sgdm_default = MakeNamed("sgdm", {}, {1, 1});
  auto torch_default = MakeNamed("sgdm-torch", {}, {1, 1});
  Eigen::VectorXd a = Vec({0}), b = Vec({0});
  Step(*sgdm_default, 1, 1.0, {Vec({1})}, a);
  Step(*torch_default, 1, 1.0, {Vec({1})}, b);
  EXPECT_EQ(a[0], -(1 - 0.9));
  EXPECT_EQ(b[0], -1.0);
}

// Nesterov (torch.optim.SGD, nesterov = true), momentum 1/2, lr 1/2, one worker:
//   t = 1: buf = g1 = (4, -2), d = g1 + 0.5 buf = (6, -3),     x = (1, 1) - (3, -1.5) = (-2, 2.5)
//   t = 2: buf = 0.5 (4, -2) + (-2, 2) = (0, 1), d = (-2, 2) + (0, 0.5) = (-2, 2.5),
//          x = (-2, 2.5) - (-1, 1.25) = (-1, 1.25)
TEST(SgdmTorch, NesterovByHand) {
  auto torch = MakeNamed("sgdm-torch", {{"momentum", {0.5, ""}}, {"nesterov", {true, ""}}}, {2, 1});
  Eigen::VectorXd x = Vec({1, 1});
  Step(*torch, 1, 0.5, {Vec({4, -2})}, x);
  EXPECT_EQ(x, Vec({-2, 2.5}));
  Step(*torch, 2, 0.5, {Vec({-2, 2})}, x);
  EXPECT_EQ(*torch->Observe(Quantity::kMomentum, kServer), Vec({0, 1}));
  EXPECT_EQ(x, Vec({-1, 1.25}));
}

// momentum = 0: PyTorch keeps no buffer and takes plain SGD steps, whatever the dampening.
TEST(SgdmTorch, ZeroMomentumIsSgd) {
  auto torch = MakeNamed("sgdm-torch", {{"momentum", {0.0, ""}}, {"dampening", {0.5, ""}}}, {2, 2});
  Eigen::VectorXd x = Vec({1, 1});
  for (std::size_t s = 0; s < 3; ++s) {
    const Eigen::VectorXd before = x;
    const Eigen::VectorXd mean = (ThreeSteps()[s][0] + ThreeSteps()[s][1]) / 2;
    Step(*torch, static_cast<std::int64_t>(s) + 1, 0.5, ThreeSteps()[s], x);
    EXPECT_EQ(x, before - 0.5 * mean);
  }
  EXPECT_EQ(torch->Observe(Quantity::kMomentum, kServer), nullptr);
}

// Three workers, d = 5, lr = 1/2. Signs per coordinate (worker 0, 1, 2):
//   0: (+, +, -)  sum 1    mean 1/3   majority 1
//   1: (-, +, +)  sum 1    mean 1/3   majority 1
//   2: (0, 0, -)  sum -1   mean -1/3  majority -1   (two zero gradients: sign(0) = 0)
//   3: (+, -, 0)  sum 0    mean 0     majority 0    (a tie: the coordinate stays)
//   4: (+, +, +)  sum 3    mean 1     majority 1
TEST(SignSgd, MeanAndMajorityVoteByHand) {
  const std::vector<Eigen::VectorXd> g = {Vec({1.5, -2, 0, 3, 1e-300}), Vec({0.1, 3, 0, -1, 2}),
                                          Vec({-7, 5, -0.5, 0, 4})};
  auto mean = MakeNamed("signsgd", {}, {5, 3});
  auto majority = MakeNamed("signsgd", {{"aggregate", {std::string("majority"), ""}}}, {5, 3});
  Eigen::VectorXd x_mean = Eigen::VectorXd::Zero(5), x_majority = x_mean;
  const Traffic traffic = Step(*mean, 1, 0.5, g, x_mean);
  Step(*majority, 1, 0.5, g, x_majority);
  const double third = 1.0 / 3;
  EXPECT_EQ(x_mean, Vec({-0.5 * third, -0.5 * third, 0.5 * third, 0, -0.5}));
  EXPECT_EQ(x_majority, Vec({-0.5, -0.5, 0.5, 0, -0.5}));
  // The uncompressed reference: d fp64 values each way.
  EXPECT_THAT(traffic.up, ::testing::ElementsAre(40, 40, 40));
  EXPECT_EQ(traffic.down, 40u);
}

// Eigen's sign maps NaN to 0, which would hide a broken gradient; signsgd keeps it, so the
// run's non-finite check (LastEncode) sees it and x does not silently stay put.
TEST(SignSgd, NaNGradientIsNotSilentlyZero) {
  auto signsgd = MakeNamed("signsgd", {}, {2, 1});
  Eigen::VectorXd x = Vec({1, 1});
  Step(*signsgd, 1, 0.5, {Vec({std::numeric_limits<double>::quiet_NaN(), 1})}, x);
  EXPECT_EQ(signsgd->LastEncode(0)->non_finite, 1);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], 0.5);
}

TEST(SgdFamily, BadOptionsNameKeyValueAndRule) {
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("sgdm-torch", {{"momentum", {1.0, ""}}}, {2, 1});
              }),
              HasSubstr("momentum must be in [0, 1), got 1"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("sgdm", {{"beta", {1.0, ""}}}, {2, 1});
              }),
              HasSubstr("beta must be in [0, 1), got 1"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("sgdm-torch", {{"dampening", {1.5, ""}}}, {2, 1});
              }),
              HasSubstr("dampening must be in [0, 1], got 1.5"));
  EXPECT_THAT(
      UserErrorOf([] {
        MakeNamed("sgdm-torch", {{"nesterov", {true, ""}}, {"dampening", {0.1, ""}}}, {2, 1});
      }),
      HasSubstr("nesterov = true needs momentum > 0 and dampening = 0, got momentum 0.9 "
                "and dampening 0.1"));
  EXPECT_THAT(
      UserErrorOf([] {
        MakeNamed("sgdm-torch", {{"nesterov", {true, ""}}, {"momentum", {0.0, ""}}}, {2, 1});
      }),
      HasSubstr("got momentum 0 and dampening 0"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("signsgd", {{"aggregate", {std::string("foo"), ""}}}, {2, 1});
              }),
              HasSubstr("aggregate must be one of mean, majority; got 'foo'"));
}

}  // namespace
}  // namespace lemmalab
