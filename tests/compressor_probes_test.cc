// The compressor probes against compressors whose answer is known: unbiased ones pass, biased
// ones (deterministic sign, a planted quantizer that leans by 0.05) are caught, Birder's
// quantizer has variance 1 - u^2, and a compressor that breaks its declared q is flagged.
#include "theory/compressor_probes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compressors/identity.h"
#include "compressors/qsgd.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "compressors/top_k.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

Eigen::VectorXd UniformInput(std::int64_t d, std::uint64_t seed, double range = 1.0) {
  PhiloxStream stream({seed, Purpose::kDataSynthesis, 0, 0});
  Eigen::VectorXd u(d);
  for (auto& x : u) x = range * (2.0 * stream() / 4294967296.0 - 1.0);
  return u;
}

using testing::LeaningBinary;

UnbiasednessSample Sample(Compressor<double>& c, const Eigen::VectorXd& u, std::uint64_t seed) {
  PhiloxStream stream({seed, Purpose::kProbe, 0, 1});
  return SampleUnbiasedness(c, u, kUnbiasednessDraws, stream);
}

TEST(Unbiasedness, UnbiasedCompressorsGiveStandardStatistics) {
  // Over many inputs the split-sample z of an unbiased compressor has mean ~0 and variance
  // ~nu/(nu-2); Birder's quantizer's variance ratio has mean 1.
  const auto binary = MakeStochasticBinary<double>(QuantizerDomain::kClip, 200);
  const auto qsgd = MakeQsgd<double>(4, QsgdNorm::kTwo, 200);
  double z_binary = 0, z_qsgd = 0, ratio = 0;
  const int inputs = 200;
  for (int k = 0; k < inputs; ++k) {
    const Eigen::VectorXd u = UniformInput(200, 100 + k);
    const UnbiasednessSample b = Sample(*binary, u, k);
    z_binary += b.z;
    ratio += b.variance_sum / b.variance_expected;
    z_qsgd += Sample(*qsgd, u, k).z;
  }
  // Stouffer's Z over 200 inputs: |Z| < 3 for an unbiased compressor (99.7%).
  const double scale = std::sqrt(inputs * 31.0 / 29.0);
  EXPECT_LT(std::abs(z_binary / scale), 3.0);
  EXPECT_LT(std::abs(z_qsgd / scale), 3.0);
  // Lemma 1 Eq. 18: the mean ratio is 1 within 1% (its standard error is ~0.2% here).
  EXPECT_NEAR(ratio / inputs, 1.0, 0.01);
}

TEST(Unbiasedness, IdentityIsExactlyUnbiased) {
  const auto identity = MakeIdentity<double>();
  const UnbiasednessSample s = Sample(*identity, UniformInput(50, 1), 1);
  EXPECT_EQ(s.z, 0.0);
  EXPECT_EQ(s.bias, 0.0);
}

// Every draw of sign(u) is the same vector, far from u: the chance that an unbiased two-level
// quantizer repeats one level 32 times with a projection that large is below 1e-100, so z is the
// normal quantile of that chance, large and finite (a non-finite z would read as non-finite
// evidence).
TEST(Unbiasedness, DeterministicSignIsFlaggedAsBiased) {
  const auto sign = MakeSign<double>(50);
  const UnbiasednessSample s = Sample(*sign, UniformInput(50, 2), 2);
  EXPECT_TRUE(std::isfinite(s.z));
  EXPECT_GT(s.z, 20);
  EXPECT_GT(s.bias, 0.3);
}

TEST(Unbiasedness, PlantedLeaningQuantizerIsFlagged) {
  // Bias 0.1 per coordinate on 200 coordinates: the first half's sign guesses the lean on ~70%
  // of them, so a call's z is ~3.6 on average and Stouffer's Z over 10 calls ~11, far beyond the
  // one-sided 99% quantile 2.33 that CheckUnbiased uses.
  LeaningBinary leaning(200);
  double sum = 0;
  for (int k = 0; k < 10; ++k) sum += Sample(leaning, UniformInput(200, 300 + k, 0.8), k).z;
  EXPECT_GT(sum / std::sqrt(10 * 31.0 / 29.0), 8.0);
}

TEST(Unbiasedness, ClippingOutsideTheIntervalIsBiasedOnlyThere) {
  // Inputs in [-1.5, 1.5]: Q clips, so the draws' mean is biased on |u| > 1 (z large), while
  // the coordinates inside stay unbiased (z_inside small).
  const auto binary = MakeStochasticBinary<double>(QuantizerDomain::kClip, 400);
  const UnbiasednessSample s = Sample(*binary, UniformInput(400, 5, 1.5), 5);
  EXPECT_GT(s.z, 5.0);
  EXPECT_LT(std::abs(s.z_inside), 4.0);
}

TEST(Unbiasedness, NearDegenerateInputsAreNotMistakenForDeterminism) {
  // u_j = +-(1 - 1e-9): every draw gives sign(u), the draws' mean moves u by 1e-9. That is what
  // an unbiased quantizer does at such inputs, not evidence of bias.
  const auto binary = MakeStochasticBinary<double>(QuantizerDomain::kClip, 64);
  Eigen::VectorXd u =
      UniformInput(64, 9).unaryExpr([](double x) { return x >= 0 ? 1 - 1e-9 : -(1 - 1e-9); });
  EXPECT_EQ(Sample(*binary, u, 9).z, 0.0);
}

// A compressor that returns u except on coordinate 0, which it moves by 1e-9 every time (as a
// quantizer does at the edge of its interval), and on coordinate 1, which it rounds up by one unit
// in the last place on every other draw (as float32 scales round). The spread of the projections
// is then at rounding level: the statistic once divided the 1e-9 offset by it and reported
// |z| ~ 1e7 (the audit saw QSGD at 1.1e16 on `coordinates = "inside"`), where the edge rule says
// "no evidence".
class RoundingJitter final : public Compressor<double> {
 public:
  std::string_view name() const override { return "rounding-jitter"; }
  CompressorClaims claims() const override { return {.unbiased = true}; }
  EncodeStats Encode(ConstVectorRef<double> x, PhiloxStream& stream, Message& out) override {
    Eigen::VectorXd c = x;
    c[0] += 1e-9;
    if (stream() % 2 == 0) c[1] = std::nextafter(c[1], 2.0);
    out.bytes.resize(static_cast<std::size_t>(c.size()) * sizeof(double));
    std::memcpy(out.bytes.data(), c.data(), out.bytes.size());
    return {};
  }
  void Decode(const Message& in, VectorRef<double> out) const override {
    std::memcpy(out.data(), in.bytes.data(), in.bytes.size());
  }
  void DecodeAdd(const Message& in, double w, VectorRef<double> acc) const override {
    Eigen::VectorXd c(acc.size());
    Decode(in, c);
    acc += w * c;
  }
};

TEST(Unbiasedness, RoundingLevelSpreadIsNotEvidence) {
  RoundingJitter jitter;
  const UnbiasednessSample s = Sample(jitter, UniformInput(64, 21, 0.9), 21);
  EXPECT_EQ(s.z, 0.0);
  EXPECT_EQ(s.z_inside, 0.0);
  // The squared-bias estimate sees the 1e-9 offset for what it is: negligible.
  EXPECT_LT(s.sq_bias, 1e-15);
}

// The relative squared bias per call is unbiased: ~0 for Birder's quantizer (its noise removed),
// ~0.1^2 for the planted quantizer that leans by 0.1 on every coordinate of a u in [-0.8, 0.8].
TEST(Unbiasedness, SquaredBiasEstimatesTheBias) {
  const auto binary = MakeStochasticBinary<double>(QuantizerDomain::kClip, 200);
  LeaningBinary leaning(200);
  double fair = 0, leaning_sum = 0, norm_sq = 0;
  for (int k = 0; k < 50; ++k) {
    const Eigen::VectorXd u = UniformInput(200, 400 + k, 0.8);
    fair += Sample(*binary, u, k).sq_bias;
    leaning_sum += Sample(leaning, u, k).sq_bias * u.squaredNorm();
    norm_sq += u.squaredNorm();
  }
  EXPECT_LT(std::abs(fair / 50), 2e-3);
  // sum_j (0.1)^2 over 200 coordinates = 2 in absolute terms, per call.
  EXPECT_NEAR(leaning_sum / 50, 2.0, 0.3);
  (void)norm_sq;
}

}  // namespace
}  // namespace lemmalab
