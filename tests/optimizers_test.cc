// Birder, step by step against values computed by hand, and Birder's reduction to
// its uncompressed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/uniform_01.hpp>
#include <cmath>

#include "compressors/identity.h"
#include "compressors/stochastic_binary.h"
#include "optimizers/birder.h"
#include "tests/optimizer_test_util.h"

namespace lemmalab {
namespace {

using testing::Step;
using testing::Vec;

// Step's seed: Q below replays its draws.
constexpr std::uint64_t kSeed = testing::kStepSeed;

// Birder's Q on one coordinate by the documented rule: element j uses word j of the stream.
double Q(double input, Purpose purpose, std::uint32_t worker, std::uint64_t t, std::uint64_t j) {
  PhiloxStream s({kSeed, purpose, worker, t});
  s.Seek(j);
  const double p = (std::clamp(input, -1.0, 1.0) + 1) / 2;
  return boost::random::uniform_01<double>()(s) < p ? 1.0 : -1.0;
}

CompressorMaker<double> BinaryQ() {
  return [](const CompressorShape& shape) {
    return MakeStochasticBinary<double>(QuantizerDomain::kClip, shape.dimension);
  };
}

// Birder Algorithm 1 with d = 3, n = 2, beta = 0.5, eps = 0 (Eq. 4 exactly), alpha = 0.1: two
// steps computed by hand. Step 1 is deterministic for the workers (m/b = sign g exactly); the
// random draws are replayed from the documented stream rule.
TEST(Birder, TwoStepsOfAlgorithm1ByHand) {
  BirderOptions o;
  o.beta = 0.5;
  o.eps = 0.0;
  auto birder = MakeBirder<double>(o, Symmetric(BinaryQ()), {3, 2});
  constexpr auto kWorker = Purpose::kWorkerCompression;
  constexpr auto kServerQ = Purpose::kServerCompression;

  // Step 1.
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  Step(*birder, 1, 0.1, {Vec({1, -2, 0.5}), Vec({3, -1, -0.5})}, x);
  EXPECT_EQ(*birder->Observe(Quantity::kMomentum, 0), Vec({0.5, -1, 0.25}));
  EXPECT_EQ(*birder->Observe(Quantity::kMomentum, 1), Vec({1.5, -0.5, -0.25}));
  EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, 0), Vec({0.5, 1, 0.25}));
  EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, 1), Vec({1.5, 0.5, 0.25}));
  // u^(1) = (1, -1, 1), u^(2) = (1, -1, -1) exactly, so the worker errors are zero.
  EXPECT_EQ(*birder->Observe(Quantity::kWorkerError, 0), Eigen::VectorXd::Zero(3));
  EXPECT_EQ(*birder->Observe(Quantity::kWorkerError, 1), Eigen::VectorXd::Zero(3));
  // Server: mean u = (1, -1, 0); the third coordinate is a fair coin.
  const double s = Q(0.0, kServerQ, kServerStream, 1, 2);
  const Eigen::VectorXd u_bar1 = Vec({1, -1, s});
  const Eigen::VectorXd e_bar1 = Vec({1, -1, 0}) - u_bar1;
  EXPECT_EQ(*birder->Observe(Quantity::kServerError, kServer), e_bar1);
  Eigen::VectorXd expected_x = -0.1 * u_bar1;
  EXPECT_EQ(x, expected_x);

  // Steps 2 and 3: m and b by hand (beta = 1/2 keeps them exact); Q's draws replayed; the
  // errors after step 2 are nonzero, so step 3 exercises line 8's "+ e_{t-1}".
  std::vector<Eigen::VectorXd> e_previous(2, Eigen::VectorXd::Zero(3));
  Eigen::VectorXd e_bar_previous = e_bar1;
  const auto check_step = [&](std::int64_t t, const std::vector<Eigen::VectorXd>& m,
                              const std::vector<Eigen::VectorXd>& b) {
    Eigen::VectorXd sum_u = Eigen::VectorXd::Zero(3);
    for (std::uint32_t i = 0; i < 2; ++i) {
      const int w = static_cast<int>(i);
      EXPECT_EQ(*birder->Observe(Quantity::kMomentum, w), m[i]) << "t = " << t;
      EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, w), b[i]) << "t = " << t;
      const Eigen::VectorXd input = m[i].cwiseQuotient(b[i]) + e_previous[i];  // line 8
      Eigen::VectorXd u(3);
      for (int j = 0; j < 3; ++j) {
        u[j] =
            Q(input[j], kWorker, i, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(j));
      }
      e_previous[i] = input - u;  // line 9
      EXPECT_EQ(*birder->Observe(Quantity::kWorkerError, w), e_previous[i]) << "t = " << t;
      sum_u += u;
    }
    const Eigen::VectorXd server_input = sum_u / 2 + e_bar_previous;  // line 12
    Eigen::VectorXd u_bar(3);
    for (int j = 0; j < 3; ++j) {
      u_bar[j] = Q(server_input[j], kServerQ, kServerStream, static_cast<std::uint64_t>(t),
                   static_cast<std::uint64_t>(j));
    }
    e_bar_previous = server_input - u_bar;  // line 13
    EXPECT_EQ(*birder->Observe(Quantity::kServerError, kServer), e_bar_previous) << "t = " << t;
    expected_x -= 0.1 * u_bar;  // line 16
    EXPECT_EQ(x, expected_x) << "t = " << t;
  };

  Step(*birder, 2, 0.1, {Vec({-1, -2, 1}), Vec({1, 1, 1})}, x);
  check_step(2, {Vec({-0.25, -1.5, 0.625}), Vec({1.25, 0.25, 0.375})},
             {Vec({0.75, 1.5, 0.625}), Vec({1.25, 0.75, 0.625})});
  // Worker 1's m/b is (-1/3, -1, 1): its last two coordinates are exact, so their error is 0.
  EXPECT_EQ((*birder->Observe(Quantity::kWorkerError, 0))[1], 0.0);
  EXPECT_EQ((*birder->Observe(Quantity::kWorkerError, 0))[2], 0.0);
  EXPECT_NE((*birder->Observe(Quantity::kWorkerError, 1)).squaredNorm(), 0.0);

  Step(*birder, 3, 0.1, {Vec({0.5, 0.5, -1}), Vec({-2, 0, 1})}, x);
  check_step(3, {Vec({0.125, -0.5, -0.1875}), Vec({-0.375, 0.125, 0.6875})},
             {Vec({0.625, 1, 0.8125}), Vec({1.625, 0.375, 0.8125})});
}

TEST(Birder, SendsOneBitPerElementBothWays) {
  const CompressorMaker<float> q = [](const CompressorShape& shape) {
    return MakeStochasticBinary<float>(QuantizerDomain::kClip, shape.dimension);
  };
  auto birder = MakeBirder<float>(BirderOptions{}, Symmetric(q), {1001, 3});
  const StepContext ctx{1, 0.1, kSeed};
  const Vector<float> g = Vector<float>::LinSpaced(1001, -1, 1);
  std::vector<Message> up(3);
  Message down;
  const Vector<float> x = Vector<float>::Zero(1001);
  for (int i = 0; i < 3; ++i) birder->WorkerStep(ctx, i, x, g, up[static_cast<std::size_t>(i)]);
  birder->ServerStep(ctx, 0, up, down);
  for (const Message& m : up) EXPECT_EQ(m.bits(), 1008);  // ceil(1001 / 8) bytes
  EXPECT_EQ(down.bits(), 1008);
}

TEST(Birder, ConstantIsAddedToTheDenominator) {
  BirderOptions o;
  o.beta = 0.5;
  o.eps = 0.5;
  auto birder = MakeBirder<double>(o, Symmetric(BinaryQ()), {3, 1});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  Step(*birder, 1, 0.1, {Vec({1, -2, 0})}, x);
  EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, 0), Vec({0.5, 1, 0}));
  EXPECT_EQ(*birder->Observe(Quantity::kDenominator, 0), Vec({1, 1.5, 0.5}));
}

TEST(Birder, MaxRuleAppliesOnlyAfterStepT0) {
  // Line 7 with T0 = 2: b_t = b_hat_t for t <= 2 and max(b_{t-1}, b_hat_t) from t = 3 on.
  // b_hat_1 = (1.5, 0.5, 0.25), b_hat_2 = (1.25, 0.75, 0.625) (smaller first coordinate),
  // b_hat_3 = (0.625, 0.375, 0.3125) (zero gradient: everything smaller).
  BirderOptions o;
  o.beta = 0.5;
  o.eps = 0.0;
  for (const bool max_rule : {false, true}) {
    o.t0 = max_rule ? std::optional<std::int64_t>(2) : std::nullopt;
    auto birder = MakeBirder<double>(o, Symmetric(BinaryQ()), {3, 1});
    Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
    Step(*birder, 1, 0.1, {Vec({3, -1, -0.5})}, x);
    Step(*birder, 2, 0.1, {Vec({1, 1, 1})}, x);
    EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, 0), Vec({1.25, 0.75, 0.625}))
        << "t = 2 is not after T0: no max yet";
    Step(*birder, 3, 0.1, {Vec({0, 0, 0})}, x);
    EXPECT_EQ(*birder->Observe(Quantity::kRawDenominator, 0),
              max_rule ? Vec({1.25, 0.75, 0.625}) : Vec({0.625, 0.375, 0.3125}));
  }
}

// With the identity in place of Q, the errors stay zero and Birder is the averaged SoftSign
// update x <- x - alpha (1/n) sum_i m_i / (b_i + eps) (birder.txt App. B, distributed).
TEST(Birder, WithIdentityCompressorReducesToAveragedSoftSign) {
  BirderOptions o;
  o.beta = 0.9;
  o.eps = 1e-3;
  const int n = 3;
  const Eigen::Index d = 5;
  auto birder = MakeBirder<double>(
      o, Symmetric<double>([](const CompressorShape&) { return MakeIdentity<double>(); }), {d, n});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), expected = x;
  std::vector<Eigen::VectorXd> m(n, Eigen::VectorXd::Zero(d)), b = m;
  for (std::int64_t t = 1; t <= 6; ++t) {
    std::vector<Eigen::VectorXd> g;
    for (int i = 0; i < n; ++i) {
      g.push_back(Eigen::VectorXd::LinSpaced(d, -1.0 * (i + 1), 0.5 * static_cast<double>(t)));
    }
    Step(*birder, t, 0.05, g, x);
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(d);
    for (int i = 0; i < n; ++i) {
      m[i] = 0.9 * m[i] + (1 - 0.9) * g[i];
      b[i] = 0.9 * b[i] + (1 - 0.9) * g[i].cwiseAbs();
      sum += m[i].cwiseQuotient((b[i].array() + 1e-3).matrix());
    }
    expected -= 0.05 * (sum / n);
    EXPECT_EQ(x, expected) << "t = " << t;
    EXPECT_EQ(*birder->Observe(Quantity::kWorkerError, 0), Eigen::VectorXd::Zero(d));
    EXPECT_EQ(*birder->Observe(Quantity::kServerError, kServer), Eigen::VectorXd::Zero(d));
  }
}

}  // namespace
}  // namespace lemmalab
