// fp16 and bf16 (compressors/half_precision.h): known conversions (1/3, 65504, the overflow at
// 65520 saturated and counted, subnormals, -0, NaN and infinity), the double path's rounding
// through float32, the relative error bound on random vectors, declared q, exact sizes.
#include "compressors/half_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tests/compressor_examples.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of fp16, bf16 (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        {"Fp16", R"(name = "fp16")",
         [](const CompressorShape& s, int) { return 16 * s.dimension; }},
        {"Bf16", R"(name = "bf16")",
         [](const CompressorShape& s, int) { return 16 * s.dimension; }},
    },
    {
        {"Fp16", R"(name = "fp16")", SplitsAlways},
        {"Bf16", R"(name = "bf16")", SplitsAlways},
    });

struct Expected {
  double input;
  std::uint16_t bits;  // the 16-bit pattern on the wire
  bool out_of_domain;
};

std::uint16_t BitsAt(const Message& m, std::size_t j) {
  std::uint16_t bits;
  std::memcpy(&bits, m.bytes.data() + 2 * j, sizeof(bits));
  return bits;
}

// Encodes the inputs as one vector in precision T and checks each element's bits, the decoded
// value (`decoded`, or the input itself when NaN is given) and the out-of-domain count.
template <typename T>
void Check(HalfFormat format, const std::vector<Expected>& cases,
           const std::vector<double>& decoded) {
  const auto d = static_cast<std::int64_t>(cases.size());
  Vector<T> x(d);
  std::int64_t outside = 0;
  for (std::int64_t j = 0; j < d; ++j) {
    x[j] = static_cast<T>(cases[j].input);
    outside += cases[j].out_of_domain;
  }
  auto c = MakeHalfPrecision<T>(format, d);
  Message m;
  PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 1});
  const EncodeStats stats = c->Encode(x, stream, m);
  EXPECT_EQ(stream.position(), 0u) << "a deterministic cast draws nothing";
  EXPECT_EQ(stats.elements, d);
  EXPECT_EQ(stats.out_of_domain, outside);
  EXPECT_EQ(stats.non_finite, 0);
  ASSERT_EQ(m.bits(), 16 * d);
  Vector<T> y(d);
  c->Decode(m, y);
  for (std::int64_t j = 0; j < d; ++j) {
    SCOPED_TRACE(::testing::Message() << "input " << cases[j].input);
    EXPECT_EQ(BitsAt(m, static_cast<std::size_t>(j)), cases[j].bits) << std::hex << BitsAt(m, j);
    EXPECT_EQ(static_cast<double>(y[j]), decoded[j]);
    EXPECT_EQ(std::signbit(y[j]), std::signbit(decoded[j]));
  }
}

TEST(Fp16, KnownConversions) {
  const std::vector<Expected> cases = {
      {1.0, 0x3C00, false},
      {1.0 / 3, 0x3555, false},  // 0.333251953125, nearest of 11 bits
      {-2.5, 0xC100, false},
      {65504, 0x7BFF, false},                    // the largest finite half
      {65519, 0x7BFF, false},                    // below the midpoint: rounds down
      {65520, 0x7BFF, true},                     // the midpoint rounds to even = infinity
      {-1e6, 0xFBFF, true},                      // saturated, counted
      {std::ldexp(1.0, -14), 0x0400, false},     // the smallest normal
      {std::ldexp(1.0, -24), 0x0001, true},      // the smallest subnormal
      {3 * std::ldexp(1.0, -26), 0x0001, true},  // 0.75 of it rounds up
      {std::ldexp(1.0, -25), 0x0000, true},      // half of it: tie to even = 0
      {-0.0, 0x8000, false},
      {0.0, 0x0000, false},
  };
  const std::vector<double> decoded = {1.0,
                                       0.333251953125,
                                       -2.5,
                                       65504,
                                       65504,
                                       65504,
                                       -65504,
                                       std::ldexp(1.0, -14),
                                       std::ldexp(1.0, -24),
                                       std::ldexp(1.0, -24),
                                       0.0,
                                       -0.0,
                                       0.0};
  Check<float>(HalfFormat::kFp16, cases, decoded);
  Check<double>(HalfFormat::kFp16, cases, decoded);
}

TEST(Bf16, KnownConversions) {
  const double bf16_max = std::ldexp(255.0, 120);  // (2 - 2^-7) 2^127
  const std::vector<Expected> cases = {
      {1.0, 0x3F80, false},
      {1.0 / 3, 0x3EAB, false},  // float 0x3EAAAAAB rounds up to 0.333984375
      {65504, 0x4780, false},    // 8 significant bits: 65536
      {65520, 0x4780, false},
      {bf16_max, 0x7F7F, false},
      {std::numeric_limits<float>::max(), 0x7F7F, true},  // would round to infinity: saturated
      {std::ldexp(1.0, -126), 0x0080, false},             // the smallest normal
      {-std::ldexp(1.0, -130), 0x8008, true},             // a subnormal, kept exactly
      {-0.0, 0x8000, false},
  };
  const std::vector<double> decoded = {1.0,
                                       0.333984375,
                                       65536,
                                       65536,
                                       bf16_max,
                                       bf16_max,
                                       std::ldexp(1.0, -126),
                                       -std::ldexp(1.0, -130),
                                       -0.0};
  Check<float>(HalfFormat::kBf16, cases, decoded);
  Check<double>(HalfFormat::kBf16, cases, decoded);
}

TEST(Bf16, DoubleInputBeyondFloat32AndRoundedThroughIt) {
  // Beyond float32's range: saturated and counted; below it: 0, counted.
  // 1 + 2^-8 + 2^-30 rounds directly to 1 + 2^-7 (0x3F81), but through float32 it first becomes
  // 1 + 2^-8, a tie, which goes to even: 1.0 (0x3F80). Eigen casts through float; the error,
  // just above 2^-8 of 1.0, stays below 2^-8 + 2^-23 of |x| (the declared q for double).
  const double tie_after_float = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  Check<double>(HalfFormat::kBf16,
                {{1e39, 0x7F7F, true},
                 {-1e300, 0xFF7F, true},
                 {1e-50, 0x0000, true},
                 {tie_after_float, 0x3F80, false}},
                {std::ldexp(255.0, 120), -std::ldexp(255.0, 120), 0.0, 1.0});
  EXPECT_LT(std::abs(1.0 - tie_after_float),
            (std::ldexp(1.0, -8) + std::ldexp(1.0, -23)) * tie_after_float);
}

TEST(HalfPrecision, NonFiniteInputIsCountedAndSentAsIs) {
  for (const HalfFormat format : {HalfFormat::kFp16, HalfFormat::kBf16}) {
    auto c = MakeHalfPrecision<float>(format, 3);
    Eigen::VectorXf x(3);
    x << std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), 2;
    Message m;
    PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 1});
    const EncodeStats stats = c->Encode(x, stream, m);
    EXPECT_EQ(stats.non_finite, 2);
    EXPECT_EQ(stats.out_of_domain, 0);
    Eigen::VectorXf y(3);
    c->Decode(m, y);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(y[2], 2.0f);
  }
}

// Gaussian values spread over many magnitudes, all inside fp16's normal range.
Eigen::VectorXd Spread(Eigen::Index d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  Eigen::VectorXd x(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    x[j] = std::clamp(normal(s) * std::exp(2 * normal(s)), -6e4, 6e4);
    if (std::abs(x[j]) < 1e-4) x[j] = 1e-4;
  }
  return x;
}

template <typename T>
void RelativeErrorWithinUnitRoundoff(HalfFormat format, double u, double scale) {
  const Eigen::Index d = 5000;
  const Vector<T> x = (Spread(d, 17) * scale).cast<T>();
  auto c = MakeHalfPrecision<T>(format, d);
  Message m;
  PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 1});
  EXPECT_EQ(c->Encode(x, stream, m).out_of_domain, 0);
  Vector<T> y(d);
  c->Decode(m, y);
  double worst = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double err = std::abs(static_cast<double>(y[j]) - static_cast<double>(x[j]));
    ASSERT_LE(err, u * std::abs(static_cast<double>(x[j]))) << "x = " << x[j];
    worst = std::max(worst, err / std::abs(static_cast<double>(x[j])));
  }
  EXPECT_GT(worst, 0.9 * u) << "the bound is attained nearly: it is the right one";
  const double norm_err = (y - x).template cast<double>().norm();
  if (const std::optional<double> q = c->q()) {
    EXPECT_LE(norm_err, *q * x.template cast<double>().norm());
  }
}

TEST(HalfPrecision, RelativeErrorWithinUnitRoundoff) {
  // fp16: u = 2^-11 inside its normal range.
  RelativeErrorWithinUnitRoundoff<float>(HalfFormat::kFp16, std::ldexp(1.0, -11), 1.0);
  // bf16: u = 2^-8 at any float scale (here tiny ones too); double input adds 2^-23 at most.
  for (const double scale : {1.0, 1e-20, 1e20}) {
    RelativeErrorWithinUnitRoundoff<float>(HalfFormat::kBf16, std::ldexp(1.0, -8), scale);
    RelativeErrorWithinUnitRoundoff<double>(HalfFormat::kBf16,
                                            std::ldexp(1.0, -8) + std::ldexp(1.0, -23), scale);
  }
}

TEST(HalfPrecision, DeclaredPropertiesAndSizes) {
  for (const std::int64_t d : {1, 2, 7, 33, 1000}) {
    auto fp16 = MakeHalfPrecision<float>(HalfFormat::kFp16, d);
    auto bf16 = MakeHalfPrecision<float>(HalfFormat::kBf16, d);
    auto bf16_64 = MakeHalfPrecision<double>(HalfFormat::kBf16, d);
    EXPECT_EQ(fp16->name(), "fp16");
    EXPECT_EQ(bf16->name(), "bf16");
    EXPECT_FALSE(fp16->unbiased());
    EXPECT_FALSE(bf16->unbiased());
    EXPECT_FALSE(fp16->q().has_value());
    EXPECT_EQ(bf16->q().value_or(-1), std::ldexp(1.0, -8));
    EXPECT_EQ(bf16_64->q().value_or(-1), std::ldexp(1.0, -8) + std::ldexp(1.0, -23));
    Message m;
    PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 1});
    fp16->Encode(Eigen::VectorXf::Ones(d), stream, m);
    EXPECT_EQ(m.bits(), 16 * d);
    EXPECT_EQ(m.bytes[0], 0x00);  // little-endian 0x3C00
    EXPECT_EQ(m.bytes[1], 0x3C);
    bf16->Encode(Eigen::VectorXf::Ones(d), stream, m);
    EXPECT_EQ(m.bits(), 16 * d);
  }
  // Why fp16 declares no q: gradients of 1e-6 and below are fp16 subnormals (or 0), far from
  // 2^-11 relative accuracy.
  const Eigen::Index d = 1000;
  const Eigen::VectorXf x = (Spread(d, 3) * 1e-9).cast<float>();
  auto fp16 = MakeHalfPrecision<float>(HalfFormat::kFp16, d);
  Message m;
  PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 1});
  EXPECT_EQ(fp16->Encode(x, stream, m).out_of_domain, d);
  Eigen::VectorXf y(d);
  fp16->Decode(m, y);
  EXPECT_GT((y - x).norm(), 0.01 * x.norm());
}

}  // namespace
}  // namespace lemmalab
