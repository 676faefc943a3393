// Rate fits (theory/rate_fit.h): exact recovery of planted power laws, recovery under fixed-seed
// multiplicative noise, Student-t quantiles against tables, the across-seed interval's coverage
// of a planted exponent, and a negative control that must exclude the wrong exponent.
#include "theory/rate_fit.h"

#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"

namespace lemmalab {
namespace {

// y = a x^-p + c at log-spaced integer x from 1 to x_max, each value times (1 + noise * N(0,1))
// drawn from a Philox stream keyed by `seed`.
Curve Planted(double a, double p, double c, double noise, std::uint64_t seed, int points = 30,
              std::int64_t x_max = 100000) {
  PhiloxStream stream({.seed = seed, .purpose = Purpose::kDataSynthesis});
  boost::random::normal_distribution<double> normal;
  Curve curve;
  for (std::int64_t t : LogSpacedGrid(1, x_max, points)) {
    const double x = static_cast<double>(t);
    curve.x.push_back(x);
    curve.y.push_back((a * std::pow(x, -p) + c) * (1 + noise * normal(stream)));
  }
  return curve;
}

// Tabulated two-sided critical values (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.2).
TEST(StudentTQuantile, MatchesTables) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.706, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 2), 4.303, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 4), 2.776, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 9), 2.262, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 10), 1.812, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.995, 30), 2.750, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.5, 7), 0.0, 1e-12);
  EXPECT_NEAR(StudentTQuantile(0.025, 4), -2.776, 1e-3);
  EXPECT_THROW(StudentTQuantile(1.0, 4), UserError);
  EXPECT_THROW(StudentTQuantile(0.9, 0), UserError);
}

TEST(FitPowerLaw, RecoversAnExactCurveWithOffset) {
  const Curve curve = Planted(3, 0.5, 0.01, 0, 1);
  const PowerLawFit fit = FitPowerLaw(curve.x, curve.y);
  EXPECT_TRUE(fit.converged) << fit.message;
  EXPECT_NEAR(fit.a, 3, 1e-6);
  EXPECT_NEAR(fit.p, 0.5, 1e-7);
  EXPECT_NEAR(fit.c, 0.01, 1e-8);
  EXPECT_LT(fit.residual_rms, 1e-8);
}

TEST(FitPowerLaw, RecoversAnExactCurveWithoutOffset) {
  const Curve curve = Planted(2, 1.0, 0, 0, 1);
  PowerLawFitOptions options;
  options.fit_offset = false;
  const PowerLawFit fit = FitPowerLaw(curve.x, curve.y, options);
  EXPECT_TRUE(fit.converged) << fit.message;
  EXPECT_NEAR(fit.a, 2, 1e-7);
  EXPECT_NEAR(fit.p, 1.0, 1e-8);
  EXPECT_EQ(fit.c, 0);
}

// The absolute weighting recovers exact data too; it is the relative one that matters under noise.
TEST(FitPowerLaw, AbsoluteWeightingOnExactData) {
  const Curve curve = Planted(5, 0.75, 0.2, 0, 1);
  PowerLawFitOptions options;
  options.weighting = FitWeighting::kAbsolute;
  const PowerLawFit fit = FitPowerLaw(curve.x, curve.y, options);
  EXPECT_NEAR(fit.p, 0.75, 1e-6);
  EXPECT_NEAR(fit.c, 0.2, 1e-6);
}

// 5% multiplicative noise over five decades: the exponent within 0.05, c positive and small.
TEST(FitPowerLaw, RecoversUnderMultiplicativeNoise) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Curve curve = Planted(3, 0.5, 1e-3, 0.05, seed);
    const PowerLawFit fit = FitPowerLaw(curve.x, curve.y);
    EXPECT_TRUE(fit.converged) << fit.message;
    EXPECT_NEAR(fit.p, 0.5, 0.05) << "seed " << seed;
    EXPECT_NEAR(fit.a, 3, 0.3) << "seed " << seed;
    EXPECT_GE(fit.c, 0);
  }
}

// A curve that is flat (p = 0) fits with p at its bound, the level split between a and c.
TEST(FitPowerLaw, FlatCurveGivesZeroExponent) {
  const Curve curve = Planted(1, 0, 0, 0, 1);
  PowerLawFitOptions options;
  options.fit_offset = false;
  const PowerLawFit fit = FitPowerLaw(curve.x, curve.y, options);
  EXPECT_NEAR(fit.p, 0, 1e-8);
  EXPECT_NEAR(fit.a, 1, 1e-8);
}

TEST(FitPowerLaw, RejectsBadInput) {
  const std::vector<double> x = {1, 2, 3, 4}, y = {1, 0.5, 0.3, 0.25};
  EXPECT_THROW(FitPowerLaw(x, std::vector<double>{1, 0.5, 0.3}), UserError);
  EXPECT_THROW(FitPowerLaw(x, std::vector<double>{1, 0.5, 0, 0.25}), UserError);
  EXPECT_THROW(FitPowerLaw(std::vector<double>{0, 2, 3, 4}, y), UserError);
  EXPECT_THROW(FitPowerLaw(std::vector<double>{1, 2}, std::vector<double>{1, 0.5}), UserError);
  PowerLawFitOptions options;
  options.fit_offset = false;
  EXPECT_NO_THROW(FitPowerLaw(std::vector<double>{1, 2}, std::vector<double>{1, 0.5}, options));
}

std::vector<Curve> Seeds(double p, double noise, std::uint64_t first_seed, int count) {
  std::vector<Curve> curves;
  for (int s = 0; s < count; ++s) {
    curves.push_back(Planted(2, p, 1e-3, noise, first_seed + static_cast<std::uint64_t>(s)));
  }
  return curves;
}

TEST(FitAcrossSeeds, IntervalCoversThePlantedExponent) {
  const ExponentEstimate estimate = FitAcrossSeeds(Seeds(0.5, 0.05, 100, 8));
  ASSERT_TRUE(estimate.interval_available) << estimate.message;
  EXPECT_EQ(estimate.seeds, 8);
  EXPECT_EQ(estimate.converged_seeds, 8);
  EXPECT_LE(estimate.lower, 0.5);
  EXPECT_GE(estimate.upper, 0.5);
  EXPECT_LT(estimate.upper - estimate.lower, 0.1);
  // The interval is mean +- t_{0.975, 7} s / sqrt(8).
  EXPECT_NEAR(estimate.upper - estimate.mean,
              StudentTQuantile(0.975, 7) * estimate.std_dev / std::sqrt(8.0), 1e-12);
}

// Coverage over 60 independent 5-seed experiments at the 90% level: the count of intervals that
// contain p = 0.5 is Binomial(60, 0.9) if the interval is right (mean 54, sd 2.3); 46 or more
// passes, and an interval half as wide as it should be (coverage about 60%) fails.
TEST(FitAcrossSeeds, NominalCoverageInAPlantedNoiseSetup) {
  AcrossSeedsOptions options;
  options.confidence = 0.9;
  int covered = 0;
  const int experiments = 60;
  for (int e = 0; e < experiments; ++e) {
    const ExponentEstimate estimate =
        FitAcrossSeeds(Seeds(0.5, 0.1, 1000 + 5 * static_cast<std::uint64_t>(e), 5), options);
    ASSERT_TRUE(estimate.interval_available) << estimate.message;
    if (estimate.lower <= 0.5 && 0.5 <= estimate.upper) ++covered;
  }
  EXPECT_GE(covered, 46);
}

// Negative control: a curve with p = 0.25 must not be mistaken for the 1/sqrt(T) rate.
TEST(FitAcrossSeeds, QuarterRateExcludesOneHalf) {
  const ExponentEstimate estimate = FitAcrossSeeds(Seeds(0.25, 0.05, 200, 6));
  ASSERT_TRUE(estimate.interval_available) << estimate.message;
  EXPECT_LE(estimate.lower, 0.25);
  EXPECT_GE(estimate.upper, 0.25);
  EXPECT_LT(estimate.upper, 0.5);
}

TEST(FitAcrossSeeds, OneSeedHasNoInterval) {
  const ExponentEstimate estimate = FitAcrossSeeds(Seeds(0.5, 0.05, 300, 1));
  EXPECT_FALSE(estimate.interval_available);
  EXPECT_EQ(estimate.converged_seeds, 1);
  EXPECT_NEAR(estimate.mean, 0.5, 0.05);
  EXPECT_TRUE(std::isnan(estimate.lower));
  EXPECT_TRUE(std::isnan(estimate.upper));
  EXPECT_NE(estimate.message.find("inconclusive"), std::string::npos) << estimate.message;
}

// y = 4/n + 0.05 over n = 1..64 with 3% noise: q near 1 and the interval excludes 1/2.
TEST(FitSpeedup, RecoversLinearSpeedup) {
  const std::vector<double> n = {1, 2, 4, 8, 16, 32, 64};
  std::vector<std::vector<double>> y;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    PhiloxStream stream({.seed = seed, .purpose = Purpose::kDataSynthesis, .worker = 7});
    boost::random::normal_distribution<double> normal;
    std::vector<double> series;
    for (double workers : n) series.push_back((4 / workers + 0.05) * (1 + 0.03 * normal(stream)));
    y.push_back(series);
  }
  const ExponentEstimate estimate = FitSpeedup(n, y);
  ASSERT_TRUE(estimate.interval_available) << estimate.message;
  EXPECT_LE(estimate.lower, 1.0);
  EXPECT_GE(estimate.upper, 1.0);
  EXPECT_GT(estimate.lower, 0.5);
  EXPECT_THROW(FitSpeedup(n, std::vector<std::vector<double>>{{1, 2}}), UserError);
}

TEST(RunningAverage, HandComputed) {
  const std::vector<double> series = {4, 2, 0, 6};
  // 4/1, 6/2, 6/3, 12/4
  EXPECT_EQ(RunningAverage(series), (std::vector<double>{4, 3, 2, 3}));
  EXPECT_TRUE(RunningAverage(std::vector<double>{}).empty());
}

TEST(LogSpacedGrid, EndpointsIncreasingAndRoughlyGeometric) {
  const std::vector<std::int64_t> grid = LogSpacedGrid(1, 100000, 11);
  EXPECT_EQ(grid,
            (std::vector<std::int64_t>{1, 3, 10, 32, 100, 316, 1000, 3162, 10000, 31623, 100000}));
  // Crowded small ranges become consecutive integers and never repeat.
  EXPECT_EQ(LogSpacedGrid(1, 5, 20), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  const std::vector<std::int64_t> crowded = LogSpacedGrid(1, 50, 20);
  EXPECT_EQ(crowded.front(), 1);
  EXPECT_EQ(crowded.back(), 50);
  for (std::size_t k = 1; k < crowded.size(); ++k) EXPECT_LT(crowded[k - 1], crowded[k]);
  EXPECT_EQ(LogSpacedGrid(7, 7, 5), (std::vector<std::int64_t>{7}));
  EXPECT_THROW(LogSpacedGrid(0, 5, 3), UserError);
}

// Per-step ||grad f(x_t)||^2 = t^-1/2: the running average is 2 T^-1/2 + zeta(1/2)/T + O(T^-3/2)
// (zeta(1/2) = -1.46), so from T = 100 on the fitted exponent is within 0.02 of 1/2.
TEST(RunningAverageCurve, FitsTheRateOfAPerStepSeries) {
  std::vector<double> per_step(200000);
  for (std::size_t t = 1; t <= per_step.size(); ++t) {
    per_step[t - 1] = 1 / std::sqrt(static_cast<double>(t));
  }
  const Curve curve = RunningAverageCurve(per_step, 25, 100);
  ASSERT_EQ(curve.x.size(), 25u);
  EXPECT_EQ(curve.x.front(), 100);
  EXPECT_EQ(curve.x.back(), 200000);
  EXPECT_DOUBLE_EQ(curve.y.front(), RunningAverage(per_step)[99]);
  const PowerLawFit fit = FitPowerLaw(curve.x, curve.y);
  EXPECT_NEAR(fit.p, 0.5, 0.02);
  EXPECT_THROW(RunningAverageCurve(std::vector<double>{1, 2}, 5, 3), UserError);
}

}  // namespace
}  // namespace lemmalab
