// TernGrad (compressors/terngrad.h): the 2-bit code on a hand-computed message, equality with
// QSGD (max-norm, s = 1), unbiasedness and the per-coordinate variance s|x_j| - x_j^2, the scale
// rounded up to float32, exact sizes.
#include "compressors/terngrad.h"

#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "compressors/qsgd.h"
#include "tests/compressor_examples.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of terngrad (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        {"TernGrad", R"(name = "terngrad")",
         [](const CompressorShape& s, int) { return ScaleAndFields(s.dimension, 2); }},
    },
    {
        // 3-bit fields
        {"TernGrad", R"(name = "terngrad")", SplitsAlways},
    });

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({77, Purpose::kWorkerCompression, 3, step});
}

// Gaussian values, about a third of them zero.
Eigen::VectorXd WithZeros(Eigen::Index d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_01<double> uniform;
  Eigen::VectorXd x(d);
  for (Eigen::Index j = 0; j < d; ++j) x[j] = uniform(s) < 0.3 ? 0.0 : normal(s);
  return x;
}

float ScaleOf(const Message& m) {
  float scale;
  std::memcpy(&scale, m.bytes.data(), sizeof(float));
  return scale;
}

TEST(TernGrad, HandComputedMessage) {
  // max |x| = 2, so b_j = 1 exactly where |x_j| = 2. Codes (bit 0 = b, bit 1 = negative):
  // 00, 01, 11, 00, 01 -> stream bits 2, 4, 5, 8 -> 0x34 0x01.
  for (const bool fp64 : {false, true}) {
    Eigen::VectorXd x(5);
    x << 0, 2, -2, 0, 2;
    Message m;
    PhiloxStream stream = Stream();
    Eigen::VectorXd y(5);
    if (fp64) {
      auto c = MakeTernGrad<double>(5);
      EXPECT_EQ(c->name(), "terngrad");
      EXPECT_TRUE(c->unbiased());
      EXPECT_FALSE(c->q().has_value());
      c->Encode(x, stream, m);
      c->Decode(m, y);
    } else {
      auto c = MakeTernGrad<float>(5);
      c->Encode(x.cast<float>(), stream, m);
      Eigen::VectorXf yf(5);
      c->Decode(m, yf);
      y = yf.cast<double>();
    }
    EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{0x00, 0x00, 0x00, 0x40, 0x34, 0x01}));
    EXPECT_EQ(y, x);
    EXPECT_EQ(stream.position(), 5u) << "one word per element";
  }
}

TEST(TernGrad, IsQsgdWithTheMaxNormAndOneLevel) {
  for (const Eigen::Index d : {1, 3, 8, 33, 1000, 5000}) {
    const Eigen::VectorXd x = WithZeros(d, static_cast<std::uint64_t>(d));
    auto tern = MakeTernGrad<double>(d);
    auto qsgd = MakeQsgd<double>(1, QsgdNorm::kInf, d);
    Message a, b;
    PhiloxStream s1 = Stream(4), s2 = Stream(4);
    tern->Encode(x, s1, a);
    qsgd->Encode(x, s2, b);
    EXPECT_EQ(a.bytes, b.bytes) << "d = " << d;
  }
}

TEST(TernGrad, UnbiasedWithVarianceScaleTimesAbsMinusSquare) {
  const Eigen::Index d = 16;
  const Eigen::VectorXd x = WithZeros(d, 21);
  auto c = MakeTernGrad<double>(d);
  const int draws = 20000;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(d), sq = Eigen::VectorXd::Zero(d);
  Message m;
  Eigen::VectorXd y(d);
  double s = 0;
  for (int k = 0; k < draws; ++k) {
    PhiloxStream stream = Stream(static_cast<std::uint64_t>(k + 1));
    c->Encode(x, stream, m);
    c->Decode(m, y);
    s = ScaleOf(m);
    for (Eigen::Index j = 0; j < d; ++j) {
      ASSERT_TRUE(y[j] == 0 || y[j] == std::copysign(s, x[j])) << "j = " << j << ": " << y[j];
    }
    sum += y;
    sq += (y - x).cwiseAbs2();
  }
  EXPECT_GE(s, x.cwiseAbs().maxCoeff());
  for (Eigen::Index j = 0; j < d; ++j) {
    const double a = std::abs(x[j]), p = a / s;
    const double var = s * a - a * a;  // Wen et al.: E[(C_j - x_j)^2] = s |x_j| - x_j^2
    EXPECT_NEAR(sum[j] / draws, x[j], 5 * std::sqrt(var / draws) + 1e-15) << "j = " << j;
    // (C_j - x_j)^2 is (s - a)^2 w.p. p and a^2 w.p. 1 - p.
    const double e4 = p * std::pow(s - a, 4) + (1 - p) * std::pow(a, 4);
    EXPECT_NEAR(sq[j] / draws, var, 5 * std::sqrt((e4 - var * var) / draws) + 1e-15) << "j = " << j;
  }
}

TEST(TernGrad, ScaleIsRoundedUpToFloat32AndDrawsUseIt) {
  // 0.1 is not a float: the scale is the smallest float above it, so |x_j| / s < 1 holds on the
  // wire, and b_j is drawn with that float scale: b_j = 1 iff r_j < (|x_j| / s) 2^32.
  Eigen::VectorXd x(2);
  x << 0.1, -0.05;
  auto c = MakeTernGrad<double>(2);
  Message m;
  Eigen::VectorXd y(2);
  for (std::uint64_t k = 1; k <= 200; ++k) {
    PhiloxStream stream = Stream(k);
    c->Encode(x, stream, m);
    c->Decode(m, y);
    const float s = ScaleOf(m);
    ASSERT_GT(static_cast<double>(s), 0.1);
    ASSERT_LT(static_cast<double>(std::nextafter(s, 0.0f)), 0.1);
    PhiloxStream replay = Stream(k);
    const double r0 = replay(), r1 = replay();
    EXPECT_EQ(y[0], r0 < (0.1 / s) * 0x1p32 ? s : 0.0);
    EXPECT_EQ(y[1], r1 < (0.05 / s) * 0x1p32 ? -s : 0.0);
  }
}

TEST(TernGrad, ExactMessageSizes) {
  for (const Eigen::Index d : {1, 2, 3, 4, 5, 8, 9, 31, 32, 33, 100, 4097}) {
    auto c = MakeTernGrad<float>(d);
    Message m;
    PhiloxStream stream = Stream();
    const Eigen::VectorXf x = WithZeros(d, 3).cast<float>();
    c->Encode(x, stream, m);
    EXPECT_EQ(m.bits(), 32 + 8 * ((2 * d + 7) / 8)) << "d = " << d;
    EXPECT_EQ(static_cast<std::int64_t>(stream.position()), d);
  }
}

}  // namespace
}  // namespace lemmalab
