// The theorems' right-hand sides (theory/bounds.h) against values computed by hand from the
// printed formulas, and their limits: rho -> 0 and q -> 1 make the bounds grow and then vacuous,
// the Birder bound's T-dependence, the step-size conditions.
#include "theory/bounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/options.h"
#include "optimizers/birder.h"

namespace lemmalab {
namespace {

// Relative comparison for hand-computed values (written to 12+ digits).
void ExpectRelNear(double actual, double expected, double tolerance = 1e-12) {
  EXPECT_NEAR(actual, expected, tolerance * std::abs(expected)) << "expected " << expected;
}

BirderConstants BirderExample() {
  BirderConstants k;
  k.c = 0.1;
  k.grad_bound = 2;
  k.lipschitz = 3;
  k.d = 10;
  k.rho = 0.5;
  k.beta = 0.9;
  k.f_z1_gap = 5;
  return k;
}

// birder.txt Eq. 41-42 at c = 0.1, G = 2, L = 3, d = 10, rho = 0.5, beta = 0.9, gap = 5:
//   C1 bracket: 5 + 3(0.01)(10)(3)/16 = 0.05625, + 0.9(0.1)(10)(4)/(0.1 * 0.5) = 72,
//     + 4(0.1)(10)(4)/0.5 = 32, + 0.01(0.81)(3)(4)(10)/(0.25 * 0.01) = 388.8; sum 497.85625,
//     C1 = c G * 497.85625 = 0.2 * 497.85625 = 99.57125.
//   C2 bracket: (8(0.81) + 9 + 5)(9)(10)/0.01 = 20.48 * 90 / 0.01 = 184320, + 4(4)/(2 * 0.25) =
//     32, + 2(10)(3) = 60; sum 184412, C2 = c^3 G * 184412 = 0.002 * 184412 = 368.824.
//   At T = 100: 99.57125/10 + 368.824 (1 + ln 100)/10 = 9.957125 + 36.8824 * 5.605170186
//     = 216.68925386768734.
TEST(BirderTheorem1, HandComputedConstantsAndBound) {
  const BirderTheorem1Result r = BirderTheorem1(BirderExample(), 100);
  ASSERT_EQ(r.c1_parts.size(), 5u);
  ASSERT_EQ(r.c2_parts.size(), 3u);
  ExpectRelNear(r.c1_parts[0].value, 5);
  ExpectRelNear(r.c1_parts[1].value, 0.05625);
  ExpectRelNear(r.c1_parts[2].value, 72);
  ExpectRelNear(r.c1_parts[3].value, 32);
  ExpectRelNear(r.c1_parts[4].value, 388.8);
  ExpectRelNear(r.c2_parts[0].value, 184320);
  ExpectRelNear(r.c2_parts[1].value, 32);
  ExpectRelNear(r.c2_parts[2].value, 60);
  ExpectRelNear(r.c1, 99.57125);
  ExpectRelNear(r.c2, 368.824);
  ExpectRelNear(r.bound, 216.68925386768734);
}

// The re-derived constants (bounds.cc): K' = 184320 + 4(1 + 6)/(2 * 0.25) + 60 = 184436,
//   C1' = (G/c) 497.85625 + c G K' = 20 * 497.85625 + 0.2 * 184436 = 9957.125 + 36887.2
//       = 46844.325, C2' = c G K' = 36887.2,
//   bound' at T = 100: 4684.4325 + 3688.72 * 5.605170186 = 25360.335868458005.
TEST(BirderTheorem1, RederivedConstants) {
  const BirderTheorem1Result r = BirderTheorem1(BirderExample(), 100);
  ExpectRelNear(r.c1_rederived, 46844.325);
  ExpectRelNear(r.c2_rederived, 36887.2);
  ExpectRelNear(r.bound_rederived, 25360.335868458005);
}

TEST(BirderTheorem1, GrowsAsRhoShrinksAndIsVacuousAtZero) {
  BirderConstants k = BirderExample();
  double previous = 0;
  for (double rho : {1.0, 0.1, 1e-2, 1e-4}) {
    k.rho = rho;
    const double bound = BirderTheorem1(k, 1000).bound;
    EXPECT_GT(bound, previous) << "rho = " << rho;
    EXPECT_TRUE(std::isfinite(bound));
    previous = bound;
  }
  k.rho = 0;
  const BirderTheorem1Result r = BirderTheorem1(k, 1000);
  EXPECT_EQ(r.bound, kVacuousBound);
  EXPECT_EQ(r.bound_rederived, kVacuousBound);
  EXPECT_EQ(r.c1, kVacuousBound);
}

// beta = 1 is no Birder run: the bound refuses it by the optimizer's own rule, as the premise
// does, instead of answering for a run that cannot exist.
TEST(BirderTheorem1, RefusesTheBetaTheOptimizerRefuses) {
  BirderConstants k = BirderExample();
  k.beta = 1;
  try {
    BirderTheorem1(k, 10);
    ADD_FAILURE() << "beta = 1 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("beta must be in [0, 1), got 1"), std::string::npos)
        << e.what();
  }
  k.beta = 0.999;
  EXPECT_TRUE(std::isfinite(BirderTheorem1(k, 10).bound));
  OptionTable birder("optimizer 'birder'", "spec.toml:3");
  birder.Set("beta", {1.0, "spec.toml:4"});
  EXPECT_THROW(ReadBirderOptions(birder, /*read_t0=*/true), UserError);
}

// bound sqrt(T) / (1 + ln T) = C2 + C1 / (1 + ln T): decreases to C2, the gap exactly C1/(1+ln T).
TEST(BirderTheorem1, ScaledBoundTendsToC2) {
  const BirderConstants k = BirderExample();
  double previous = kVacuousBound;
  for (double T : {1.0, 1e2, 1e4, 1e8, 1e16, 1e100}) {
    const BirderTheorem1Result r = BirderTheorem1(k, T);
    const double scaled = r.bound * std::sqrt(T) / (1 + std::log(T));
    EXPECT_LT(scaled, previous) << "T = " << T;
    EXPECT_NEAR(scaled - r.c2, r.c1 / (1 + std::log(T)), 1e-9 * r.c2) << "T = " << T;
    previous = scaled;
  }
  const BirderTheorem1Result far = BirderTheorem1(k, 1e300);
  EXPECT_NEAR(far.bound * std::sqrt(1e300) / (1 + std::log(1e300)), far.c2, 0.01 * far.c2);
  // At T = 1 the log term is 1: bound = C1 + C2.
  const BirderTheorem1Result one = BirderTheorem1(k, 1);
  ExpectRelNear(one.bound, one.c1 + one.c2);
}

// The printed constants carry c G where the proof's last step gives G / c (bounds.cc), so the
// printed bound shrinks like c^3 as c -> 0 at fixed bracket, the re-derived one does not.
TEST(BirderTheorem1, PrintedAndRederivedDifferByAboutCSquared) {
  BirderConstants k = BirderExample();
  k.f_z1_gap = 1;
  k.lipschitz = 0;  // K' = K when L = 0, and the (2 + ln T) shift is all that remains
  const BirderTheorem1Result r = BirderTheorem1(k, 100);
  ExpectRelNear(r.c2_rederived, r.c2 / (k.c * k.c));
  ExpectRelNear(r.c1_rederived, (r.c1 + r.c2) / (k.c * k.c));
}

TEST(BirderTheorem1, RejectsImpossibleConstants) {
  BirderConstants k = BirderExample();
  k.beta = 1.2;
  EXPECT_THROW(BirderTheorem1(k, 10), UserError);
  k = BirderExample();
  k.c = 0;
  EXPECT_THROW(BirderTheorem1(k, 10), UserError);
  k = BirderExample();
  k.grad_bound = -1;
  EXPECT_THROW(BirderTheorem1(k, 10), UserError);
  EXPECT_THROW(BirderTheorem1(BirderExample(), 0.5), UserError);
}

SpamsConstants SpamsExample() {
  SpamsConstants k;
  k.q = 0.5;
  k.grad_bound = 1;
  k.lipschitz = 1;
  k.eps = 1;
  k.beta1 = 0.5;
  k.eta = 0.01;
  k.n = 4;
  k.d = 10;
  k.sigma = 1;
  k.sigma_g = 0.5;
  k.f_gap = 2;
  return k;
}

// spams.txt Theorem 1 at q = 0.5, G = L = eps = sigma = 1, beta1 = 0.5, eta = 0.01, n = 4,
// d = 10, sigma_g = 0.5, f gap 2, T = 1000:
//   v_hat bound 4 (1.25)^3 / 0.75^2 = 13.888..., C0 = sqrt(14.888...) = 3.858612300930075,
//   C1 = 1 + 1/0.75 = 2.333..., C2 = 1 + (4/3)^2 = 2.777...,
//   eta_max = 1 / (3 C0 sqrt(2 * 2.777...)) = 0.03665083330689157 >= 0.01: admissible.
//   parts: 2/(1000 * 0.01) = 0.2; 0.01/4 = 0.0025; 3e-4 C0 (7/3) = 0.002701028610651052;
//   12e-4 (0.25)(0.25) C0 / 0.5625 = 0.00051448164012401; (10/3) 10 / 1000 = 0.0333...;
//   0.01 (1 + 14/3)(7/3)(10)/1000 = 0.001322222...; bound = 2 C0 * sum = 1.85499750261596.
//   With C2 in the sigma^2 term (the proof's penultimate line): 1.8589678729863304.
TEST(SpamsTheorem1, HandComputedBound) {
  const SpamsTheorem1Result r = SpamsTheorem1(SpamsExample(), 1000);
  ExpectRelNear(r.c0, 3.858612300930075);
  ExpectRelNear(r.c1, 7.0 / 3.0);
  ExpectRelNear(r.c2, 25.0 / 9.0);
  ExpectRelNear(r.eta_max, 0.03665083330689157);
  EXPECT_TRUE(r.step_size_admissible);
  ASSERT_EQ(r.parts.size(), 6u);
  ExpectRelNear(r.parts[0].value, 0.2);
  ExpectRelNear(r.parts[1].value, 0.0025);
  ExpectRelNear(r.parts[2].value, 0.002701028610651052);
  ExpectRelNear(r.parts[3].value, 0.00051448164012401);
  ExpectRelNear(r.parts[4].value, 1.0 / 30.0);
  ExpectRelNear(r.parts[5].value, 0.001322222222222222);
  ExpectRelNear(r.bound, 1.85499750261596);
  ExpectRelNear(r.bound_proof, 1.8589678729863304);
}

TEST(SpamsTheorem1, StepSizeAboveTheLimitIsVacuous) {
  SpamsConstants k = SpamsExample();
  k.eta = 0.04;  // > eta_max = 0.0366...
  const SpamsTheorem1Result r = SpamsTheorem1(k, 1000);
  EXPECT_FALSE(r.step_size_admissible);
  EXPECT_EQ(r.bound, kVacuousBound);
  EXPECT_EQ(r.bound_proof, kVacuousBound);
  EXPECT_EQ(r.parts.size(), 6u);  // the parts are still there for a report
}

// q -> 1: C0 and C1 blow up; to stay admissible the step shrinks with eta_max.
TEST(SpamsTheorem1, GrowsAsQApproachesOneAndIsVacuousThere) {
  SpamsConstants k = SpamsExample();
  k.eta = 1e-6;
  double previous = 0;
  for (double q : {0.0, 0.5, 0.9, 0.99}) {
    k.q = q;
    const SpamsTheorem1Result r = SpamsTheorem1(k, 1e6);
    ASSERT_TRUE(r.step_size_admissible) << "q = " << q;
    EXPECT_GT(r.bound, previous) << "q = " << q;
    previous = r.bound;
  }
  k.q = 1;
  EXPECT_EQ(SpamsTheorem1(k, 1e6).bound, kVacuousBound);
  k.q = 1.5;  // a measured q above 1: the theorem says nothing, no error
  EXPECT_EQ(SpamsTheorem1(k, 1e6).bound, kVacuousBound);
}

// With beta1 = 0 and 2q/(1-q^2) = 1 (q = sqrt(2) - 1), C1 = C2 = 1: the statement and the proof
// agree. With beta1 = 0.9 C2 = 81 + b^2 > C1 = 9 + b: the statement is below what the proof gives.
TEST(SpamsTheorem1, StatementAndProofAgreeExactlyWhenC1EqualsC2) {
  SpamsConstants k = SpamsExample();
  k.beta1 = 0;
  k.q = std::sqrt(2.0) - 1;
  k.eta = 1e-3;
  const SpamsTheorem1Result equal = SpamsTheorem1(k, 100);
  EXPECT_NEAR(equal.c1, 1, 1e-12);
  EXPECT_NEAR(equal.c2, 1, 1e-12);
  EXPECT_NEAR(equal.bound, equal.bound_proof, 1e-12 * equal.bound);
  k.beta1 = 0.9;
  k.eta = 1e-4;
  const SpamsTheorem1Result apart = SpamsTheorem1(k, 100);
  ASSERT_TRUE(apart.step_size_admissible);
  EXPECT_GT(apart.c2, apart.c1);
  EXPECT_GT(apart.bound_proof, apart.bound);
}

// Corollary 1: eta = L sqrt(n/T) = 1 * sqrt(4/1e6) = 0.002 at T = 1e6; the f-gap term is then
// f_gap / (T eta) = 2 / 2000 = 0.001 = f_gap / (L sqrt(nT)).
TEST(SpamsCorollary1, StepSizeAndRate) {
  const SpamsCorollary1Result r = SpamsCorollary1(SpamsExample(), 1e6);
  ExpectRelNear(r.eta, 0.002);
  ASSERT_TRUE(r.theorem.step_size_admissible);
  ExpectRelNear(r.theorem.parts[0].value, 0.001);
  EXPECT_EQ(r.rate.t_exponent, 0);  // beta1 = 0.5 > 0: "+ cst." in the printed rate
  SpamsConstants k = SpamsExample();
  k.beta1 = 0;
  const SpamsCorollary1Result zero = SpamsCorollary1(k, 1e6);
  EXPECT_EQ(zero.rate.t_exponent, 0.5);
  EXPECT_EQ(zero.rate.n_exponent, 0.5);
  // Below T = n L^2 / eta_max^2 the corollary's step is above the theorem's limit.
  EXPECT_FALSE(SpamsCorollary1(SpamsExample(), 100).theorem.step_size_admissible);
}

// Lemma 2 at q = 0.5, G = 2: 4 (0.25)(4) / 0.5625 = 7.111...; Lemma 4: 4 (1.25)^3 (4) / 0.5625 =
// 55.555...; q = 0: 0 and 4 G^2 = 16 (no compression: v_hat <= 4 G^2 from the lemma's 2(1+q^2)
// slack). Lemma 5 at d = 10, eps = 0.01: 10 / 0.1 = 100 and 10 / 0.01 = 1000.
TEST(SpamsLemmas, HandComputedValues) {
  ExpectRelNear(SpamsLemma2ErrorBound(0.5, 2), 64.0 / 9.0);
  ExpectRelNear(SpamsLemma4VHatBound(0.5, 2), 500.0 / 9.0);
  EXPECT_EQ(SpamsLemma2ErrorBound(0, 2), 0);
  ExpectRelNear(SpamsLemma4VHatBound(0, 2), 16);
  EXPECT_EQ(SpamsLemma2ErrorBound(1, 2), kVacuousBound);
  EXPECT_EQ(SpamsLemma4VHatBound(1, 2), kVacuousBound);
  const SpamsLemma5Bounds lemma5 = SpamsLemma5(10, 0.01);
  ExpectRelNear(lemma5.l1_sum, 100);
  ExpectRelNear(lemma5.squared_sum, 1000);
  EXPECT_EQ(SpamsLemma5(10, 0).l1_sum, kVacuousBound);
}

// Corollary 2 (n = 1, eta = L / sqrt(T)) on SpamsExample at T = 1e6: eta = 0.001 (n = 4 and
// sigma_g = 0.5 of the example are ignored), eta_max = 0.03665083330689157 as above;
//   parts: 2/(1e6 * 1e-3) = 0.002; 1e-3 (1)(1)/(1 * 1) = 0.001; 3e-6 C0 (7/3) =
//   2.7010286106510526e-5; 0 (sigma_g = 0); (10/3)(10)/1e6 = 3.3333333333333333e-5;
//   1e-3 (17/3)(7/3)(10)/1e6 = 1.3222222222222222e-7; bound 2 C0 * sum = 0.023618379458673146,
//   with C2 = 25/9 in the sigma^2 term 0.02365808316237685.
// Admissible from T = L^2 / eta_max^2 = 9 C0^2 (2)(25/9) = 744.44...: not at 744, at 745.
TEST(SpamsCorollary2, HandComputedBoundAndThreshold) {
  const SpamsCorollary2Result r = SpamsCorollary2(SpamsExample(), 1e6);
  ExpectRelNear(r.eta, 0.001);
  ASSERT_TRUE(r.theorem.step_size_admissible);
  ASSERT_EQ(r.theorem.parts.size(), 6u);
  ExpectRelNear(r.theorem.parts[0].value, 0.002);
  ExpectRelNear(r.theorem.parts[1].value, 0.001);
  ExpectRelNear(r.theorem.parts[2].value, 2.7010286106510526e-5);
  EXPECT_EQ(r.theorem.parts[3].value, 0);
  ExpectRelNear(r.theorem.parts[4].value, 3.3333333333333333e-5);
  ExpectRelNear(r.theorem.parts[5].value, 1.3222222222222222e-7);
  ExpectRelNear(r.theorem.bound, 0.023618379458673146);
  ExpectRelNear(r.theorem.bound_proof, 0.02365808316237685);
  EXPECT_FALSE(SpamsCorollary2(SpamsExample(), 744).theorem.step_size_admissible);
  EXPECT_EQ(SpamsCorollary2(SpamsExample(), 744).theorem.bound, kVacuousBound);
  EXPECT_TRUE(SpamsCorollary2(SpamsExample(), 745).theorem.step_size_admissible);
  EXPECT_TRUE(std::isfinite(SpamsCorollary2(SpamsExample(), 745).theorem.bound));
}

TEST(SpamsCorollary2, PrintedRate) {
  const SpamsCorollary2Result r = SpamsCorollary2(SpamsExample(), 1e6);
  ASSERT_EQ(r.rate.terms.size(), 3u);
  EXPECT_EQ(r.rate.terms[0].t_exponent, 0.5);
  EXPECT_EQ(r.rate.terms[1].t_exponent, 1.5);
  EXPECT_EQ(r.rate.terms[2].t_exponent, 1);
  EXPECT_EQ(r.rate.t_exponent, 0.5);
  EXPECT_EQ(r.rate.n_exponent, 0);
  // The same step as Corollary 1 at n = 1, and the same Theorem 1 there with sigma_g = 0.
  SpamsConstants one = SpamsExample();
  one.n = 1;
  one.sigma_g = 0;
  const SpamsCorollary1Result c1 = SpamsCorollary1(one, 1e6);
  EXPECT_EQ(c1.eta, r.eta);
  EXPECT_EQ(c1.theorem.bound, r.theorem.bound);
  EXPECT_THROW(SpamsCorollary2(SpamsExample(), 0.5), UserError);
}

// Lemma 1: T sigma^2 + sum = 10 (0.25) + 3 = 5.5. Per step with beta1 = 0.5, sigma = 1 and
// E||grad f||^2 = 4, 0, 2: the averages are 2, 1, 1.5, so the bounds are 3, 2, 2.5; they sum to
// 7.5, below the summed bound 3 (1) + 6 = 9 (the sum drops the 1 - beta1^(T-tau+1) factors).
TEST(SpamsLemma1, HandComputedValues) {
  ExpectRelNear(SpamsLemma1MomentumBound(0.5, 10, 3), 5.5);
  const std::vector<double> per_step = SpamsLemma1PerStepBounds(0.5, 1, {4, 0, 2});
  ASSERT_EQ(per_step.size(), 3u);
  ExpectRelNear(per_step[0], 3);
  ExpectRelNear(per_step[1], 2);
  ExpectRelNear(per_step[2], 2.5);
  EXPECT_LT(per_step[0] + per_step[1] + per_step[2], SpamsLemma1MomentumBound(1, 3, 6));
  EXPECT_TRUE(SpamsLemma1PerStepBounds(0.5, 1, {}).empty());
}

// beta1 = 0: m'_t = g_bar_t, the per-step bounds are sigma^2 + a_t and sum to the printed bound
// exactly; beta1 = 1: m'_t = 0 and only sigma^2 remains.
TEST(SpamsLemma1, PerStepLimitsAndSum) {
  const std::vector<double> grad_sq = {4, 0, 2, 7};
  const std::vector<double> zero = SpamsLemma1PerStepBounds(0, 0.5, grad_sq);
  double sum = 0;
  for (size_t t = 0; t < grad_sq.size(); ++t) {
    ExpectRelNear(zero[t], 0.25 + grad_sq[t]);
    sum += zero[t];
  }
  ExpectRelNear(sum, SpamsLemma1MomentumBound(0.5, 4, 13));
  for (double bound : SpamsLemma1PerStepBounds(1, 0.5, grad_sq)) ExpectRelNear(bound, 0.25);
  EXPECT_THROW(SpamsLemma1PerStepBounds(1.5, 1, grad_sq), UserError);
  EXPECT_THROW(SpamsLemma1PerStepBounds(0.5, 1, {1, -1}), UserError);
  EXPECT_THROW(SpamsLemma1MomentumBound(1, 0.5, 1), UserError);
  EXPECT_THROW(SpamsLemma1MomentumBound(1, 10, -1), UserError);
}

// Lemma 3 at q = 0.5, sigma = 1, sigma_g = 0.5, T = 100, sum 20: 4 (0.25)/0.5625 = 16/9 times
// 100 (1.25) + 20 = 145, i.e. 2320/9 = 257.77777777777778. No compression (q = 0): no error.
TEST(SpamsLemma3, HandComputedValuesAndLimits) {
  ExpectRelNear(SpamsLemma3ErrorAverageBound(0.5, 1, 0.5, 100, 20), 2320.0 / 9.0);
  EXPECT_EQ(SpamsLemma3ErrorAverageBound(0, 1, 0.5, 100, 20), 0);
  double previous = 0;
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999999}) {
    const double bound = SpamsLemma3ErrorAverageBound(q, 1, 0.5, 100, 20);
    EXPECT_GT(bound, previous) << "q = " << q;
    EXPECT_TRUE(std::isfinite(bound));
    previous = bound;
  }
  EXPECT_EQ(SpamsLemma3ErrorAverageBound(1, 1, 0.5, 100, 20), kVacuousBound);
  EXPECT_EQ(SpamsLemma3ErrorAverageBound(1.5, 1, 0.5, 100, 20), kVacuousBound);
  // Its constant is Lemma 2's 4q^2/(1-q^2)^2 (per unit G^2).
  ExpectRelNear(SpamsLemma3ErrorAverageBound(0.5, 0, 0, 1, 1), SpamsLemma2ErrorBound(0.5, 1));
  EXPECT_THROW(SpamsLemma3ErrorAverageBound(-0.1, 1, 0.5, 100, 20), UserError);
  EXPECT_THROW(SpamsLemma3ErrorAverageBound(0.5, 1, 0.5, 0, 20), UserError);
  EXPECT_THROW(SpamsLemma3ErrorAverageBound(0.5, 1, 0.5, 100, -1), UserError);
}

OneBitAdamConstants OneBitAdamExample() {
  OneBitAdamConstants k;
  k.lipschitz = 2;
  k.sigma = 1;
  k.eps = 0.5;
  k.beta = 0.9;
  k.n = 4;
  k.denominator_min = 0.5;
  k.denominator_max = 2;
  k.f_gap = 3;
  k.gamma = 1e-3;
  return k;
}

// onebit-adam Eq. 6 at L = 2, sigma = 1, eps = 0.5, beta = 0.9, n = 4, v_min = 0.5, gap 3,
// gamma = 1e-3, T = 1000:
//   coefficient 1 - 1e-3 (2)/0.5 - 2e-6 (4)/(0.01 * 0.25) = 1 - 0.004 - 0.0032 = 0.9928;
//   parts 2(3)/1e-3 = 6000; 6e-6 (4)(0.25)(1000)/(0.01 * 0.125) = 4.8; 2e-3 (1000)/(4 * 0.5) = 1;
//   2e-6 (4)(1000)/(4 * 0.01 * 0.25) = 0.8; rhs 6006.6, sum bound 6006.6/0.9928 =
//   6050.161160354553, mean over the T + 1 terms 6.0441170433112426, Euclidean (x 2)
//   12.088234086622485.
TEST(OneBitAdamTheorem1, HandComputedBound) {
  const OneBitAdamTheorem1Result r = OneBitAdamTheorem1(OneBitAdamExample(), 1000);
  ExpectRelNear(r.coefficient, 0.9928);
  ASSERT_EQ(r.parts.size(), 4u);
  ExpectRelNear(r.parts[0].value, 6000);
  ExpectRelNear(r.parts[1].value, 4.8);
  ExpectRelNear(r.parts[2].value, 1);
  ExpectRelNear(r.parts[3].value, 0.8);
  ExpectRelNear(r.rhs, 6006.6);
  ExpectRelNear(r.sum_bound, 6050.161160354553);
  ExpectRelNear(r.mean_bound, 6.0441170433112426);
  ExpectRelNear(r.euclidean_mean_bound, 12.088234086622485);
  OneBitAdamConstants k = OneBitAdamExample();
  k.denominator_max = 0;
  EXPECT_TRUE(std::isnan(OneBitAdamTheorem1(k, 1000).euclidean_mean_bound));
}

// The proof's slips corrected (bounds.cc), same example: the coefficient is unchanged (0.9928);
//   2e-6 (4)(0.25)(1000)/(0.01 * 0.125) = 1.6 and 4e-6 (4)(0.25)(1000)/(1e-4 * 0.125) = 320
//     replace the printed 4.8 (2/(1-beta)^2 + 4/(1-beta)^4 for 6/(1-beta)^2);
//   2e-3 (1000)/(4 * 0.25) = 2 and 2e-6 (4)(1000)/(4 * 0.01 * 0.125) = 1.6 replace 1 and 0.8
//     (h's noise is V_max sigma^2 = 2 sigma^2);
//   rhs 6325.2, sum 6325.2/0.9928 = 6371.071716357776, mean 6.3647070093484276, Euclidean
//   12.729414018696855.
TEST(OneBitAdamTheorem1, RederivedBound) {
  const OneBitAdamTheorem1Result r = OneBitAdamTheorem1(OneBitAdamExample(), 1000);
  ASSERT_EQ(r.parts_rederived.size(), 5u);
  ExpectRelNear(r.parts_rederived[0].value, 6000);
  ExpectRelNear(r.parts_rederived[1].value, 1.6);
  ExpectRelNear(r.parts_rederived[2].value, 320);
  ExpectRelNear(r.parts_rederived[3].value, 2);
  ExpectRelNear(r.parts_rederived[4].value, 1.6);
  ExpectRelNear(r.rhs_rederived, 6325.2);
  ExpectRelNear(r.sum_bound_rederived, 6371.071716357776);
  ExpectRelNear(r.mean_bound_rederived, 6.3647070093484276);
  ExpectRelNear(r.euclidean_mean_bound_rederived, 12.729414018696855);
  OneBitAdamConstants k = OneBitAdamExample();
  k.denominator_max = 0;
  EXPECT_TRUE(std::isnan(OneBitAdamTheorem1(k, 1000).euclidean_mean_bound_rederived));
}

// Each correction has factor 1 at one point: (1-beta)^4 = (1-beta)^2 at beta = 0, and V_max = 1
// at v_min = 1. There the re-derived terms equal the printed ones exactly.
TEST(OneBitAdamTheorem1, RederivedMatchesPrintedWhereTheFactorsAreOne) {
  OneBitAdamConstants k = OneBitAdamExample();
  k.beta = 0;  // eps terms: 2 + 4 = 6; sigma terms still differ (v_min = 0.5)
  OneBitAdamTheorem1Result r = OneBitAdamTheorem1(k, 1000);
  ExpectRelNear(r.parts_rederived[1].value + r.parts_rederived[2].value, r.parts[1].value);
  ExpectRelNear(r.parts_rederived[3].value, 2 * r.parts[2].value);
  k = OneBitAdamExample();
  k.denominator_min = 1;  // sigma terms equal; eps terms still differ (beta = 0.9)
  r = OneBitAdamTheorem1(k, 1000);
  ExpectRelNear(r.parts_rederived[3].value, r.parts[2].value);
  ExpectRelNear(r.parts_rederived[4].value, r.parts[3].value);
  EXPECT_GT(r.parts_rederived[1].value + r.parts_rederived[2].value, 10 * r.parts[1].value);
  k.beta = 0;  // both: everything agrees
  r = OneBitAdamTheorem1(k, 1000);
  ExpectRelNear(r.rhs_rederived, r.rhs);
  ExpectRelNear(r.sum_bound_rederived, r.sum_bound);
  ExpectRelNear(r.mean_bound_rederived, r.mean_bound);
  ExpectRelNear(r.euclidean_mean_bound_rederived, r.euclidean_mean_bound);
}

TEST(OneBitAdamTheorem1, VacuousWhenTheCoefficientIsNotPositive) {
  OneBitAdamConstants k = OneBitAdamExample();
  k.gamma = 0.1;  // 1 - 0.4 - 2(0.01)(4)/(0.01 * 0.25) = 1 - 0.4 - 32 < 0
  const OneBitAdamTheorem1Result r = OneBitAdamTheorem1(k, 1000);
  EXPECT_LT(r.coefficient, 0);
  EXPECT_EQ(r.sum_bound, kVacuousBound);
  EXPECT_EQ(r.mean_bound, kVacuousBound);
  EXPECT_EQ(r.sum_bound_rederived, kVacuousBound);
  EXPECT_EQ(r.mean_bound_rederived, kVacuousBound);
  k = OneBitAdamExample();
  k.denominator_min = 0;
  EXPECT_EQ(OneBitAdamTheorem1(k, 1000).sum_bound, kVacuousBound);
  EXPECT_EQ(OneBitAdamTheorem1(k, 1000).sum_bound_rederived, kVacuousBound);
}

// gamma_proof = 0.1 / (4(2)/0.5 + sqrt(1000/4) + 0.5^(2/3) 1000^(1/3)) = 0.1 / (16 + 15.8113883
// + 6.2996052) = 0.0026239147994915005; gamma_statement = 1 / (16 + 15.8113883 + 12.5992105) =
// 0.022517147415826208.
TEST(OneBitAdamCorollary1, StepSizes) {
  const OneBitAdamCorollary1Result r = OneBitAdamCorollary1(OneBitAdamExample(), 1000);
  ExpectRelNear(r.gamma_proof, 0.0026239147994915005);
  ExpectRelNear(r.gamma_statement, 0.022517147415826208);
  EXPECT_EQ(r.rate.t_exponent, 0.5);
  EXPECT_EQ(r.rate.n_exponent, 0.5);
  ASSERT_EQ(r.rate.terms.size(), 3u);
  EXPECT_NEAR(r.rate.terms[1].t_exponent, 2.0 / 3.0, 1e-15);
}

// The proof's step size keeps the coefficient >= 1/2 for every beta; the statement's, which
// lacks the factor 1 - beta, does not (beta = 0.9, small noise: gamma ~ v_min / (4L) and the
// second term is 2/(16 * 0.01) = 12.5).
TEST(OneBitAdamCorollary1, ProofStepSizeKeepsTheCoefficientAboveOneHalf) {
  OneBitAdamConstants k = OneBitAdamExample();
  k.sigma = 0;
  k.eps = 0;
  for (double beta : {0.0, 0.5, 0.9, 0.99}) {
    k.beta = beta;
    for (double T : {1.0, 1e3, 1e6}) {
      const OneBitAdamCorollary1Result r = OneBitAdamCorollary1(k, T);
      EXPECT_GE(r.theorem.coefficient, 0.5) << "beta = " << beta << ", T = " << T;
    }
  }
  k.beta = 0.9;
  const OneBitAdamCorollary1Result r = OneBitAdamCorollary1(k, 1000);
  k.gamma = r.gamma_statement;
  EXPECT_LT(OneBitAdamTheorem1(k, 1000).coefficient, 0);
}

TEST(OneBitAdamTheorem1, RejectsImpossibleConstants) {
  OneBitAdamConstants k = OneBitAdamExample();
  k.n = 0;
  EXPECT_THROW(OneBitAdamTheorem1(k, 10), UserError);
  k = OneBitAdamExample();
  k.denominator_max = 0.1;  // below denominator_min
  EXPECT_THROW(OneBitAdamTheorem1(k, 10), UserError);
}

OneBitLambConstants OneBitLambExample() {
  OneBitLambConstants k;
  k.lipschitz = 2;
  k.sigma = 1;
  k.eps = 0.5;
  k.beta = 0.9;
  k.n = 4;
  k.denominator_min = 0.5;  // V_max = 2
  k.denominator_max = 2;
  k.f_gap = 3;
  k.gamma = 1e-3;
  k.c_min = 0.5;  // gamma_min = 5e-4
  k.c_max = 2;    // gamma_max = 2e-3
  return k;
}

// onebit-lamb Eq. 3 at L = 2, sigma = 1, eps = 0.5, beta = 0.9, n = 4, V_max = 2, gap 3,
// gamma_max = 2e-3, gamma_min = 5e-4, T = 1000 (gamma_max^3 L^2 / gamma_min = 6.4e-8):
//   coefficient 1 - 2e-3 (2)(2) - 8 (6.4e-8)/0.01 = 1 - 0.008 - 0.0512 = 0.9408;
//   parts 2 (3)/5e-4 = 12000; 24 (6.4e-8)(8)(0.25)(1000)/0.01 = 307.2;
//   2 (2)(4e-6)(1000)/(4 * 5e-4) = 8; 8 (6.4e-8)(4)(1000)/(4 * 0.01) = 51.2; rhs 12366.4,
//   sum 12366.4/0.9408 = 13144.557823129252, mean 13.131426396732519, Euclidean (x 2)
//   26.262852793465038.
TEST(OneBitLambTheorem1, HandComputedBound) {
  const OneBitLambTheorem1Result r = OneBitLambTheorem1(OneBitLambExample(), 1000);
  ExpectRelNear(r.v_max, 2);
  ExpectRelNear(r.gamma_max, 2e-3);
  ExpectRelNear(r.gamma_min, 5e-4);
  EXPECT_FALSE(r.proof_covers_step_range);  // c_min < c_max
  ExpectRelNear(r.coefficient, 0.9408);
  ASSERT_EQ(r.parts.size(), 4u);
  ExpectRelNear(r.parts[0].value, 12000);
  ExpectRelNear(r.parts[1].value, 307.2);
  ExpectRelNear(r.parts[2].value, 8);
  ExpectRelNear(r.parts[3].value, 51.2);
  ExpectRelNear(r.rhs, 12366.4);
  ExpectRelNear(r.sum_bound, 13144.557823129252);
  ExpectRelNear(r.mean_bound, 13.131426396732519);
  ExpectRelNear(r.euclidean_mean_bound, 26.262852793465038);
  OneBitLambConstants k = OneBitLambExample();
  k.denominator_max = 0;
  EXPECT_TRUE(std::isnan(OneBitLambTheorem1(k, 1000).euclidean_mean_bound));
  k.c_min = k.c_max = 1;
  EXPECT_TRUE(OneBitLambTheorem1(k, 1000).proof_covers_step_range);
}

// The re-derived form, same example: coefficient 1 - 0.008 - 0.0512 (4) = 0.7872 (V_max^2);
//   parts 12000; 8 (6.4e-8)(8)(0.25)(1000)/0.01 = 102.4 and 16 (...)/1e-4 = 20480 (for 307.2);
//   2 (4)(4e-6)(1000)/(4 * 5e-4) = 16 and 8 (6.4e-8)(8)(1000)/(4 * 0.01) = 102.4 (V_max sigma^2);
//   rhs 32700.8, sum 32700.8/0.7872 = 41540.650406504065, mean 41.499151255248816, Euclidean
//   82.998302510497632.
TEST(OneBitLambTheorem1, RederivedBound) {
  const OneBitLambTheorem1Result r = OneBitLambTheorem1(OneBitLambExample(), 1000);
  ExpectRelNear(r.coefficient_rederived, 0.7872);
  ASSERT_EQ(r.parts_rederived.size(), 5u);
  ExpectRelNear(r.parts_rederived[0].value, 12000);
  ExpectRelNear(r.parts_rederived[1].value, 102.4);
  ExpectRelNear(r.parts_rederived[2].value, 20480);
  ExpectRelNear(r.parts_rederived[3].value, 16);
  ExpectRelNear(r.parts_rederived[4].value, 102.4);
  ExpectRelNear(r.rhs_rederived, 32700.8);
  ExpectRelNear(r.sum_bound_rederived, 41540.650406504065);
  ExpectRelNear(r.mean_bound_rederived, 41.499151255248816);
  ExpectRelNear(r.euclidean_mean_bound_rederived, 82.998302510497632);
}

// beta = 0 makes (1-beta)^4 = (1-beta)^2; V_max = 1 makes the V_max factors of the sigma^2 terms
// and of the coefficient 1. With both, printed and re-derived agree exactly.
TEST(OneBitLambTheorem1, RederivedMatchesPrintedWhereTheFactorsAreOne) {
  OneBitLambConstants k = OneBitLambExample();
  k.beta = 0;
  OneBitLambTheorem1Result r = OneBitLambTheorem1(k, 1000);
  ExpectRelNear(r.parts_rederived[1].value + r.parts_rederived[2].value, r.parts[1].value);
  ExpectRelNear(r.parts_rederived[3].value, 2 * r.parts[2].value);  // V_max = 2
  k = OneBitLambExample();
  k.denominator_min = 1;
  r = OneBitLambTheorem1(k, 1000);
  ExpectRelNear(r.coefficient_rederived, r.coefficient);
  ExpectRelNear(r.parts_rederived[3].value, r.parts[2].value);
  ExpectRelNear(r.parts_rederived[4].value, r.parts[3].value);
  k.beta = 0;
  r = OneBitLambTheorem1(k, 1000);
  ExpectRelNear(r.coefficient_rederived, r.coefficient);
  ExpectRelNear(r.rhs_rederived, r.rhs);
  ExpectRelNear(r.sum_bound_rederived, r.sum_bound);
  ExpectRelNear(r.euclidean_mean_bound_rederived, r.euclidean_mean_bound);
}

TEST(OneBitLambTheorem1, VacuousCases) {
  OneBitLambConstants k = OneBitLambExample();
  k.gamma = 0.05;  // 1 - 0.4 - 8 (1e-3)(4)/(0.01 * 0.025) = 1 - 0.4 - 128 < 0
  OneBitLambTheorem1Result r = OneBitLambTheorem1(k, 1000);
  EXPECT_LT(r.coefficient, 0);
  EXPECT_EQ(r.sum_bound, kVacuousBound);
  EXPECT_EQ(r.mean_bound, kVacuousBound);
  EXPECT_EQ(r.euclidean_mean_bound, kVacuousBound);
  EXPECT_EQ(r.sum_bound_rederived, kVacuousBound);
  // The printed coefficient positive, the corrected one not: only the re-derived bound is
  // vacuous. gamma = 4e-3, c = 1, V_max = 10: printed 1 - 0.08 - 8 (1.6e-5)(4)/0.01 = 0.8688,
  // re-derived 1 - 0.08 - 0.0512 (100) = -4.2.
  k = OneBitLambExample();
  k.gamma = 4e-3;
  k.c_min = k.c_max = 1;
  k.denominator_min = 0.1;
  r = OneBitLambTheorem1(k, 1000);
  ExpectRelNear(r.coefficient, 0.8688);
  ExpectRelNear(r.coefficient_rederived, -4.2);
  EXPECT_TRUE(std::isfinite(r.sum_bound));
  EXPECT_EQ(r.sum_bound_rederived, kVacuousBound);
  // V_max infinite, beta = 1, gamma_min = 0 < gamma_max.
  using Mutation = void (*)(OneBitLambConstants&);
  const Mutation mutations[] = {[](OneBitLambConstants& c) { c.denominator_min = 0; },
                                [](OneBitLambConstants& c) { c.beta = 1; },
                                [](OneBitLambConstants& c) { c.c_min = 0; }};
  for (const Mutation mutate : mutations) {
    k = OneBitLambExample();
    mutate(k);
    r = OneBitLambTheorem1(k, 1000);
    EXPECT_EQ(r.sum_bound, kVacuousBound);
    EXPECT_EQ(r.sum_bound_rederived, kVacuousBound);
  }
}

TEST(OneBitLambTheorem1, RejectsImpossibleConstants) {
  OneBitLambConstants k = OneBitLambExample();
  k.c_max = 0.25;  // below c_min
  EXPECT_THROW(OneBitLambTheorem1(k, 10), UserError);
  k = OneBitLambExample();
  k.denominator_max = 0.1;
  EXPECT_THROW(OneBitLambTheorem1(k, 10), UserError);
  k = OneBitLambExample();
  k.beta = -0.1;
  EXPECT_THROW(OneBitLambTheorem1(k, 10), UserError);
  k = OneBitLambExample();
  k.n = 0.5;
  EXPECT_THROW(OneBitLambTheorem1(k, 10), UserError);
  EXPECT_THROW(OneBitLambTheorem1(OneBitLambExample(), 0), UserError);
}

// gamma = 0.1 / (16 (2)(2) + sqrt(1000/4) + 1000^(1/3) 0.5^(2/3)) = 0.1 / (64 + 15.8113883 +
// 6.2996052) = 0.0011612919080020617, used as gamma_max = gamma_min.
TEST(OneBitLambCorollary1, StepSizeAndRate) {
  const OneBitLambCorollary1Result r = OneBitLambCorollary1(OneBitLambExample(), 1000);
  ExpectRelNear(r.gamma, 0.0011612919080020617);
  ExpectRelNear(r.theorem.gamma_max, r.gamma);
  ExpectRelNear(r.theorem.gamma_min, r.gamma);
  EXPECT_TRUE(r.theorem.proof_covers_step_range);
  ASSERT_EQ(r.rate.terms.size(), 3u);
  EXPECT_NEAR(r.rate.terms[1].t_exponent, 2.0 / 3.0, 1e-15);
  EXPECT_EQ(r.rate.t_exponent, 0.5);
  EXPECT_EQ(r.rate.n_exponent, 0.5);
}

// Line 605 claims the coefficient is >= 1/2 at this step. That holds for the re-derived one for
// every beta and V_max (gamma L V_max <= 1/16, the last term <= 1/32). The printed one lacks
// V_max^2: with sigma = eps = 0, beta = 0.9, V_max = 0.1 the step is 0.1/3.2 = 0.03125 and it is
// 1 - 0.00625 - 8 (0.03125^2)(4)/0.01 = 1 - 0.00625 - 3.125 = -2.13125.
TEST(OneBitLambCorollary1, CoefficientAboveOneHalfOnlyWhenRederived) {
  OneBitLambConstants k = OneBitLambExample();
  k.sigma = 0;
  k.eps = 0;
  for (double beta : {0.0, 0.5, 0.9, 0.99}) {
    for (double denominator : {0.1, 1.0, 10.0}) {
      k.beta = beta;
      k.denominator_min = denominator;
      k.denominator_max = denominator;
      const OneBitLambCorollary1Result r = OneBitLambCorollary1(k, 1000);
      EXPECT_GE(r.theorem.coefficient_rederived, 0.5)
          << "beta = " << beta << ", denominator = " << denominator;
    }
  }
  k.beta = 0.9;
  k.denominator_min = k.denominator_max = 10;
  const OneBitLambCorollary1Result r = OneBitLambCorollary1(k, 1000);
  ExpectRelNear(r.gamma, 0.03125);
  ExpectRelNear(r.theorem.coefficient, -2.13125);
  EXPECT_EQ(r.theorem.sum_bound, kVacuousBound);
  EXPECT_TRUE(std::isfinite(r.theorem.sum_bound_rederived));
}

}  // namespace
}  // namespace lemmalab
