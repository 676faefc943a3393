// The theorems' right-hand sides (theory/bounds.h) against values computed by hand from the
// printed formulas, and their limits: rho -> 0 and q -> 1 make the bounds grow and then vacuous,
// the Birder bound's T-dependence, the step-size conditions.
#include "theory/bounds.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

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

TEST(BirderTheorem1, BetaOneIsVacuous) {
  BirderConstants k = BirderExample();
  k.beta = 1;
  EXPECT_EQ(BirderTheorem1(k, 10).bound, kVacuousBound);
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

TEST(OneBitAdamTheorem1, VacuousWhenTheCoefficientIsNotPositive) {
  OneBitAdamConstants k = OneBitAdamExample();
  k.gamma = 0.1;  // 1 - 0.4 - 2(0.01)(4)/(0.01 * 0.25) = 1 - 0.4 - 32 < 0
  const OneBitAdamTheorem1Result r = OneBitAdamTheorem1(k, 1000);
  EXPECT_LT(r.coefficient, 0);
  EXPECT_EQ(r.sum_bound, kVacuousBound);
  EXPECT_EQ(r.mean_bound, kVacuousBound);
  k = OneBitAdamExample();
  k.denominator_min = 0;
  EXPECT_EQ(OneBitAdamTheorem1(k, 1000).sum_bound, kVacuousBound);
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

}  // namespace
}  // namespace lemmalab
