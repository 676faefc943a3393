// Natural compression (compressors/natural.h): powers of two sent exactly with a hand-computed
// message, the documented draw rule, unbiasedness with the exact per-coordinate variance, the
// omega = 1/8 variance bound (attained at 4/3 2^e), the float32 exponent range, exact sizes.
#include "compressors/natural.h"

#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of natural (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        // Natural compression: one exponent byte per element, then the packed sign bits.
        {"Natural", R"(name = "natural")",
         [](const CompressorShape& s, int) { return 8 * s.dimension + SignBits(s.dimension); }},
    },
    {
        {"Natural", R"(name = "natural")", SplitsAlways},
    });

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({5, Purpose::kWorkerCompression, 4, step});
}

template <typename T>
Vector<T> RoundTrip(Compressor<T>& c, const Vector<T>& x, Message& m, std::uint64_t step = 1,
                    EncodeStats* stats = nullptr) {
  PhiloxStream stream = Stream(step);
  const EncodeStats s = c.Encode(x, stream, m);
  if (stats != nullptr) *stats = s;
  Vector<T> y(x.size());
  c.Decode(m, y);
  return y;
}

template <typename T>
void PowersOfTwoAreSentExactly() {
  Vector<T> x(8);
  x << 1, -0.5, 0, 4, std::ldexp(T(1), -126), std::ldexp(T(1), 127), -std::ldexp(T(1), -100), -T(0);
  auto c = MakeNatural<T>(8);
  Message m;
  PhiloxStream stream = Stream();
  const EncodeStats stats = c->Encode(x, stream, m);
  EXPECT_EQ(stats.elements, 8);
  EXPECT_EQ(stats.out_of_domain, 0);
  EXPECT_EQ(stream.position(), 8u) << "one word per element";
  // Exponent bytes 2^(E - 127) (0 for zero), then the sign bits of elements 1 and 6.
  EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{127, 126, 0, 129, 1, 254, 27, 0, 0x42}));
  Vector<T> y(8);
  c->Decode(m, y);
  EXPECT_EQ(y, x);
}

TEST(Natural, PowersOfTwoAreSentExactly) {
  PowersOfTwoAreSentExactly<float>();
  PowersOfTwoAreSentExactly<double>();
}

TEST(Natural, FollowsTheDrawRule) {
  const Eigen::Index d = 300;
  const Eigen::VectorXd x = testing::GaussianVector(d, 12) * 1e-3;
  auto c = MakeNatural<double>(d);
  Message m;
  const Eigen::VectorXd y = RoundTrip(*c, x, m, 3);
  PhiloxStream replay = Stream(3);
  for (Eigen::Index j = 0; j < d; ++j) {
    // |x_j| = f 2^k with f in [0.5, 1): between 2^(k-1) and 2^k, up with probability 2f - 1.
    int k;
    const double f = std::frexp(std::abs(x[j]), &k);
    const bool up = static_cast<double>(replay()) < (2 * f - 1) * 0x1p32;
    ASSERT_EQ(y[j], std::copysign(std::ldexp(1.0, up ? k : k - 1), x[j])) << "j = " << j;
  }
}

TEST(Natural, UnbiasedWithTheExactPerCoordinateVariance) {
  const Eigen::Index d = 16;
  Eigen::VectorXd x = testing::GaussianVector(d, 8) * 10;
  x[2] = 0;
  x[5] = -0.75;
  auto c = MakeNatural<double>(d);
  const int draws = 20000;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(d), sq = Eigen::VectorXd::Zero(d);
  Message m;
  for (int k = 0; k < draws; ++k) {
    const Eigen::VectorXd y = RoundTrip(*c, x, m, static_cast<std::uint64_t>(k + 1));
    sum += y;
    sq += (y - x).cwiseAbs2();
  }
  for (Eigen::Index j = 0; j < d; ++j) {
    const double a = std::abs(x[j]);
    int k;
    std::frexp(a, &k);
    const double lo = a == 0 ? 0 : std::ldexp(1.0, k - 1), hi = 2 * lo,
                 p_up = a == 0 ? 0 : a / lo - 1;
    const double var = (hi - a) * (a - lo);
    EXPECT_LE(var, a * a / 8 * (1 + 1e-12));
    EXPECT_NEAR(sum[j] / draws, x[j], 5 * std::sqrt(var / draws) + 1e-15) << "j = " << j;
    // (C_j - x_j)^2 is (hi - a)^2 w.p. p_up and (a - lo)^2 otherwise.
    const double e4 = p_up * std::pow(hi - a, 4) + (1 - p_up) * std::pow(a - lo, 4);
    EXPECT_NEAR(sq[j] / draws, var, 5 * std::sqrt((e4 - var * var) / draws) + 1e-15) << "j = " << j;
  }
}

// E||C(x) - x||^2 <= (1/8) ||x||^2, with equality when every |x_j| = (4/3) 2^e_j.
TEST(Natural, VarianceBoundOneEighthIsKeptAndAttained) {
  const Eigen::Index d = 64;
  Eigen::VectorXd worst(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    worst[j] = (j % 2 ? -1 : 1) * std::ldexp(4.0 / 3.0, static_cast<int>(j % 21) - 10);
  }
  for (const bool attained : {true, false}) {
    const Eigen::VectorXd x = attained ? worst : testing::GaussianVector(d, 33);
    auto c = MakeNatural<double>(d);
    const int draws = 4000;
    double sum = 0, sum_sq = 0;
    Message m;
    for (int k = 0; k < draws; ++k) {
      const double e = (RoundTrip(*c, x, m, static_cast<std::uint64_t>(k + 1)) - x).squaredNorm() /
                       x.squaredNorm();
      sum += e;
      sum_sq += e * e;
    }
    const double mean = sum / draws;
    const double se = std::sqrt((sum_sq / draws - mean * mean) / draws);
    double exact = 0;  // sum_j (2^(e+1) - |x_j|)(|x_j| - 2^e) / ||x||^2
    for (Eigen::Index j = 0; j < d; ++j) {
      const double a = std::abs(x[j]);
      int k;
      std::frexp(a, &k);
      const double lo = std::ldexp(1.0, k - 1);
      exact += (2 * lo - a) * (a - lo);
    }
    exact /= x.squaredNorm();
    SCOPED_TRACE(attained ? "|x_j| = 4/3 2^e" : "Gaussian");
    EXPECT_NEAR(mean, exact, 5 * se);
    EXPECT_LE(mean, 0.125 + 5 * se);
    if (attained) {
      EXPECT_NEAR(exact, 0.125, 1e-12);
    } else {
      EXPECT_LT(exact, 0.125);
    }
  }
}

TEST(Natural, Float32ExponentRange) {
  Message m;
  EncodeStats stats;
  // Above 2^127: 2^128 does not fit, so the element is saturated at 2^127 and counted.
  {
    auto c = MakeNatural<float>(3);
    Eigen::VectorXf x(3);
    x << std::numeric_limits<float>::max(), std::ldexp(1.0f, 127), -1.5f * std::ldexp(1.0f, 127);
    const Eigen::VectorXf y = RoundTrip(*c, x, m, 1, &stats);
    EXPECT_EQ(stats.out_of_domain, 2);
    EXPECT_EQ(y[0], std::ldexp(1.0f, 127));
    EXPECT_EQ(y[1], std::ldexp(1.0f, 127));
    EXPECT_EQ(y[2], -std::ldexp(1.0f, 127));
  }
  {
    auto c = MakeNatural<double>(2);
    Eigen::VectorXd x(2);
    x << -1e300, 1e-300;
    const Eigen::VectorXd y = RoundTrip(*c, x, m, 1, &stats);
    EXPECT_EQ(stats.out_of_domain, 2);
    EXPECT_EQ(y[0], -std::ldexp(1.0, 127));
    EXPECT_TRUE(y[1] == 0 || y[1] == std::ldexp(1.0, -126));
  }
  // Below 2^-126 (a float subnormal): 0 or 2^-126, with P(2^-126) = 2^-130 / 2^-126 = 1/16.
  {
    auto c = MakeNatural<float>(1);
    Eigen::VectorXf x(1);
    x << -std::ldexp(1.0f, -130);
    ASSERT_EQ(std::fpclassify(x[0]), FP_SUBNORMAL);
    const int draws = 16000;
    int up = 0;
    for (int k = 0; k < draws; ++k) {
      const Eigen::VectorXf y = RoundTrip(*c, x, m, static_cast<std::uint64_t>(k + 1), &stats);
      ASSERT_EQ(stats.out_of_domain, 1);
      ASSERT_TRUE(y[0] == 0 || y[0] == -std::ldexp(1.0f, -126)) << y[0];
      up += y[0] != 0;
      ASSERT_EQ(m.bytes[1], y[0] == 0 ? 0 : 1) << "a sign bit only on an element sent nonzero";
    }
    EXPECT_NEAR(up, draws / 16.0, 5 * std::sqrt(draws * (1 / 16.0) * (15 / 16.0)));
  }
}

TEST(Natural, NonFiniteInputIsCountedAndSentAsZero) {
  auto c = MakeNatural<float>(4);
  Eigen::VectorXf x(4);
  x << 1.5f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), 3;
  Message m;
  EncodeStats stats;
  const Eigen::VectorXf y = RoundTrip(*c, x, m, 1, &stats);
  EXPECT_EQ(stats.non_finite, 2);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_TRUE(y.allFinite());
}

TEST(Natural, ExactMessageSizes) {
  for (const Eigen::Index d : {1, 2, 7, 8, 9, 31, 32, 33, 100, 4097, 5000}) {
    auto c = MakeNatural<float>(d);
    Message m;
    const Eigen::VectorXf x = testing::GaussianVector(d, 2).cast<float>();
    RoundTrip(*c, x, m);
    EXPECT_EQ(m.bits(), 8 * d + 8 * ((d + 7) / 8)) << "d = " << d;
    EXPECT_EQ(m.bits(), 8 * ((9 * d + 7) / 8)) << "the size of a packed 9-bit stream";
  }
}

}  // namespace
}  // namespace lemmalab
