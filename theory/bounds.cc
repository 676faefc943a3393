#include "theory/bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "optimizers/optimizer.h"

namespace lemmalab {
namespace {

// Fails with a message that names the constant, its value and the rule it broke.
void Require(bool ok, std::string_view theorem, std::string_view name, double value,
             std::string_view rule) {
  if (!ok) {
    throw UserError(fmt::format("{}: {} must be {}, got {}", theorem, name, rule, value));
  }
}

void RequireNonNegative(std::string_view theorem, std::string_view name, double value) {
  Require(std::isfinite(value) && value >= 0, theorem, name, value, "finite and >= 0");
}

void RequireHorizon(std::string_view theorem, double T) {
  Require(std::isfinite(T) && T >= 1, theorem, "T", T, "finite and >= 1");
}

// num / den for num >= 0 and den >= 0, with a zero denominator read as the limit den -> 0+:
// +infinity, or 0 when the numerator is 0 for every den (e.g. beta = 0 in a momentum term).
double Ratio(double num, double den) {
  if (den == 0) return num == 0 ? 0.0 : kVacuousBound;
  return num / den;
}

// The constants of 1-bit Adam's and 1-bit LAMB's compression-phase theorems, validated alike.
void RequireCompressionPhase(std::string_view theorem, const OneBitAdamConstants& k, double T) {
  RequireNonNegative(theorem, "L", k.lipschitz);
  RequireNonNegative(theorem, "sigma", k.sigma);
  RequireNonNegative(theorem, "eps", k.eps);
  Require(k.beta >= 0 && k.beta <= 1, theorem, "beta", k.beta, "in [0, 1]");
  Require(std::isfinite(k.n) && k.n >= 1, theorem, "n", k.n, "finite and >= 1");
  RequireNonNegative(theorem, "v_min (denominator_min)", k.denominator_min);
  RequireNonNegative(theorem, "denominator_max", k.denominator_max);
  Require(k.denominator_max == 0 || k.denominator_max >= k.denominator_min, theorem,
          "denominator_max", k.denominator_max, "0 (unknown) or >= denominator_min");
  RequireNonNegative(theorem, "E f(x_0) - f(x*)", k.f_gap);
  RequireNonNegative(theorem, "gamma", k.gamma);
  RequireHorizon(theorem, T);
}

double Sum(const std::vector<BoundPart>& parts) {
  double sum = 0;
  for (const BoundPart& part : parts) sum += part.value;
  return sum;
}

// A V-norm mean turned Euclidean: ||g||^2 = sum_j d_j g_j^2 / d_j <= d_max ||g||_V^2 for V =
// diag(1/d). NaN when d_max is unknown (0).
double EuclideanMean(double v_norm_mean, double denominator_max) {
  return denominator_max > 0 ? v_norm_mean * denominator_max
                             : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

// Birder Theorem 1 (birder.txt Thm 1, Eq. 6, 40-42, lines 148-160 and 746-778).
//
// The statement's left-hand side (line 148) is garbled in the extraction ("E[1/2 T sum ||grad
// f(x_t)|| 1^2"); Eq. 40 (line 768) prints E[(1/T) sum_{t=1}^T ||grad f(x_t)||]^2. The proof's
// last step (line 765) gets it from E[sum alpha_t ||grad f(x_t)||^2] >= T alpha_T E[(1/T) sum
// ||grad f(x_t)||^2] >= T alpha_T E[((1/T) sum ||grad f(x_t)||)^2] (Cauchy-Schwarz inside the
// expectation), so the bound holds for E[((1/T) sum ||grad f(x_t)||)^2] and already for the
// mean squared norm E[(1/T) sum ||grad f(x_t)||^2] above it. The log is natural: it comes from
// sum_{t<=T} 1/t <= 1 + int_1^T dt/t = 1 + ln T (line 765).
//
// The printed C1, C2 (Eq. 41-42): C1 = c G (E[f(z_1) - f*] + 3c^2 dL/16 + beta c d G^2/((1-beta)
// rho) + 4 c d G^2/rho + c^2 beta^2 L G^2 d/(rho^2 (1-beta)^2)), C2 = c^3 G ((8 beta^2 + 10 beta
// + 5) L^2 d/(1-beta)^2 + G^2 (1+L)/(2 rho^2) + 2dL). ("LC^2" in Eq. 38 and in T_3 is L G^2: the
// proof bounds ||m_{t-1}|| <= G there.)
//
// Re-derivation of the last steps (Eq. 38 -> 39 -> 40), kept beside the printed numbers:
//  1. T alpha_T = c sqrt(T), but line 765 writes sqrt(T) / c. Dividing Eq. 39 by c sqrt(T) / G
//     gives the factor G / c in front of the bracket, not c G: C1 and C2 are c^2 too small.
//  2. Eq. 38 has (G^2 / (2 rho^2)) sum alpha_{t-1}^2 and (L G^2 / rho^2) sum alpha_t^2 (T_4,
//     Eq. 37); merged they give G^2 (1 + 2L) / (2 rho^2), where Eq. 39 prints G^2 (1 + L) /
//     (2 rho^2).
//  3. With alpha_0 = alpha_1 = c, sum_{t=1}^T alpha_{t-1}^2 = c^2 (1 + H_{T-1}) <= c^2 (2 + ln T)
//     (H the harmonic number), not c^2 (1 + ln T): the extra c^2 moves into the constant term.
// So with K' = (8 beta^2 + 10 beta + 5) L^2 d/(1-beta)^2 + G^2 (1 + 2L)/(2 rho^2) + 2dL:
//   C1' = (G / c) * (C1's bracket) + c G K',  C2' = c G K'.
// Only these final steps were checked; the bounds on T_1..T_6 are taken as printed.
BirderTheorem1Result BirderTheorem1(const BirderConstants& k, double T) {
  constexpr std::string_view kName = "Birder Theorem 1";
  Require(std::isfinite(k.c) && k.c > 0, kName, "c", k.c, "finite and > 0");
  RequireNonNegative(kName, "G", k.grad_bound);
  RequireNonNegative(kName, "L", k.lipschitz);
  RequireNonNegative(kName, "d", k.d);
  RequireNonNegative(kName, "rho", k.rho);
  // The optimizer's own rule: beta = 1 is no Birder run (and the proof divides by 1 - beta).
  Require(kMovingAverageFactor.Contains(k.beta), kName, "beta", k.beta,
          kMovingAverageFactor.ToString());
  RequireNonNegative(kName, "E[f(z_1) - f*]", k.f_z1_gap);
  RequireHorizon(kName, T);

  const double c = k.c, g = k.grad_bound, l = k.lipschitz, d = k.d, rho = k.rho, beta = k.beta;
  const double one_minus_beta = 1 - beta;
  BirderTheorem1Result r;
  r.c1_parts = {
      {"E[f(z_1) - f*]", k.f_z1_gap},
      {"3 c^2 d L / 16", 3 * c * c * d * l / 16},
      {"beta c d G^2 / ((1-beta) rho)", Ratio(beta * c * d * g * g, one_minus_beta * rho)},
      {"4 c d G^2 / rho", Ratio(4 * c * d * g * g, rho)},
      {"c^2 beta^2 L G^2 d / (rho^2 (1-beta)^2)",
       Ratio(c * c * beta * beta * l * g * g * d, rho * rho * one_minus_beta * one_minus_beta)},
  };
  const double smooth =
      Ratio((8 * beta * beta + 10 * beta + 5) * l * l * d, one_minus_beta * one_minus_beta);
  r.c2_parts = {
      {"(8 beta^2 + 10 beta + 5) L^2 d / (1-beta)^2", smooth},
      {"G^2 (1 + L) / (2 rho^2)", Ratio(g * g * (1 + l), 2 * rho * rho)},
      {"2 d L", 2 * d * l},
  };
  const double c1_bracket = Sum(r.c1_parts);
  const double k_rederived = smooth + Ratio(g * g * (1 + 2 * l), 2 * rho * rho) + 2 * d * l;
  r.c1 = c * g * c1_bracket;
  r.c2 = c * c * c * g * Sum(r.c2_parts);
  r.c1_rederived = (g / c) * c1_bracket + c * g * k_rederived;
  r.c2_rederived = c * g * k_rederived;

  const bool vacuous = rho == 0;
  if (vacuous) {
    r.c1 = r.c2 = r.c1_rederived = r.c2_rederived = kVacuousBound;
    r.bound = r.bound_rederived = kVacuousBound;
    return r;
  }
  const double sqrt_t = std::sqrt(T), log_factor = 1 + std::log(T);
  r.bound = r.c1 / sqrt_t + r.c2 * log_factor / sqrt_t;
  r.bound_rederived = r.c1_rederived / sqrt_t + r.c2_rederived * log_factor / sqrt_t;
  return r;
}

// SPAMS Theorem 1 (spams.txt lines 254-257; restated with its proof in App. B, lines 550-676).
// Line numbers are the file's; the extraction also prints the paper's own margin numbers (the
// theorem is margin 221, App. B margins 551-590).
//
// The statement is readable; three points needed the proof:
//  - C2 in the step-size condition eta <= eps / (3 C0 sqrt(2L max{2L, C2})) is not defined in
//    the statement; it is C2 = beta1^2/(1-beta1)^2 + 4q^2/(1-q^2)^2 (line 662, after Eq. 9).
//  - eps is the one inside the root of Algorithm 2 (m / sqrt(v_hat + eps), box line 16, file
//    line 221): C0 = sqrt(max v_hat + eps) with Lemma 4's max, and Eq. 7 bounds the squared
//    inverse denominator by 1/eps, which holds for the sqrt(v_hat + eps) reading only (the
//    proof's "sqrt(v_hat) + eps" is the extraction's placement).
//  - The last line replaces 3 eta^2 L C0 C2 sigma^2 / eps^2 by the same with C1 "because C2 <=
//    C1" (line 676). C2 = a^2 + b^2 and C1 = a + b with a = beta1/(1-beta1), b = 2q/(1-q^2), so
//    C2 <= C1 only when a and b are small; bound_proof keeps C2.
// Every other term was checked against the proof's penultimate inequality (lines 667-674): with
// rho = eps/(3 C0) and the step-size condition the coefficient of sum ||grad f||^2 is
// -eta/(2 C0), and Lemma 5 turns the D_t sums into d/sqrt(eps) and d/eps.
SpamsTheorem1Result SpamsTheorem1(const SpamsConstants& k, double T) {
  constexpr std::string_view kName = "SPAMS Theorem 1";
  RequireNonNegative(kName, "q", k.q);
  RequireNonNegative(kName, "G", k.grad_bound);
  RequireNonNegative(kName, "L", k.lipschitz);
  RequireNonNegative(kName, "eps", k.eps);
  Require(k.beta1 >= 0 && k.beta1 <= 1, kName, "beta1", k.beta1, "in [0, 1]");
  RequireNonNegative(kName, "eta", k.eta);
  Require(std::isfinite(k.n) && k.n >= 1, kName, "n", k.n, "finite and >= 1");
  RequireNonNegative(kName, "d", k.d);
  RequireNonNegative(kName, "sigma", k.sigma);
  RequireNonNegative(kName, "sigma_g", k.sigma_g);
  RequireNonNegative(kName, "E[f(theta_1) - f(theta*)]", k.f_gap);
  RequireHorizon(kName, T);

  SpamsTheorem1Result r;
  if (k.q >= 1 || k.beta1 == 1 || k.eps == 0) {  // Assumption 1 needs q < 1; eps > 0 throughout
    r.c0 = r.c1 = r.c2 = kVacuousBound;
    r.bound = r.bound_proof = kVacuousBound;
    return r;
  }
  const double q2 = k.q * k.q, g2 = k.grad_bound * k.grad_bound, l = k.lipschitz;
  const double eps = k.eps, eta = k.eta, d = k.d, sigma2 = k.sigma * k.sigma;
  const double a = k.beta1 / (1 - k.beta1), b = 2 * k.q / (1 - q2);
  r.c0 = std::sqrt(SpamsLemma4VHatBound(k.q, k.grad_bound) + eps);
  r.c1 = a + b;
  r.c2 = a * a + b * b;
  r.eta_max = l == 0 ? kVacuousBound : eps / (3 * r.c0 * std::sqrt(2 * l * std::max(2 * l, r.c2)));
  r.step_size_admissible = eta <= r.eta_max;

  const double c0 = r.c0, c1 = r.c1;
  const double sigma_term_c1 = 3 * eta * eta * l * c0 * c1 * sigma2 / (eps * eps);
  r.parts = {
      {"E[f(theta_1) - f(theta*)] / (T eta)", Ratio(k.f_gap, T * eta)},
      {"eta L sigma^2 / (n eps)", eta * l * sigma2 / (k.n * eps)},
      {"3 eta^2 L C0 C1 sigma^2 / eps^2", sigma_term_c1},
      {"12 eta^2 q^2 L C0 sigma_g^2 / ((1-q^2)^2 eps^2)",
       12 * eta * eta * q2 * l * c0 * k.sigma_g * k.sigma_g / ((1 - q2) * (1 - q2) * eps * eps)},
      {"(1 + C1) G^2 d / (T sqrt(eps))", (1 + c1) * g2 * d / (T * std::sqrt(eps))},
      {"eta (1 + 2 C1) C1 L G^2 d / (T eps)", eta * (1 + 2 * c1) * c1 * l * g2 * d / (T * eps)},
  };
  const double sum = Sum(r.parts);
  const double sigma_term_c2 = 3 * eta * eta * l * c0 * r.c2 * sigma2 / (eps * eps);
  if (!r.step_size_admissible) {
    r.bound = r.bound_proof = kVacuousBound;
    return r;
  }
  r.bound = 2 * c0 * sum;
  r.bound_proof = 2 * c0 * (sum - sigma_term_c1 + sigma_term_c2);
  return r;
}

// SPAMS Corollary 1 (spams.txt lines 266-270): eta_t = L sqrt(n/T), and
//   beta1 > 0:  O(1/(L sqrt(nT)) + d L/sqrt(nT) + 1/T + cst.)
//   beta1 = 0:  O(1/(L sqrt(nT)) + d (L/T) sqrt(n/T) + 1/T)  ("linear speedup").
// The O(.) hides which constants it treats as fixed, so the explicit number is Theorem 1 at that
// eta. Note that at eta = L sqrt(n/T) Theorem 1's terms scale as (nT)^-1/2 (the f-gap and the
// eta L sigma^2/(n eps) terms), n/T (both eta^2 terms), 1/T and sqrt(n) T^-3/2: the n/T terms
// grow with n, which the printed O(.) does not show. Theorem 1 also needs eta <= eta_max, i.e.
// T >= n L^2 / eta_max^2, which the corollary does not state; below that the bound is vacuous.
SpamsCorollary1Result SpamsCorollary1(const SpamsConstants& constants, double T) {
  RequireHorizon("SPAMS Corollary 1", T);
  SpamsCorollary1Result r;
  r.eta = constants.lipschitz * std::sqrt(constants.n / T);
  SpamsConstants at_eta = constants;
  at_eta.eta = r.eta;
  r.theorem = SpamsTheorem1(at_eta, T);
  if (constants.beta1 > 0) {
    r.rate.terms = {
        {"1/(L sqrt(nT))", 0.5, 0.5}, {"d L/sqrt(nT)", 0.5, 0.5}, {"1/T", 1, 0}, {"cst.", 0, 0}};
    r.rate.t_exponent = 0;
    r.rate.n_exponent = 0;
    r.rate.note = "beta1 > 0: the printed rate has a constant term, so it promises no decay";
  } else {
    r.rate.terms = {{"1/(L sqrt(nT))", 0.5, 0.5}, {"d (L/T) sqrt(n/T)", 1.5, -0.5}, {"1/T", 1, 0}};
    r.rate.t_exponent = 0.5;
    r.rate.n_exponent = 0.5;
    r.rate.note = "beta1 = 0: 1/sqrt(nT) dominates as T grows (linear speedup in n)";
  }
  return r;
}

// SPAMS Corollary 2 (spams.txt lines 311-316): one machine (Algorithm 3, lines 286-304: Algorithm
// 2 at n = 1 with Top-k as the compressor), eta_t = L / sqrt(T), and
//   O(1/(L sqrt(T)) + d (L/T) (1/sqrt(T)) + 1/T).
// The paper gives no proof; the explicit number is Theorem 1 at n = 1, sigma_g = 0 and that eta.
// There Theorem 1's terms scale as T^-1/2 (the f-gap term, gap/(L sqrt(T)), and eta L sigma^2/eps
// = L^2 sigma^2/(eps sqrt(T)), which the printed rate omits), 1/T (the two eta^2 terms and (1 +
// C1) G^2 d/(T sqrt(eps)), printed as 1/T without d) and T^-3/2 (the last term, printed as
// d (L/T)/sqrt(T)). Unlike Corollary 1 there is no "cst." term for beta1 > 0, and Theorem 1 has
// none at this eta either. Theorem 1 needs eta <= eta_max, which eta = L/sqrt(T) meets only for
// T >= L^2 / eta_max^2 (not stated); below that the bound is vacuous.
SpamsCorollary2Result SpamsCorollary2(const SpamsConstants& constants, double T) {
  RequireHorizon("SPAMS Corollary 2", T);
  SpamsCorollary2Result r;
  r.eta = constants.lipschitz / std::sqrt(T);
  SpamsConstants single = constants;
  single.eta = r.eta;
  single.n = 1;
  single.sigma_g = 0;
  r.theorem = SpamsTheorem1(single, T);
  r.rate.terms = {{"1/(L sqrt(T))", 0.5, 0}, {"d (L/T) (1/sqrt(T))", 1.5, 0}, {"1/T", 1, 0}};
  r.rate.t_exponent = 0.5;
  r.rate.n_exponent = 0;
  r.rate.note = "n = 1: 1/sqrt(T) dominates as T grows";
  return r;
}

// spams.txt Lemma 1, lines 475-490. m'_t is the proof's virtual momentum of the averaged
// uncompressed gradients (line 563; the statement's "m_bar'_t"), m'_0 = 0, not the algorithm's
// m_t. The statement's right side "T sigma^2 + sum_{tau=1}^t E||grad f(theta_t)||^2" (line 477)
// mixes indices; the proof's last line (line 490) has sum_{t=1}^T. Checked steps:
//  - E||g_bar_t||^2 <= sigma^2 + E||grad f(theta_t)||^2 (line 481): valid. With workers that
//    sample independently the noise is sigma^2 / n (Theorem 1's term III uses that), so sigma^2
//    is loose by a factor n.
//  - Cauchy-Schwarz (line 486): E||m'_t||^2 <= (1-beta1) sum_{tau<=t} beta1^(t-tau)
//    E||g_bar_tau||^2 <= sigma^2 + (1-beta1) sum_{tau<=t} beta1^(t-tau) E||grad f(theta_tau)||^2,
//    printed with theta_t in the last sum (a typo for theta_tau). The sigma^2 could carry a factor
//    1 - beta1^t.
//  - Summing over t: sum_t (1-beta1) sum_{tau<=t} beta1^(t-tau) a_tau = sum_tau (1 -
//    beta1^(T-tau+1)) a_tau <= sum_tau a_tau, so the printed sum follows, and the per-step bounds
//    summed over t stay below it.
// Theorem 1 uses the lemma (line 658, Eq. 9) for sum_t E||m'_{t-1}||^2, which is at most sum_t
// E||m'_t||^2 since m'_0 = 0.
double SpamsLemma1MomentumBound(double sigma, double T, double grad_sq_sum) {
  constexpr std::string_view kName = "SPAMS Lemma 1";
  RequireNonNegative(kName, "sigma", sigma);
  RequireHorizon(kName, T);
  RequireNonNegative(kName, "sum_t E||grad f(theta_t)||^2", grad_sq_sum);
  return T * sigma * sigma + grad_sq_sum;
}

std::vector<double> SpamsLemma1PerStepBounds(double beta1, double sigma,
                                             const std::vector<double>& grad_sq) {
  constexpr std::string_view kName = "SPAMS Lemma 1";
  Require(beta1 >= 0 && beta1 <= 1, kName, "beta1", beta1, "in [0, 1]");
  RequireNonNegative(kName, "sigma", sigma);
  std::vector<double> bounds;
  bounds.reserve(grad_sq.size());
  double average = 0;  // (1-beta1) sum_{tau<=t} beta1^(t-tau) a_tau, by its recursion
  for (double a : grad_sq) {
    RequireNonNegative(kName, "E||grad f(theta_tau)||^2", a);
    average = beta1 * average + (1 - beta1) * a;
    bounds.push_back(sigma * sigma + average);
  }
  return bounds;
}

// spams.txt Lemma 2, lines 498-513: ||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 (from Eq. 3 by recursion).
double SpamsLemma2ErrorBound(double q, double grad_bound) {
  RequireNonNegative("SPAMS Lemma 2", "q", q);
  RequireNonNegative("SPAMS Lemma 2", "G", grad_bound);
  if (q >= 1) return kVacuousBound;
  const double q2 = q * q;
  return 4 * q2 * grad_bound * grad_bound / ((1 - q2) * (1 - q2));
}

// spams.txt Lemma 3, lines 515-530. E_t = (1-beta1) sum_{tau<=t} beta1^(t-tau) e_bar_tau (line
// 569), e_bar_t = (1/n) sum_i e_t,i (line 559). Every step was checked; the printed constant
// follows from the proof:
//  - Cauchy-Schwarz and Jensen (line 522): E||E_t||^2 <= (1-beta1) sum_{tau<=t} beta1^(t-tau)
//    (1/n) sum_i E||e_tau,i||^2.
//  - (b) uses Lemma 2's second bound (line 500), E||e_{t+1,i}||^2 <= 4q^2 sigma^2/(1-q^2)^2 +
//    2q^2/(1-q^2) K_{t,i} with K_{t,i} = sum_{s<=t} ((1+q^2)/2)^(t-s) E||grad f_i(theta_s)||^2.
//    For e_tau,i that is K_{tau-1,i} (K_{0,i} = 0: the garbled "K_{t,i} = 0" of line 520); the
//    proof writes K_{tau,i}. That is not a per-step upper bound (K_tau < K_{tau-1} when the new
//    gradient is small), but after the sum over t only sum_tau K_{tau-1} <= sum_tau K_tau is
//    needed, which holds since K >= 0 and K_0 = 0.
//  - The geometric sums (line 527): (1-beta1) sum_{t=tau}^T beta1^(t-tau) <= 1 and
//    sum_{t>=s} ((1+q^2)/2)^(t-s) <= 2/(1-q^2), so 2q^2/(1-q^2) becomes 4q^2/(1-q^2)^2. (The first
//    summed line prints "=" for "<=".)
//  - (1/n) sum_i ||grad f_i||^2 = ||grad f||^2 + (1/n) sum_i ||grad f_i - grad f||^2 <= ||grad
//    f||^2 + sigma_g^2 (an identity, then Assumption 4 ii).
// Slack kept as printed: Lemma 2's recursion (line 504) has q^2 (1 + 1/rho) = q^2 (1+q^2)/(1-q^2)
// and rounds it up to 2q^2/(1-q^2), and the sigma^2 term drops a factor 1 - beta1^t.
double SpamsLemma3ErrorAverageBound(double q, double sigma, double sigma_g, double T,
                                    double grad_sq_sum) {
  constexpr std::string_view kName = "SPAMS Lemma 3";
  RequireNonNegative(kName, "q", q);
  RequireNonNegative(kName, "sigma", sigma);
  RequireNonNegative(kName, "sigma_g", sigma_g);
  RequireHorizon(kName, T);
  RequireNonNegative(kName, "sum_t E||grad f(theta_t)||^2", grad_sq_sum);
  if (q >= 1) return kVacuousBound;
  const double q2 = q * q;
  const double factor = 4 * q2 / ((1 - q2) * (1 - q2));
  return factor * (T * (sigma * sigma + sigma_g * sigma_g) + grad_sq_sum);
}

// spams.txt Lemma 4, lines 536-549: v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2, via ||g_tilde_t||^2
// <= 2(1+q^2) ||g_t + e_t||^2 <= 4(1+q^2)(G^2 + 4q^2 G^2/(1-q^2)^2) and 1 + 4q^2/(1-q^2)^2 =
// (1+q^2)^2/(1-q^2)^2 (line 540).
double SpamsLemma4VHatBound(double q, double grad_bound) {
  RequireNonNegative("SPAMS Lemma 4", "q", q);
  RequireNonNegative("SPAMS Lemma 4", "G", grad_bound);
  if (q >= 1) return kVacuousBound;
  const double q2 = q * q;
  return 4 * (1 + q2) * (1 + q2) * (1 + q2) * grad_bound * grad_bound / ((1 - q2) * (1 - q2));
}

// spams.txt Lemma 5, lines 601-622: telescoping sums from v_hat_0 = 0.
SpamsLemma5Bounds SpamsLemma5(double d, double eps) {
  RequireNonNegative("SPAMS Lemma 5", "d", d);
  RequireNonNegative("SPAMS Lemma 5", "eps", eps);
  return {Ratio(d, std::sqrt(eps)), Ratio(d, eps)};
}

namespace {

// The 1-bit theorems' last step, shared by 1-bit Adam's and 1-bit LAMB's: the bound on the sum
// is the right side over the coefficient, printed and re-derived (vacuous where the theorem says
// nothing, or its coefficient is not positive), then its mean over t = 0..T and that mean in the
// Euclidean norm.
template <typename Result>
void SetSumAndMeanBounds(Result& r, double T, double denominator_max, bool vacuous,
                         double coefficient_rederived) {
  r.sum_bound = vacuous || !(r.coefficient > 0) ? kVacuousBound : r.rhs / r.coefficient;
  r.sum_bound_rederived = vacuous || !(coefficient_rederived > 0)
                              ? kVacuousBound
                              : r.rhs_rederived / coefficient_rederived;
  r.mean_bound = r.sum_bound / (T + 1);
  r.mean_bound_rederived = r.sum_bound_rederived / (T + 1);
  r.euclidean_mean_bound = EuclideanMean(r.mean_bound, denominator_max);
  r.euclidean_mean_bound_rederived = EuclideanMean(r.mean_bound_rederived, denominator_max);
}

}  // namespace

// 1-bit Adam Theorem 1 (onebit-adam-icml-with-appendix.txt Eq. 6, lines 746-810; proof lines
// 1471-1660 and 2162-2328).
//
// Garbled or inconsistent points and how they are read here:
//  - v_min. The statement defines V = diag(1/v_Tw) and v_min = min_j v_Tw,j; the proof maps the
//    preconditioned update onto h(z) = f(V^1/2 z) and ends with "V_max = 1/sqrt(v_min)" but then
//    substitutes V_max = 1/v_min (line 2290: gamma L V_max -> gamma L / v_min, V_max^3 ->
//    1/v_min^3). The update divides m by sqrt(v_Tw), so V is diag(1/sqrt(v_Tw)), and the
//    statement's formulas are right when v_min is the smallest denominator min_j sqrt(v_Tw,j):
//    that is the input (OneBitAdamConstants::denominator_min), and the left-hand norm is
//    ||g||_V^2 = sum_j g_j^2 / sqrt(v_Tw,j).
//  - Assumption 1.3 (lines 606 and 722-745, garbled: "sum_{k=1}^n E||delta_t^(i)|| <= eps/2,
//    sum_{i=1}^n E||delta_bar_t|| <= eps/2") bounds first moments, but Lemma 2 (line 1804) uses
//    E||delta_t||^2 <= eps^2 (line 1816) for the combined error in m_t = beta m_{t-1} +
//    (1-beta) g_t + delta_{t-1} - delta_t. So eps here bounds the root mean square of the
//    combined error (1/n) sum_i delta_t^(i) + delta_bar_t, and a probe should measure that.
//  - The sum on the left runs over t = 0..T (T + 1 terms) while the right counts T; mean_bound
//    divides by T + 1, which is what the printed inequality supports.
//
// Re-derivation (the *_rederived fields), from Lemma 2 (lines 1804-2160) and its transfer to h
// (lines 2162-2328), with V_max = 1/v_min as above. Two slips are corrected; nothing else moves:
//  1. "The only two thing[s] that change" for h (line 2163) are L -> L V_max and eps^2 -> V_max
//     eps^2 (line 2212). The noise changes too: h's stochastic gradient is V^1/2 g (line 1631), so
//     E||V^1/2 (g - grad f)||^2 <= V_max sigma^2 / n, and Lemma 2's two sigma^2 terms need V_max
//     sigma^2: L gamma sigma^2 T/(n v_min) -> L gamma sigma^2 T/(n v_min^2), and 2 gamma^2 L^2
//     sigma^2 T/(n (1-beta)^2 v_min^2) -> the same over v_min^3. The coefficient has no sigma.
//  2. Eq. 11 (line 2067) carries 2 gamma^2 L^2 eps^2 T/(1-beta)^2 and 2 gamma^2 L^2/(1-beta)^2
//     sum E||m_t||^2; Eq. 12 (line 2113) bounds the sum by ... + 2 eps^2 T/(1-beta)^2. Their
//     product is 4 gamma^2 L^2 eps^2 T/(1-beta)^4, so the eps term is (2/(1-beta)^2 + 4/(1-beta)^4)
//     gamma^2 L^2 eps^2 T, not the printed 6/(1-beta)^2 (line 2115); times V_max^3 as printed.
//     The sigma^2 T/n and sum ||grad f||^2 parts of Eq. 12 combine as printed.
// Fix 2 never lowers the bound; fix 1 raises it when v_min < 1 and lowers it when v_min > 1 (the
// preconditioner then shrinks the noise). Each has factor 1 exactly at beta = 0 (fix 2) and
// v_min = 1 (fix 1).
// Further problems, NOT corrected (the fix is not unique, or not needed for the constants):
//  - Eq. 12 itself does not follow from Lemma 1: m_t = A_t + B_t (momentum of g, momentum of the
//    error differences) needs ||A + B||^2 <= 2||A||^2 + 2||B||^2, which doubles the sum of
//    ||g_t||^2, and Lemma 1 on b_s = ||delta_{s-1} - delta_s|| gives 1/(1-beta)^2 sum b_s^2 <=
//    4/(1-beta)^2 sum ||delta||^2. As printed, Eq. 12 fails already at T = 0, beta = 0, delta_0 =
//    -g_0/2 (2.25 ||g_0||^2 on the left, 1.5 ||g_0||^2 on the right). With the proof's route the
//    coefficient would become 1 - gamma L/v_min - 4 gamma^2 L^2/((1-beta)^2 v_min^2); summation
//    by parts (B_t = -delta_t + (1-beta) sum_{s<t} beta^(t-1-s) delta_s) gives instead
//    sum ||B_t||^2 <= 4 sum ||delta_t||^2 with no 1/(1-beta)^2 at all. Which one the authors meant
//    is not recoverable, so the re-derived bound keeps Eq. 12 as printed.
//  - The sums over t = 0..T have T + 1 terms; the constant terms count T (as printed).
OneBitAdamTheorem1Result OneBitAdamTheorem1(const OneBitAdamConstants& k, double T) {
  RequireCompressionPhase("1-bit Adam Theorem 1", k, T);

  OneBitAdamTheorem1Result r;
  const double v = k.denominator_min, gamma = k.gamma, l = k.lipschitz;
  const double sigma2 = k.sigma * k.sigma, one_minus_beta = 1 - k.beta;
  r.coefficient = 1 - Ratio(gamma * l, v) -
                  Ratio(2 * gamma * gamma * l * l, one_minus_beta * one_minus_beta * v * v);
  r.parts = {
      {"2 (E f(x_0) - f(x*)) / gamma", Ratio(2 * k.f_gap, gamma)},
      {"6 gamma^2 L^2 eps^2 T / ((1-beta)^2 v_min^3)",
       Ratio(6 * gamma * gamma * l * l * k.eps * k.eps * T,
             one_minus_beta * one_minus_beta * v * v * v)},
      {"L gamma sigma^2 T / (n v_min)", Ratio(l * gamma * sigma2 * T, k.n * v)},
      {"2 gamma^2 L^2 sigma^2 T / (n (1-beta)^2 v_min^2)",
       Ratio(2 * gamma * gamma * l * l * sigma2 * T,
             k.n * one_minus_beta * one_minus_beta * v * v)},
  };
  r.rhs = Sum(r.parts);
  const double one_minus_beta2 = one_minus_beta * one_minus_beta;
  const double eps_numerator = gamma * gamma * l * l * k.eps * k.eps * T;
  r.parts_rederived = {
      r.parts[0],
      {"2 gamma^2 L^2 eps^2 T / ((1-beta)^2 v_min^3)",
       Ratio(2 * eps_numerator, one_minus_beta2 * v * v * v)},
      {"4 gamma^2 L^2 eps^2 T / ((1-beta)^4 v_min^3)",
       Ratio(4 * eps_numerator, one_minus_beta2 * one_minus_beta2 * v * v * v)},
      {"L gamma sigma^2 T / (n v_min^2)", Ratio(l * gamma * sigma2 * T, k.n * v * v)},
      {"2 gamma^2 L^2 sigma^2 T / (n (1-beta)^2 v_min^3)",
       Ratio(2 * gamma * gamma * l * l * sigma2 * T, k.n * one_minus_beta2 * v * v * v)},
  };
  r.rhs_rederived = Sum(r.parts_rederived);
  SetSumAndMeanBounds(r, T, k.denominator_max, v == 0 || one_minus_beta == 0, r.coefficient);
  return r;
}

// 1-bit Adam Corollary 1 (lines 815-861; proof lines 2329-2340). The statement's step size
// (line 816) is 1/(4L v_min^-1 + sigma sqrt(T/n) + eps^(2/3) T^(1/3) v_min^-1); the proof's is
// (1-beta)/(4L V_max + sigma sqrt(T/n) + T^(1/3) eps^(2/3)) with V_max = 1/v_min, and only the
// factor (1-beta) makes gamma L/v_min + 2 gamma^2 L^2/((1-beta)^2 v_min^2) <= 1/4 + 1/8 <= 1/2
// for every beta (without it beta = 0.9 gives a second term up to 12.5). The theorem is therefore
// evaluated at the proof's step size. The rate, "treating f(x_1) - f*, beta and L as constants":
// (1/(T v_min)) sum_{t<T} E||grad f(x_t)||_V^2 <~ sigma/sqrt(nT) + eps^(2/3)/T^(2/3) + 1/T.
OneBitAdamCorollary1Result OneBitAdamCorollary1(const OneBitAdamConstants& constants, double T) {
  constexpr std::string_view kName = "1-bit Adam Corollary 1";
  RequireHorizon(kName, T);
  RequireNonNegative(kName, "v_min (denominator_min)", constants.denominator_min);
  Require(constants.beta >= 0 && constants.beta <= 1, kName, "beta", constants.beta, "in [0, 1]");
  OneBitAdamCorollary1Result r;
  const double inv_v = Ratio(1, constants.denominator_min);
  const double noise = constants.sigma * std::sqrt(T / constants.n);
  const double error = std::cbrt(constants.eps * constants.eps) * std::cbrt(T);
  r.gamma_statement = 1 / (4 * constants.lipschitz * inv_v + noise + error * inv_v);
  r.gamma_proof = (1 - constants.beta) / (4 * constants.lipschitz * inv_v + noise + error);
  OneBitAdamConstants at_gamma = constants;
  at_gamma.gamma = std::isfinite(r.gamma_proof) ? r.gamma_proof : 0;
  r.theorem = OneBitAdamTheorem1(at_gamma, T);
  r.rate.terms = {{"sigma/sqrt(nT)", 0.5, 0.5}, {"eps^(2/3)/T^(2/3)", 2.0 / 3.0, 0}, {"1/T", 1, 0}};
  r.rate.t_exponent = 0.5;
  r.rate.n_exponent = 0.5;
  r.rate.note = "sigma/sqrt(nT) dominates as T grows when sigma > 0 (linear speedup in n)";
  return r;
}

// 1-bit LAMB Theorem 1 (onebit-lamb.txt A.9, Eq. 3, lines 390-399; proofs A.9.1-A.9.2, lines
// 411-599). The proof is 1-bit Adam's (Tang et al.) line by line, with the time-varying step
// gamma_t = gamma c_{t-1} (line 453) in place of gamma.
//
// Reading of the extraction and of inconsistent notation:
//  - V. The statement (line 396, garbled "diag(1/m{v}_Tw^(1), ...)") has V = diag(1/v_Tw); A.9.1
//    (line 453) has V = diag(1/sqrt(v_Tw)) in x_{t+1} = x_t - gamma_t V m_t, which is the update
//    (line 431, its "sqrt(v_Tw^2)" read as sqrt(v_Tw); line 360: step gamma / sqrt(v_Tw)). The
//    transfer to h(z) = f(V^1/2 z) holds only for the V of the update, so V = diag(1/denominator)
//    with denominator = sqrt(v_Tw) (+ eta), and V_max = 1/denominator_min. Eq. 3 keeps V_max
//    symbolic (it is never defined; line 399 only argues it is finite), so 1-bit Adam's mix-up of
//    1/sqrt(v_min) and 1/v_min does not recur; reading V = diag(1/v_Tw) would put V_max off by a
//    square root.
//  - Algorithm 1 line 21 (file line 136) divides by sqrt(v_{t-1}), the fresh variance, where the
//    text (line 141, "we freeze the variance") and the analysis (lines 360, 431) use the frozen
//    v_Tw. The theorem covers the frozen preconditioner; the fresh variance only moves c_t.
//  - The error feedback rescales the carried error by c_{t-2}/c_{t-1} = gamma_{t-1}/gamma_t
//    (lines 421-455), which Algorithm 1 (lines 120-121) does not show.
//  - eps: Assumption 1.3 (line 371, garbled as in 1-bit Adam) bounds first moments; Lemma 2 uses
//    E||delta_bar_t||^2 <= eps^2 for delta_bar_t = (1/n) sum_i delta_t^(i) + delta_t (line 443).
//  - gamma_max, gamma_min: the range of gamma_t (line 564), gamma times the range of c. The proof
//    treats one layer ("the same updating rule for all the layer", line 415), so with several
//    layers c_min and c_max must span all of them.
//  - The proof also assumes gamma_t < 1/(2L) (line 564; 1/(2 L V_max) for h), which Eq. 3 drops.
//    Dividing by gamma_min needs only 1 - gamma_t L V_max >= 0, which a positive coefficient
//    implies, so it is not enforced.
//  - Lemma 2's statement (lines 530-542) is 1-bit Adam's, copied; its proof ends (line 581) with
//    the gamma_max/gamma_min form that Eq. 3 uses.
//  - The left side. Eq. 3 (line 392) and the last display of the proof (line 597) print sum E||grad
//    f(x_t)||^2, but Lemma 2 applied to h bounds sum E||grad h(z_t)||^2 = sum E||grad f(x_t)||_V^2,
//    the V-norm of 1-bit Adam's Eq. 6 and of this paper's Cor. 1 (line 405). The Euclidean claim
//    follows only when V >= I (denominator_max <= 1); in general ||g||^2 <= denominator_max
//    ||g||_V^2 gives euclidean_mean_bound.
//  - The gap: printed 2 E f(x_1) - 2 E f(y*) with y* the minimizer; the proof has E f(y_0) -
//    E f(y_{T+1}), which is at most that only when the momentum and the errors start at 0.
//
// Re-derivation (the *_rederived fields). The per-step bound of Lemma 2 (line 558) is loose but
// valid for a constant step: x_{t+1} - y_t carries (2-beta) m_t/(1-beta) where beta m_t/(1-beta)
// is right, and (2-beta)^2 <= 4; it drops L^2 in 4 gamma_t^3 eps^2/(1-beta)^2, which Eq. 8 (line
// 568) restores. Summing and dividing by gamma_min gives Eq. 8. Three slips follow:
//  1. As in 1-bit Adam: Eq. 8's 8 K sum E||m_t||^2, K = gamma_max^3 L^2/((1-beta)^2 gamma_min),
//     times Eq. 9's 2 eps^2 T/(1-beta)^2 (line 577) is 16 gamma_max^3 L^2 eps^2 T/((1-beta)^4
//     gamma_min); line 581 adds it to Eq. 8's 8 K eps^2 T as 24 K eps^2 T.
//  2. As in 1-bit Adam: the transfer to h (lines 583-593) rescales L and eps^2 by V_max but not
//     sigma^2, while h's noise is V_max sigma^2 (h's gradient is V^1/2 g, line 487). Both sigma^2
//     terms gain a factor V_max.
//  3. New here: with L -> L V_max the coefficient's last term is 8 gamma_max^3 L^2 V_max^2 /
//     ((1-beta)^2 gamma_min), but line 597 (and Eq. 3) keep 8 gamma_max^3 L^2 / (...); the proof
//     of Cor. 1 (line 605) has the V_max^2. The printed coefficient is too large when V_max > 1,
//     and at Cor. 1's own step (sigma = eps = 0) it is below 1/2 for V_max <= 1/4 and negative
//     for V_max < 0.17.
// Each factor is 1 exactly at beta = 0 (fix 1) or V_max = 1 (fixes 2 and 3).
// NOT corrected:
//  - A varying step is not covered. y_t = x_t - (gamma_t m_t + gamma_{t-1} delta_bar_t)/(1-beta)
//    (line 546) does not give y_{t+1} - y_t = -gamma_t g_{t+1} (line 554): line 550 writes
//    gamma_t (m_{t+1} - m_t) for gamma_{t+1} m_{t+1} - gamma_t m_t. The choice that cancels the
//    error terms, y_t = x_t - gamma_t (m_t + delta_bar_t)/(1-beta), gives y_{t+1} - y_t =
//    -gamma_{t+1} g_bar_{t+1} - beta (gamma_{t+1} - gamma_t) m_t/(1-beta), and nothing in the
//    proof bounds the second part. So Eq. 3 is proven only for c_min = c_max
//    (proof_covers_step_range), Cor. 1's setting.
//  - Eq. 9 (line 577) has the problems of 1-bit Adam's Eq. 12 (the factor 2 on sum ||g_t||^2 and
//    the error constant; see OneBitAdamTheorem1) and drops the ratio gamma_{s-1}/gamma_s <=
//    gamma_max/gamma_min in front of delta_bar_{s-1} (line 573). Both are kept as printed.
OneBitLambTheorem1Result OneBitLambTheorem1(const OneBitLambConstants& k, double T) {
  constexpr std::string_view kName = "1-bit LAMB Theorem 1";
  RequireCompressionPhase(kName, k, T);
  RequireNonNegative(kName, "c_min", k.c_min);
  Require(std::isfinite(k.c_max) && k.c_max >= k.c_min, kName, "c_max", k.c_max,
          "finite and >= c_min");

  OneBitLambTheorem1Result r;
  const double d = k.denominator_min, l = k.lipschitz;  // V_max = 1 / d
  r.v_max = Ratio(1, d);
  r.gamma_max = k.gamma * k.c_max;
  r.gamma_min = k.gamma * k.c_min;
  r.proof_covers_step_range = k.c_min == k.c_max;
  const double gmax = r.gamma_max, gmin = r.gamma_min;
  const double sigma2 = k.sigma * k.sigma, eps2 = k.eps * k.eps;
  const double b2 = (1 - k.beta) * (1 - k.beta);  // (1-beta)^2
  // gamma_max^3 L^2 T: the numerator of every term cubic in the step.
  const double cubic_t = gmax * gmax * gmax * l * l * T;
  r.coefficient = 1 - Ratio(gmax * l, d) - Ratio(8 * gmax * gmax * gmax * l * l, b2 * gmin);
  r.parts = {
      {"2 (E f(x_1) - f(y*)) / gamma_min", Ratio(2 * k.f_gap, gmin)},
      {"24 gamma_max^3 L^2 V_max^3 eps^2 T / ((1-beta)^2 gamma_min)",
       Ratio(24 * cubic_t * eps2, b2 * gmin * d * d * d)},
      {"L V_max gamma_max^2 sigma^2 T / (n gamma_min)",
       Ratio(l * gmax * gmax * sigma2 * T, k.n * gmin * d)},
      {"8 gamma_max^3 L^2 V_max^2 sigma^2 T / (n (1-beta)^2 gamma_min)",
       Ratio(8 * cubic_t * sigma2, k.n * b2 * gmin * d * d)},
  };
  r.rhs = Sum(r.parts);
  r.coefficient_rederived =
      1 - Ratio(gmax * l, d) - Ratio(8 * gmax * gmax * gmax * l * l, b2 * gmin * d * d);
  r.parts_rederived = {
      r.parts[0],
      {"8 gamma_max^3 L^2 V_max^3 eps^2 T / ((1-beta)^2 gamma_min)",
       Ratio(8 * cubic_t * eps2, b2 * gmin * d * d * d)},
      {"16 gamma_max^3 L^2 V_max^3 eps^2 T / ((1-beta)^4 gamma_min)",
       Ratio(16 * cubic_t * eps2, b2 * b2 * gmin * d * d * d)},
      {"L V_max^2 gamma_max^2 sigma^2 T / (n gamma_min)",
       Ratio(l * gmax * gmax * sigma2 * T, k.n * gmin * d * d)},
      {"8 gamma_max^3 L^2 V_max^3 sigma^2 T / (n (1-beta)^2 gamma_min)",
       Ratio(8 * cubic_t * sigma2, k.n * b2 * gmin * d * d * d)},
  };
  r.rhs_rederived = Sum(r.parts_rederived);
  SetSumAndMeanBounds(r, T, k.denominator_max, d == 0 || k.beta == 1, r.coefficient_rederived);
  return r;
}

// 1-bit LAMB Corollary 1 (lines 403-409; proof A.9.3, lines 601-616): gamma = gamma_max =
// gamma_min = (1-beta)/(16 L V_max + sigma sqrt(T/n) + T^(1/3) eps^(2/3)), statement and proof
// alike (unlike 1-bit Adam's). Its rate, "treating f(x_1) - f*, beta and L as constants":
// (V_max/T) sum_{t<T} E||grad f(x_t)||_V^2 <~ sigma/sqrt(nT) + eps^(2/3)/T^(2/3) + 1/T. The factor
// V_max on the left is not derived anywhere (the proof's lines 609-611 bound (1/T) sum_t E||grad
// f(x_t)||_V^2 and line 615 then writes the Euclidean norm), and the explicit constants of lines
// 609-611 are not evaluated here (they also slip: 32 L^2 eps^(2/3) T^(1/3) V_max^3 where twice
// Eq. 3's 24 gives 48). The claim that the coefficient is >= 1/2 (line 605) holds for the
// re-derived coefficient for every beta and V_max (gamma L V_max <= 1/16 and the last term
// <= 1/32); the printed one, without V_max^2, is below 1/2 at sigma = eps = 0 once V_max <= 1/4.
OneBitLambCorollary1Result OneBitLambCorollary1(const OneBitLambConstants& constants, double T) {
  constexpr std::string_view kName = "1-bit LAMB Corollary 1";
  RequireHorizon(kName, T);
  RequireNonNegative(kName, "denominator_min", constants.denominator_min);
  Require(constants.beta >= 0 && constants.beta <= 1, kName, "beta", constants.beta, "in [0, 1]");
  OneBitLambCorollary1Result r;
  const double v_max = Ratio(1, constants.denominator_min);
  r.gamma = (1 - constants.beta) /
            (16 * constants.lipschitz * v_max + constants.sigma * std::sqrt(T / constants.n) +
             std::cbrt(T) * std::cbrt(constants.eps * constants.eps));
  OneBitLambConstants at_gamma = constants;
  at_gamma.gamma = std::isfinite(r.gamma) ? r.gamma : 0;
  at_gamma.c_min = at_gamma.c_max = 1;
  r.theorem = OneBitLambTheorem1(at_gamma, T);
  r.rate.terms = {{"sigma/sqrt(nT)", 0.5, 0.5}, {"eps^(2/3)/T^(2/3)", 2.0 / 3.0, 0}, {"1/T", 1, 0}};
  r.rate.t_exponent = 0.5;
  r.rate.n_exponent = 0.5;
  r.rate.note = "sigma/sqrt(nT) dominates as T grows when sigma > 0 (linear speedup in n)";
  return r;
}

}  // namespace lemmalab
