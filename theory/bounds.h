// The right-hand sides of the convergence theorems, evaluated from constants, so that a report can
// put a measured curve next to what the paper promises:
//   Birder Theorem 1         birder.txt Thm 1, Eq. 6, 41-42, lines 148-160 and 517-780
//   SPAMS Theorem 1, Cor. 1  spams.txt Thm 1 and Cor. 1, lines 254-270, proof lines 550-676;
//   and Corollary 2          Cor. 2 (one machine), lines 311-316;
//                            Lemmas 1-5 (lines 475-622), which probes compare against
//   1-bit Adam Theorem 1,    onebit-adam-icml-with-appendix.txt Assumption 1, Thm 1 (Eq. 6) and
//   Corollary 1              Cor. 1, lines 593-860, proofs lines 1471-2483
//   1-bit LAMB Theorem 1,    onebit-lamb.txt A.9: Assumption 1, Thm 1 (Eq. 3) and Cor. 1, lines
//   Corollary 1              358-409, proofs lines 411-616
// Every calculator is a pure function of a plain struct of constants. It returns the bound and its
// parts (the summands of the printed expression, by name), and +infinity where the theorem's
// assumptions fail in a way that makes it say nothing (rho = 0, q >= 1, beta = 1, a step size
// above the theorem's limit, a non-positive left-hand coefficient). Inputs that no theorem could
// mean (a negative G, beta > 1, T < 1) are UserErrors.
//
// Where the extracted text is garbled, or the printed statement does not follow from its own
// proof, the .cc file says how it was resolved; the result keeps the statement as printed as the
// main number and gives the re-derived one beside it where the fix is unambiguous.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace lemmalab {

// The value of a bound whose theorem makes no claim at these constants.
inline constexpr double kVacuousBound = std::numeric_limits<double>::infinity();

// One summand of a printed bound, named as in the paper.
struct BoundPart {
  std::string name;
  double value = 0;
};

// A convergence rate as data: the bound behaves like the sum of the terms, each T^-t n^-n.
struct RateTerm {
  std::string name;       // the term as printed
  double t_exponent = 0;  // the term decays like T^-t_exponent ...
  double n_exponent = 0;  // ... and like n^-n_exponent (negative: grows with n)
};
struct CorollaryRate {
  std::vector<RateTerm> terms;
  // The term that dominates as T -> infinity at fixed n (exponents 0 when a constant term is
  // printed: then the corollary promises no decay at all).
  double t_exponent = 0;
  double n_exponent = 0;
  std::string note;
};

// ---------------------------------------------------------------------------------------------
// Birder, Theorem 1 (birder.txt lines 148-160; proof A.2, lines 517-780; Eq. 41-42).
struct BirderConstants {
  double c = 0;           // step size alpha_t = c / sqrt(t), alpha_0 = alpha_1 = c
  double grad_bound = 0;  // G: ||g_t^(i)|| <= G and ||grad f|| <= G (Assumption 4)
  double lipschitz = 0;   // L (Assumption 2)
  double d = 0;           // dimension
  double rho = 0;         // (b_t^(i))_j >= rho > 0 for all t, i, j
  double beta = 0;        // the one EMA factor of m and b, in [0, 1)
  double f_z1_gap = 0;    // E[f(z_1) - f*], z_1 = x_1 + alpha_1 (delta_1 - e_1) (Eq. 20)
};

// The bound is on E[((1/T) sum_{t=1}^T ||grad f(x_t)||)^2] (natural log). The proof's last step
// in fact bounds the larger E[(1/T) sum_{t=1}^T ||grad f(x_t)||^2], so both (and, by Jensen,
// (E[(1/T) sum ||grad f(x_t)||])^2) lie below it.
struct BirderTheorem1Result {
  double c1 = 0;     // Eq. 41 as printed
  double c2 = 0;     // Eq. 42 as printed
  double bound = 0;  // C1 / sqrt(T) + C2 (1 + ln T) / sqrt(T), Eq. 6 / Eq. 40
  // The same with the proof's last step redone (see bounds.cc): the printed constants carry a
  // factor c G where the step gives G / c, and the sum of alpha_{t-1}^2 needs c^2 (2 + ln T):
  // C1' = (G/c) bracket(C1) + c G K', C2' = c G K', with K' C2's bracket where G^2(1+L)/(2 rho^2)
  // becomes G^2(1+2L)/(2 rho^2) (bounds.cc).
  double c1_rederived = 0;
  double c2_rederived = 0;
  double bound_rederived = 0;
  std::vector<BoundPart> c1_parts;  // the five summands inside C1's bracket (times c G: C1)
  std::vector<BoundPart> c2_parts;  // the three summands inside C2's bracket (times c^3 G: C2)
};
BirderTheorem1Result BirderTheorem1(const BirderConstants& constants, double T);

// ---------------------------------------------------------------------------------------------
// SPAMS, Theorem 1 and Corollary 1 (spams.txt lines 254-270, proof lines 550-676).
struct SpamsConstants {
  double q = 0;           // the compressor is q-deviate: ||C(x) - x|| <= q ||x|| (Assumption 1)
  double grad_bound = 0;  // G: ||g_t,i|| <= G (Assumption 3)
  double lipschitz = 0;   // L: every f_i is L-smooth (Assumption 2)
  double eps = 0;         // epsilon of the update m / sqrt(v_hat + eps) (Alg. 2 line 16), > 0
  double beta1 = 0;       // momentum factor in [0, 1); beta2 does not enter the bound
  double eta = 0;         // constant step size eta_t = eta (Theorem 1; Corollary 1 sets it)
  double n = 1;           // workers
  double d = 0;           // dimension
  double sigma = 0;       // local variance: E||g_t,i - grad f_i||^2 <= sigma^2 (Assumption 4 i)
  double sigma_g = 0;     // global variance of the f_i (Assumption 4 ii); 0 for i.i.d. shards
  double f_gap = 0;       // E[f(theta_1) - f(theta*)]
};

// Bounds (1/T) sum_{t=1}^T E||grad f(theta_t)||^2 at the iterates theta_t of Algorithm 2.
struct SpamsTheorem1Result {
  double c0 = 0;       // sqrt(4 (1+q^2)^3 G^2 / (1-q^2)^2 + eps)
  double c1 = 0;       // beta1 / (1-beta1) + 2q / (1-q^2)
  double c2 = 0;       // beta1^2 / (1-beta1)^2 + 4q^2 / (1-q^2)^2 (defined in the proof, line 662)
  double eta_max = 0;  // eps / (3 C0 sqrt(2L max{2L, C2})): the theorem needs eta <= eta_max
  bool step_size_admissible = false;
  std::vector<BoundPart> parts;  // the six summands inside 2 C0 (...), as printed
  double bound = 0;              // 2 C0 * sum(parts); kVacuousBound unless admissible and q < 1
  // The penultimate line of the proof: C2 where the statement has C1 in the sigma^2 term. The
  // proof replaces C2 by C1 claiming C2 <= C1, which fails once beta1/(1-beta1) or 2q/(1-q^2)
  // exceeds 1 (beta1 = 0.9 gives C2 >= 81 > C1 >= 9); this is the bound the proof supports.
  double bound_proof = 0;
};
SpamsTheorem1Result SpamsTheorem1(const SpamsConstants& constants, double T);

struct SpamsCorollary1Result {
  double eta = 0;               // L sqrt(n / T), the corollary's step size
  SpamsTheorem1Result theorem;  // Theorem 1 at that step size (constants.eta ignored)
  CorollaryRate rate;           // the printed O(...) (two forms: beta1 > 0 and beta1 = 0)
};
SpamsCorollary1Result SpamsCorollary1(const SpamsConstants& constants, double T);

// Corollary 2 (lines 311-316): one machine (Algorithm 3), eta = L / sqrt(T).
struct SpamsCorollary2Result {
  double eta = 0;  // L / sqrt(T), the corollary's step size
  // Theorem 1 at that step size with n = 1 and sigma_g = 0 (constants.eta, .n and .sigma_g are
  // ignored: with one worker f_1 = f, so Assumption 4 ii holds with sigma_g = 0). Vacuous (not
  // admissible) below T = L^2 / eta_max^2, which the corollary does not state.
  SpamsTheorem1Result theorem;
  CorollaryRate rate;  // 1/(L sqrt(T)) + d (L/T) (1/sqrt(T)) + 1/T, as printed
};
SpamsCorollary2Result SpamsCorollary2(const SpamsConstants& constants, double T);

// Lemma 1 (lines 475-490), for the proof's virtual momentum m'_t = beta1 m'_{t-1} + (1-beta1)
// g_bar_t, m'_0 = 0, of the averaged UNcompressed gradients g_bar_t = (1/n) sum_i g_t,i (line
// 563), not the algorithm's m_t: sum_{t=1}^T E||m'_t||^2 <= T sigma^2 + sum_{t=1}^T E||grad
// f(theta_t)||^2 (the printed inner index "sum_{tau=1}^t" is a typo for sum_{t=1}^T). The proof
// supports exactly this (bounds.cc). grad_sq_sum: sum_{t=1}^T E||grad f(theta_t)||^2.
double SpamsLemma1MomentumBound(double sigma, double T, double grad_sq_sum);
// The proof's per-step inequality (line 486), tighter than the sum: for t = 1..T, E||m'_t||^2 <=
// sigma^2 + (1-beta1) sum_{tau=1}^t beta1^(t-tau) E||grad f(theta_tau)||^2, from grad_sq[tau-1]
// = E||grad f(theta_tau)||^2. Element t-1 of the result bounds E||m'_t||^2.
std::vector<double> SpamsLemma1PerStepBounds(double beta1, double sigma,
                                             const std::vector<double>& grad_sq);
// Lemma 2 (lines 498-513): ||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 for every worker and step.
double SpamsLemma2ErrorBound(double q, double grad_bound);
// Lemma 3 (lines 515-530), for E_t = (1-beta1) sum_{tau=1}^t beta1^(t-tau) e_bar_tau, the beta1
// moving average of the averaged worker errors e_bar_t = (1/n) sum_i e_t,i (lines 559, 569):
// sum_{t=1}^T E||E_t||^2 <= 4 T q^2 (sigma^2 + sigma_g^2) / (1-q^2)^2 + 4 q^2 / (1-q^2)^2 *
// grad_sq_sum, grad_sq_sum = sum_{t=1}^T E||grad f(theta_t)||^2. The printed constant follows
// from the proof (bounds.cc). kVacuousBound for q >= 1.
double SpamsLemma3ErrorAverageBound(double q, double sigma, double sigma_g, double T,
                                    double grad_sq_sum);
// Lemma 4 (lines 536-549): v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 for every t and coordinate.
double SpamsLemma4VHatBound(double q, double grad_bound);
// Lemma 5 (lines 601-622), D_t = 1/sqrt(v_hat_{t-1} + eps) - 1/sqrt(v_hat_t + eps) with
// v_hat_0 = 0: sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps.
struct SpamsLemma5Bounds {
  double l1_sum = 0;
  double squared_sum = 0;
};
SpamsLemma5Bounds SpamsLemma5(double d, double eps);

// ---------------------------------------------------------------------------------------------
// 1-bit Adam, Theorem 1 and Corollary 1 (onebit-adam-icml-with-appendix.txt lines 593-860).
// The theorem covers the compression phase only: x_0 is the point where it starts (after T_w
// warmup steps) and T counts compression steps.
struct OneBitAdamConstants {
  double lipschitz = 0;  // L (Assumption 1.1)
  double sigma = 0;      // E||grad F(x; zeta) - grad f(x)||^2 <= sigma^2 per worker (1.2)
  // The compression error bound: the proof (Lemma 2) uses E||delta_t||^2 <= eps^2 for the
  // combined error delta_t = (1/n) sum_i delta_t^(i) + delta_bar_t (see bounds.cc on 1.3).
  double eps = 0;
  double beta = 0;  // momentum factor beta1, in [0, 1)
  double n = 1;     // workers
  // The theorem's v_min, read as the smallest entry of the update's denominator: the frozen
  // preconditioner divides m by sqrt(v_Tw) (+ eta), and the theorem needs V_max = 1 / v_min where
  // V is the matrix multiplying m in the update. So denominator_min = min_j sqrt(v_Tw,j) (+ eta),
  // not min_j v_Tw,j.
  double denominator_min = 0;
  // Optional (0: unknown): max_j of the same denominator, which turns the V-norm bound into one on
  // the Euclidean ||grad f||^2 (||g||^2 <= denominator_max ||g||_V^2).
  double denominator_max = 0;
  double f_gap = 0;  // E f(x_0) - f(x*) at the start of the compression phase
  double gamma = 0;  // learning rate gamma
};

// Eq. 6: coefficient * sum_{t=0}^T E||grad f(x_t)||_V^2 <= sum(parts), V = diag(1/denominator).
struct OneBitAdamTheorem1Result {
  double coefficient = 0;        // 1 - gamma L / v_min - 2 gamma^2 L^2 / ((1-beta)^2 v_min^2)
  std::vector<BoundPart> parts;  // the four right-hand summands as printed
  double rhs = 0;
  double sum_bound = 0;   // rhs / coefficient, kVacuousBound if coefficient <= 0
  double mean_bound = 0;  // sum_bound / (T + 1): the sum runs over t = 0..T
  // mean_bound * denominator_max: bounds (1/(T+1)) sum_t E||grad f(x_t)||^2 in the Euclidean
  // norm; NaN when denominator_max is not given.
  double euclidean_mean_bound = 0;
  // The same with the proof's two slips corrected (bounds.cc); the coefficient does not change.
  // The gradient noise of h is V_max sigma^2, so both sigma^2 terms gain a factor 1/v_min, and
  // Eq. 11 + 12 give 2/(1-beta)^2 + 4/(1-beta)^4 where 6/(1-beta)^2 is printed:
  //   2 gap/gamma + 2 gamma^2 L^2 eps^2 T/((1-beta)^2 v_min^3) + 4 gamma^2 L^2 eps^2 T/((1-beta)^4
  //   v_min^3) + L gamma sigma^2 T/(n v_min^2) + 2 gamma^2 L^2 sigma^2 T/(n (1-beta)^2 v_min^3).
  // Equal to the printed form at beta = 0 and v_min = 1.
  std::vector<BoundPart> parts_rederived;  // the five summands above
  double rhs_rederived = 0;
  double sum_bound_rederived = 0;             // rhs_rederived / coefficient (or vacuous)
  double mean_bound_rederived = 0;            // sum_bound_rederived / (T + 1)
  double euclidean_mean_bound_rederived = 0;  // mean_bound_rederived * denominator_max, or NaN
};
OneBitAdamTheorem1Result OneBitAdamTheorem1(const OneBitAdamConstants& constants, double T);

struct OneBitAdamCorollary1Result {
  // The step size as the statement prints it, 1 / (4L/v_min + sigma sqrt(T/n) + eps^(2/3) T^(1/3)
  // / v_min), and as the proof chooses it, (1-beta) / (4L/v_min + sigma sqrt(T/n) + T^(1/3)
  // eps^(2/3)). Only the proof's choice guarantees the coefficient >= 1/2 for every beta.
  double gamma_statement = 0;
  double gamma_proof = 0;
  OneBitAdamTheorem1Result theorem;  // Theorem 1 at gamma_proof (constants.gamma ignored)
  CorollaryRate rate;                // sigma/sqrt(nT) + eps^(2/3)/T^(2/3) + 1/T
};
OneBitAdamCorollary1Result OneBitAdamCorollary1(const OneBitAdamConstants& constants, double T);

// ---------------------------------------------------------------------------------------------
// 1-bit LAMB, Theorem 1 and Corollary 1 (onebit-lamb.txt A.9, lines 358-409; proofs 411-616).
// As for 1-bit Adam the theorem covers the compression phase only, with the frozen v_Tw as the
// preconditioner; the layerwise scaling coefficient c_t enters as the step gamma_t = gamma c_{t-1}.
// The constants are 1-bit Adam's (the same proof framework, Tang et al. 2021: f_gap is E f(x_1) -
// f(y*) as printed, the gap at the start of the compression phase; gamma the base learning rate),
// and the range of the scaling coefficient c_{t-1} over the compression phase (over all layers):
// gamma_max = gamma c_max, gamma_min = gamma c_min; 1 and 1 for a constant step gamma.
struct OneBitLambConstants : OneBitAdamConstants {
  double c_min = 1;
  double c_max = 1;
};

// Eq. 3: coefficient * sum_{t=0}^T E||grad f(x_t)||^2 <= sum(parts). The statement prints the
// Euclidean norm on the left, but the proof (like 1-bit Adam's) bounds the V-norm sum_t E||grad
// f(x_t)||_V^2 (bounds.cc), so the bounds below are V-norm bounds and the Euclidean one is
// euclidean_mean_bound (they agree with the printed claim when denominator_max <= 1, V >= I).
struct OneBitLambTheorem1Result {
  double v_max = 0;      // 1 / denominator_min
  double gamma_max = 0;  // gamma c_max
  double gamma_min = 0;  // gamma c_min
  // False when c_min < c_max: the proof's auxiliary sequence (lines 546-554) needs a constant step,
  // so the theorem is then not proven at all (bounds.cc); the numbers are still computed.
  bool proof_covers_step_range = false;
  // 1 - gamma_max L V_max - 8 gamma_max^3 L^2 / ((1-beta)^2 gamma_min), as printed
  double coefficient = 0;
  std::vector<BoundPart> parts;  // the four right-hand summands as printed
  double rhs = 0;
  double sum_bound = 0;             // rhs / coefficient, kVacuousBound if coefficient <= 0 (V-norm)
  double mean_bound = 0;            // sum_bound / (T + 1): the sum runs over t = 0..T
  double euclidean_mean_bound = 0;  // mean_bound * denominator_max; NaN if that is not given
  // The same with three slips corrected (bounds.cc): the coefficient's last term gains V_max^2,
  //   1 - gamma_max L V_max - 8 gamma_max^3 L^2 V_max^2 / ((1-beta)^2 gamma_min),
  // and the right-hand side becomes (K = gamma_max^3 L^2 / gamma_min)
  //   2 gap/gamma_min + 8 K V_max^3 eps^2 T/(1-beta)^2 + 16 K V_max^3 eps^2 T/(1-beta)^4
  //   + L V_max^2 gamma_max^2 sigma^2 T/(n gamma_min) + 8 K V_max^3 sigma^2 T/(n (1-beta)^2).
  // Equal to the printed form at beta = 0 and V_max = 1.
  double coefficient_rederived = 0;
  std::vector<BoundPart> parts_rederived;  // the five summands above
  double rhs_rederived = 0;
  double sum_bound_rederived = 0;
  double mean_bound_rederived = 0;
  double euclidean_mean_bound_rederived = 0;
};
OneBitLambTheorem1Result OneBitLambTheorem1(const OneBitLambConstants& constants, double T);

struct OneBitLambCorollary1Result {
  // gamma = gamma_max = gamma_min = (1-beta) / (16 L V_max + sigma sqrt(T/n) + T^(1/3) eps^(2/3))
  // (line 403; the proof, line 603, chooses the same).
  double gamma = 0;
  OneBitLambTheorem1Result theorem;  // Theorem 1 at that constant step (constants.gamma, c ignored)
  CorollaryRate rate;                // sigma/sqrt(nT) + eps^(2/3)/T^(2/3) + 1/T
};
OneBitLambCorollary1Result OneBitLambCorollary1(const OneBitLambConstants& constants, double T);

}  // namespace lemmalab
