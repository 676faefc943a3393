// Birder's reductions: with the identity in place of Q and no error feedback it is SoftSignSGD
// (the independently written uncompressed form), and SoftSignSGD with beta = 0 and no constant
// is signSGD. Negative controls show each reduction needs its conditions.
#include <gtest/gtest.h>

#include <cmath>

#include "compressors/identity.h"
#include "optimizers/birder.h"
#include "optimizers/sign_sgd.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using testing::Step;

// Gaussian gradients for worker i at step t (never exactly 0).
std::vector<Eigen::VectorXd> Gradients(int n, std::int64_t t, Eigen::Index d) {
  std::vector<Eigen::VectorXd> g;
  for (int i = 0; i < n; ++i) {
    g.push_back(testing::GaussianVector(d, static_cast<std::uint64_t>(1000 * t + i)));
  }
  return g;
}

std::unique_ptr<DistributedOptimizer<double>> SoftSign(double beta, double eps,
                                                       const OptimizerContext& context) {
  OptionTable table("optimizer 'softsign-sgd'", "");
  table.Set("beta", {beta, ""});
  table.Set("eps", {eps, ""});
  return SoftSignSgdFromOptions<double>(table, context);
}

// Birder with Q = identity and feedback "none" on both sides sends m/(b + eps) as is, averages it
// and sends the mean back: SoftSignSGD's arithmetic, operation for operation (the same EMA
// expressions, one division, the mean summed in worker order, x -= lr mean), so EXPECT_EQ.
TEST(BirderReduction, IdentityWithoutFeedbackIsSoftSignSgd) {
  const CompressorMaker<double> identity = [](const CompressorShape&) {
    return MakeIdentity<double>();
  };
  for (const int n : {3, 1}) {
    BirderOptions o;
    o.beta = 0.9;
    o.eps = 1e-3;
    const OptimizerContext context{6, n};
    auto birder = MakeBirder<double>(
        o, Symmetric(identity, FeedbackKind::kNone, FeedbackKind::kNone), context);
    auto softsign = SoftSign(o.beta, o.eps, context);
    Eigen::VectorXd x_birder = testing::GaussianVector(6, 5), x_softsign = x_birder;
    for (std::int64_t t = 1; t <= 8; ++t) {
      const std::vector<Eigen::VectorXd> g = Gradients(n, t, 6);
      const double lr = 0.05 / std::sqrt(static_cast<double>(t));
      Step(*birder, t, lr, g, x_birder);
      Step(*softsign, t, lr, g, x_softsign);
      EXPECT_EQ(x_birder, x_softsign) << "n = " << n << ", t = " << t;
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(*birder->Observe(Quantity::kMomentum, i),
                  *softsign->Observe(Quantity::kMomentum, i));
        EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, i),
                  *softsign->Observe(Quantity::kRawDenominator, i));
      }
    }
    EXPECT_EQ(birder->Observe(Quantity::kWorkerError, 0), nullptr);  // no feedback kept
  }
}

// SoftSignSGD with beta = 0 and eps = 0: m = g and b = |g|, so m/b = g/|g| = sign(g) exactly
// where g != 0, and the mean of the signs is signSGD's (aggregate = "mean"): EXPECT_EQ.
TEST(BirderReduction, SoftSignWithoutMomentumOrConstantIsSignSgd) {
  for (const int n : {3, 1}) {
    const OptimizerContext context{6, n};
    auto softsign = SoftSign(0.0, 0.0, context);
    auto signsgd = MakeSignSgd<double>(SignSgdOptions{}, context);
    Eigen::VectorXd x_softsign = testing::GaussianVector(6, 9), x_signsgd = x_softsign;
    for (std::int64_t t = 1; t <= 6; ++t) {
      const std::vector<Eigen::VectorXd> g = Gradients(n, t, 6);
      Step(*softsign, t, 0.1, g, x_softsign);
      Step(*signsgd, t, 0.1, g, x_signsgd);
      EXPECT_EQ(x_softsign, x_signsgd) << "n = " << n << ", t = " << t;
    }
  }
}

// Negative controls. (1) A constant eps > 0 makes m/(b + eps) = g/(|g| + eps) fall short of
// sign(g): the reduction fails. (2) A zero gradient coordinate with eps = 0 is 0/0 in SoftSignSGD
// (NaN, which the run reports as diverged) where signSGD's sign(0) = 0 leaves it in place.
TEST(BirderReduction, ReductionToSignSgdNeedsNoConstantAndNoZeros) {
  const OptimizerContext context{6, 3};
  auto signsgd = MakeSignSgd<double>(SignSgdOptions{}, context);
  auto with_eps = SoftSign(0.0, 1e-3, context);
  Eigen::VectorXd x_signsgd = Eigen::VectorXd::Zero(6), x_eps = x_signsgd;
  const std::vector<Eigen::VectorXd> g = Gradients(3, 1, 6);
  Step(*signsgd, 1, 0.1, g, x_signsgd);
  Step(*with_eps, 1, 0.1, g, x_eps);
  EXPECT_NE(x_eps, x_signsgd);

  auto softsign = SoftSign(0.0, 0.0, context);
  std::vector<Eigen::VectorXd> with_zero = g;
  for (Eigen::VectorXd& gi : with_zero) gi[2] = 0;
  Eigen::VectorXd x_zero = Eigen::VectorXd::Zero(6), x_sign_zero = x_zero;
  auto signsgd_zero = MakeSignSgd<double>(SignSgdOptions{}, context);
  Step(*softsign, 1, 0.1, with_zero, x_zero);
  Step(*signsgd_zero, 1, 0.1, with_zero, x_sign_zero);
  EXPECT_TRUE(std::isnan(x_zero[2]));
  EXPECT_EQ(x_sign_zero[2], 0.0);
  EXPECT_EQ(x_zero[0], x_sign_zero[0]);  // the other coordinates still agree
}

}  // namespace
}  // namespace lemmalab
