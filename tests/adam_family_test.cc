// Adam, AMSGrad and AdamW's entry against values computed by hand from the PyTorch documentation
// formulas (torch.optim.Adam, amsgrad=True), and their option validation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "optimizers/adam.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::OptionPairs;
using testing::Step;
using testing::UserErrorOf;
using testing::Vec;

// The registered factory of `name` (not MakeOptimizer, so no generic weight decay is added).
std::unique_ptr<DistributedOptimizer<double>> Build(std::string_view name,
                                                    const OptionPairs& options,
                                                    const OptimizerContext& context) {
  return testing::MakeNamed(name, options, context, testing::Through::kFactory);
}

// Three steps, d = 3, n = 2 workers, alpha_t = 0.1, 0.05, 0.02, x_0 = (1, -2, 0.5), default
// betas and eps. The third coordinate's gradient falls from 4 to 0.05 and 0.02, so its v
// decreases after step 1 and AMSGrad's max matters there.
const std::vector<std::vector<Eigen::VectorXd>> kGradients = {
    {Vec({0.2, -1.0, 5.0}), Vec({0.4, 0.5, 3.0})},      // mean (0.3, -0.25, 4)
    {Vec({-0.1, 0.3, 0.1}), Vec({0.5, -0.1, 0.0})},     // mean (0.2, 0.1, 0.05)
    {Vec({0.6, 0.2, -0.02}), Vec({-0.2, -0.4, 0.06})},  // mean (0.2, -0.1, 0.02)
};
constexpr double kRates[] = {0.1, 0.05, 0.02};

Eigen::VectorXd RunThreeSteps(DistributedOptimizer<double>& opt) {
  Eigen::VectorXd x = Vec({1, -2, 0.5});
  for (int t = 1; t <= 3; ++t) Step(opt, t, kRates[t - 1], kGradients[t - 1], x);
  return x;
}

void ExpectRelativelyNear(const Eigen::VectorXd& actual, const Eigen::VectorXd& expected,
                          double tolerance, const std::string& what) {
  for (Eigen::Index j = 0; j < expected.size(); ++j) {
    EXPECT_NEAR(actual[j], expected[j], tolerance * std::abs(expected[j]))
        << what << " [" << j << "]";
  }
}

// The expected values below were computed with python3 (double precision), transcribing the
// torch.optim.Adam documentation step by step:
//   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g*g; v_max = max(v_max, v)  (amsgrad)
//   c1 = 1 - b1**t, c2 = 1 - b2**t (1.0 without bias correction)
//   outside: x -= (lr/c1) * (m / (sqrt(v_or_vmax)/sqrt(c2) + eps))
//   inside:  x -= (lr/c1) * (m / sqrt(v_or_vmax/c2 + eps))
// with g the mean (a+b)/2 of the two workers' gradients. 1e-12 relative leaves room for the
// order of operations only: a wrong formula moves the values by far more (AMSGrad's third
// coordinate differs from Adam's by 2e-5; the max of the bias-corrected v, the formula of older
// PyTorch documentation, would give x = (0.84345, -1.88057, 0.36989)).
TEST(Adam, ThreeStepsMatchThePyTorchFormula) {
  const OptimizerContext context{3, 2};
  auto adam = Build("adam", {}, context);
  ExpectRelativelyNear(RunThreeSteps(*adam),
                       Vec({0.832164993286034, -1.8732597037044674, 0.35546842248954474}), 1e-12,
                       "outside");
  ExpectRelativelyNear(*adam->Observe(Quantity::kMomentum, kServer),
                       Vec({0.062299999999999994, -0.021249999999999998, 0.33049999999999996}),
                       1e-12, "m");
  ExpectRelativelyNear(*adam->Observe(Quantity::kVariance, 1),
                       Vec({0.00016978009000000017, 8.236506250000009e-05, 0.015970913500000017}),
                       1e-12, "v");
  EXPECT_EQ(adam->Observe(Quantity::kMaxVariance, 0), nullptr);

  auto inside = Build("adam", {{"eps_placement", {std::string("inside"), ""}}}, context);
  ExpectRelativelyNear(RunThreeSteps(*inside),
                       Vec({0.8321649982312629, -1.8732597103315038, 0.35546842213606633}), 1e-12,
                       "inside");

  auto uncorrected = Build("adam", {{"bias_correction", {false, ""}}}, context);
  ExpectRelativelyNear(RunThreeSteps(*uncorrected),
                       Vec({0.38196709692889985, -1.563509312120914, -0.01287175194951068}), 1e-12,
                       "no bias correction");
}

TEST(Amsgrad, ThreeStepsMatchThePyTorchFormula) {
  const OptimizerContext context{3, 2};
  auto amsgrad = Build("amsgrad", {}, context);
  ExpectRelativelyNear(RunThreeSteps(*amsgrad),
                       Vec({0.832164993286034, -1.8732597037044674, 0.3554923631103894}), 1e-12,
                       "outside");
  // v_max keeps step 1's v = 0.001 * 16 on the third coordinate; v itself has decreased.
  ExpectRelativelyNear(*amsgrad->Observe(Quantity::kMaxVariance, kServer),
                       Vec({0.00016978009000000017, 8.236506250000009e-05, 0.016000000000000014}),
                       1e-12, "v_max");
  ExpectRelativelyNear(*amsgrad->Observe(Quantity::kVariance, 0),
                       Vec({0.00016978009000000017, 8.236506250000009e-05, 0.015970913500000017}),
                       1e-12, "v");

  auto inside = Build("amsgrad", {{"eps_placement", {std::string("inside"), ""}}}, context);
  ExpectRelativelyNear(RunThreeSteps(*inside),
                       Vec({0.8321649982312629, -1.8732597103315038, 0.35549236275704166}), 1e-12,
                       "inside");

  auto uncorrected = Build("amsgrad", {{"bias_correction", {false, ""}}}, context);
  ExpectRelativelyNear(RunThreeSteps(*uncorrected),
                       Vec({0.38196709692889985, -1.563509312120914, -0.01276328205880569}), 1e-12,
                       "no bias correction");
}

// AdamW's registry entry builds the Adam step; MakeOptimizer adds the decoupled decay.
TEST(AdamW, EntryIsTheAdamStep) {
  const OptimizerContext context{3, 2};
  auto adamw = Build("adamw", {}, context);
  auto adam = Build("adam", {}, context);
  EXPECT_EQ(RunThreeSteps(*adamw), RunThreeSteps(*adam));
}

// torch.optim.AdamW's documented step: x <- x - lr lambda x first, then the Adam step above;
// computed as the Adam values (python3, same gradients and rates) with x[j] *= 1 - lr * wd
// before each step's update. lambda defaults to 0.01 (PyTorch's default) for adamw only.
TEST(AdamW, ThreeStepsMatchThePyTorchFormula) {
  const OptimizerContext context{3, 2};
  const auto make = [&](const OptionPairs& options) {
    return testing::MakeNamed("adamw", options, context);
  };
  ExpectRelativelyNear(RunThreeSteps(*make({})),
                       Vec({0.8305454867046014, -1.8699347495599656, 0.35469560555431096}), 1e-12,
                       "default weight decay 0.01");
  ExpectRelativelyNear(RunThreeSteps(*make({{"weight_decay", {0.2, ""}}})),
                       Vec({0.8000742636575071, -1.8073632248145788, 0.34015988478487813}), 1e-12,
                       "weight decay 0.2");
  // Without decay it is Adam again (the values of Adam.ThreeStepsMatchThePyTorchFormula).
  ExpectRelativelyNear(RunThreeSteps(*make({{"weight_decay", {0.0, ""}}})),
                       Vec({0.832164993286034, -1.8732597037044674, 0.35546842248954474}), 1e-12,
                       "no weight decay");
}

TEST(Adam, TwoStepsByHand) {
  for (const bool bias_correction : {true, false}) {
    AdamOptions o;
    o.bias_correction = bias_correction;
    auto adam = MakeAdam<double>(o, {2, 1});
    Eigen::VectorXd x = Vec({0.5, -0.5});
    const Eigen::VectorXd g1 = Vec({0.1, -0.2}), g2 = Vec({0.3, 0.1});
    Step(*adam, 1, 0.01, {g1}, x);
    Step(*adam, 2, 0.01, {g2}, x);

    Eigen::VectorXd expected = Vec({0.5, -0.5});
    Eigen::VectorXd m = Eigen::VectorXd::Zero(2), v = Eigen::VectorXd::Zero(2);
    int t = 0;
    for (const Eigen::VectorXd& g : {g1, g2}) {
      ++t;
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g.cwiseAbs2();
      const double cm = bias_correction ? 1 - std::pow(0.9, t) : 1.0;
      const double cv = bias_correction ? 1 - std::pow(0.999, t) : 1.0;
      for (int j = 0; j < 2; ++j) expected[j] -= 0.01 * (m[j] / cm) / (std::sqrt(v[j] / cv) + 1e-8);
    }
    EXPECT_NEAR((x - expected).norm(), 0, 1e-15) << "bias_correction " << bias_correction;
    if (bias_correction) {
      // The first bias-corrected Adam step is lr * sign(g) up to eps.
      Eigen::VectorXd y = Vec({0.5, -0.5});
      auto fresh = MakeAdam<double>(o, {2, 1});
      Step(*fresh, 1, 0.01, {g1}, y);
      EXPECT_NEAR(y[0], 0.49, 1e-9);
      EXPECT_NEAR(y[1], -0.49, 1e-9);
    }
  }
}

TEST(Adam, RejectsBadOptions) {
  const OptimizerContext context{3, 2};
  for (const std::string name : {"adam", "adamw", "amsgrad"}) {
    EXPECT_THAT(UserErrorOf([&] {
                  Build(name, {{"beta1", {1.0, ""}}}, context);
                }),
                HasSubstr("beta1 must be in [0, 1), got 1"))
        << name;
    EXPECT_THAT(UserErrorOf([&] {
                  Build(name, {{"beta2", {-0.5, ""}}}, context);
                }),
                HasSubstr("beta2 must be in [0, 1), got -0.5"))
        << name;
    EXPECT_THAT(UserErrorOf([&] {
                  Build(name, {{"eps", {0.0, ""}}}, context);
                }),
                HasSubstr("eps must be > 0, got 0"))
        << name;
    EXPECT_THAT(UserErrorOf([&] {
                  Build(name, {{"eps_placement", {std::string("middle"), ""}}}, context);
                }),
                HasSubstr("eps_placement must be one of outside, inside; got 'middle'"))
        << name;
  }
}

}  // namespace
}  // namespace lemmalab
