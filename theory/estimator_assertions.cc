// The theorems of the methods whose workers correct a running gradient estimate with compressed
// messages, all for full gradients on a nonconvex f bounded below (docs/ef21-diana-marina.md):
//
//   ef21-theorem1     EF21 (Richtárik, Sokolov, Fatkhullin, NeurIPS 2021, Theorem 1): with C in
//                     C(alpha), theta = 1 - sqrt(1 - alpha), beta = (1 - alpha) / (1 - sqrt(1 -
//                     alpha)) and gamma <= 1 / (L + L~ sqrt(beta / theta)),
//                       (1/T) sum_{t<T} E||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T)
//                                                            + E G^0 / (theta T),
//                     G^0 = (1/n) sum_i ||g_i^0 - grad f_i(x^0)||^2.
//   ef21-sgdm-full-gradient  EF21-SGDM (Fatkhullin, Tyurin, Richtárik, NeurIPS 2023) with full
//                     gradients, by the Lyapunov argument of docs/ef21-diana-marina.md §4 (the
//                     paper's theorem is for stochastic gradients and its statement was not
//                     available here): with v_i^0 = grad f_i(x^0), C in C(alpha) and
//                     gamma <= 1 / (L + L~ sqrt(2 / eta^2 + 4 beta (1 + eta^2) / theta)),
//                       (1/T) sum_{t<T} E||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T)
//                                                            + 2 G^0 / (theta T).
//   marina-theorem21  MARINA (Gorbunov, Burlachenko, Li, Richtárik, ICML 2021, Theorem 2.1): with
//                     independent C_i in U(omega), g^0 = grad f(x^0) and gamma <= 1 / (L (1 +
//                     sqrt((1 - p) omega / (p n)))),
//                       (1/T) sum_{t<T} E||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T).
//   diana-nonconvex   DIANA (Mishchenko, Gorbunov, Takáč, Richtárik 2019, Algorithm 1 without
//                     prox) with full gradients, by the Lyapunov argument written out in
//                     docs/ef21-diana-marina.md §3 (the paper's own nonconvex theorem is for
//                     stochastic gradients and bounded dissimilarity): with independent C_i in
//                     U(omega), a <= 1/(omega + 1), gamma <= 1/(2L) and gamma <= (a / L~)
//                     sqrt(n / (4 omega (a + 2))),
//                       (1/T) sum_{t<T} E||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T)
//                                                  + 4 L gamma omega H^0 / (n a T),
//                     H^0 = (1/n) sum_i ||grad f_i(x^0) - h_i^0||^2 (h_i^0 = 0 here).
//
// Every bound is K / T with the left side T times a running sum S(T) = sum_{t<T} ||grad
// f(x^t)||^2 that never decreases, so it is tightest at the last step and is judged there. A
// run whose every step is a function of x alone (full gradients, a deterministic compressor, no
// coin) makes the left side deterministic: above the bound is violated. Otherwise the left side
// is one draw of the expectation: Markov (theory/verdicts.h ExpectationForm). The lemmalab
// problems know one L that bounds every f_i's smoothness, so L~ = sqrt((1/n) sum_i L_i^2) <= L
// and f's own constant <= L: the step-size rules with L are stricter than the theorems', so a
// premise met with L is met with the true constants, and the bounds do not involve L otherwise
// (DIANA's H^0 term takes the larger L, which only loosens the bound).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "theory/assertion_examples.h"
#include "theory/assertions.h"
#include "theory/optimizer_options.h"
#include "theory/premises.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// What every one of these checks reads from its [[assert]] table.
struct EstimatorClaimOptions {
  // The compressor's constant the bound and the step-size rule use, when the check claims one
  // (else the compressor's declared constant); a claim the run contradicts fails its premise.
  std::optional<double> constant;
  std::optional<double> rtol;  // rounding slack of deterministic comparisons
};

EstimatorClaimOptions ReadClaimOptions(OptionTable& options, std::string_view constant_key,
                                       const Interval& constant_rule) {
  EstimatorClaimOptions o;
  o.constant = options.GetOptionalDouble(constant_key, constant_rule);
  o.rtol = options.GetOptionalDouble("rtol", Interval::NonNegative());
  return o;
}

// The compressor constant a bound uses: the check's claim, else the workers' declared one
// (probe q-deviate's `declared_<name>`, the largest omega or the smallest alpha over workers).
struct UsedCompressorConstant {
  double value = 0;
  std::string source;
  bool claimed = false;  // the check's claim, which the run must show, not the compressor's
};
std::optional<UsedCompressorConstant> FindCompressorConstant(const RunEvidence& run,
                                                             std::string_view name,
                                                             std::optional<double> claimed) {
  if (claimed) {
    return UsedCompressorConstant{
        *claimed, fmt::format("{} = {:.6g} (the check's claim)", name, *claimed), true};
  }
  const Series* declared = run.Probe("q-deviate", fmt::format("declared_{}", name));
  if (declared == nullptr) return std::nullopt;
  std::optional<double> value;
  for (const Series::Point& p : declared->sample()) {
    if (p.worker == kServer) continue;
    value = !value            ? p.value
            : name == "omega" ? std::max(*value, p.value)
                              : std::min(*value, p.value);
  }
  if (!value) return std::nullopt;
  return UsedCompressorConstant{
      *value, fmt::format("{} = {:.6g} (declared by compressor '{}')", name, *value,
                          run.hyperparameters.Text("compressor.name").value_or("?"))};
}

// The mean over the workers of `probe/series` at `step`, or nullopt when a worker is missing.
std::optional<double> WorkersMeanAt(const RunEvidence& run, std::string_view probe,
                                    std::string_view series, std::int64_t step) {
  const Series* s = run.Probe(probe, series);
  if (s == nullptr) return std::nullopt;
  double sum = 0;
  int count = 0;
  for (const Series::Point& p : s->sample()) {
    if (p.step == step && p.worker != kServer) {
      sum += p.value;
      ++count;
    }
  }
  if (count != run.workers) return std::nullopt;
  return sum / count;
}

// What the three checks share: the run's trajectory, constants and common premises.
struct Trajectory {
  std::int64_t steps = 0;  // T
  double sum = 0;          // S(T) = sum_{t<T} ||grad f(x^t)||^2
  double first = 0;        // ||grad f(x^0)||^2
  double f_gap = 0;        // f(x^0) - f*
  double gamma = 0;        // the constant step size
  double lipschitz = 0;    // L
  const Constant* f_star = nullptr;
  std::vector<std::string> notes;  // the constants used, for the detail
};

// Fills `t` from the run, with the premises every one of these theorems uses; false, with
// verdict.detail the reason, when the check cannot go on.
bool ReadTrajectory(const RunEvidence& run, std::string_view statement, Verdict& verdict,
                    Trajectory& t) {
  verdict.premises.push_back(RunCompleted(run));
  verdict.premises.push_back(FullGradients(run, statement));
  verdict.premises.push_back(ConstantStepSize(run));
  verdict.premises.push_back(NoWeightDecay(run));
  t.steps = run.steps_done;
  if (t.steps < 1) {
    verdict.detail = "the run took no step";
    return false;
  }
  const Constant* L = run.FindConstant("L");
  const Constant* f_star = run.FindConstant("f_star");
  if (L == nullptr || f_star == nullptr) {
    verdict.detail =
        "unknown constants: the theorem needs L and f* (a problem that knows them, or "
        "reference = true)";
    return false;
  }
  // The rules need the smoothness of every f_i: an estimate (the power iteration's L of f) is
  // not that. f* is judged where the verdict is known (OptimalValueFor).
  const std::string l_name =
      "L known, not estimated (the step-size rule takes it for every f_i's smoothness)";
  verdict.premises.push_back(L->certainty == Certainty::kEstimate
                                 ? Premise::Failed(l_name, DescribeConstant(*L))
                                 : Premise::Met(l_name, DescribeConstant(*L)));
  t.f_star = f_star;
  t.lipschitz = L->value;
  t.notes.push_back(DescribeConstant(*L) + "; every f_i's, so L~ <= L");
  t.notes.push_back(DescribeConstant(*f_star));
  const std::optional<GradientAverage> average = ReadGradientAverage(run, t.steps, verdict.detail);
  if (!average) return false;
  verdict.statistic = average->statistic;
  t.gamma = average->step_size;
  t.sum = average->sum;
  t.first = average->grad_sq.front();
  t.f_gap = std::max(0.0, average->initial_loss - f_star->value);
  t.notes.push_back(fmt::format("f(x^0) - f* = {:.6g}", t.f_gap));
  return true;
}

// The premise "gamma <= rule" of a theorem's step-size condition `rule_text`.
Premise StepSizeRule(double gamma, double rule, std::string_view rule_text) {
  const std::string name = fmt::format("gamma <= {}", rule_text);
  if (gamma <= rule)
    return Premise::Met(name, fmt::format("gamma = {:.6g} <= {:.6g}", gamma, rule));
  return Premise::Failed(
      name, fmt::format("gamma = {:.6g} > {:.6g}: the theorem makes no claim at this step size",
                        gamma, rule));
}

// Judges S(T) / T against numerator / T at the last step, deterministically or by Markov.
void JudgeAtLastStep(const AssertionInput& input, const Trajectory& t, double numerator,
                     std::string_view bound_text, bool deterministic, double rtol,
                     Verdict& verdict) {
  const auto T = static_cast<double>(t.steps);
  const double measured = t.sum / T;
  const double bound = numerator / T;
  verdict.measured_value = measured;
  verdict.bound_value = bound;
  verdict.worst_step = t.steps - 1;
  verdict.measured = fmt::format(
      "(1/T) sum_{{t<T}} ||grad f(x^t)||^2 = {:.6g} over T = {} iterates", measured, t.steps);
  const std::string trivial_text =
      fmt::format("||grad f(x^0)||^2 = {:.4g}, what a run that never moved shows", t.first);
  std::string how;
  if (deterministic) {
    verdict.bound = fmt::format("<= {:.6g} ({}; deterministic run)", bound, bound_text);
    if (!(measured <= bound * (1 + rtol))) {
      verdict.kind = VerdictKind::kViolated;
    } else {
      verdict.kind = bound >= t.first ? VerdictKind::kVacuous : VerdictKind::kHolds;
    }
    how = fmt::format(
        "full gradients and a deterministic compressor make the left side a function of x^0 "
        "alone, so it is judged as a deterministic bound (relative slack {:.1g}); the running sum "
        "only grows and the bound is K / T, so the last step is the tightest",
        rtol);
    if (verdict.kind == VerdictKind::kVacuous) {
      how += fmt::format("; vacuous: the bound is not below {}", trivial_text);
    }
  } else {
    const BoundForm form =
        ExpectationForm("the theorem", fmt::format("<= {:.6g} (E[.], {})", bound, bound_text),
                        measured, bound, t.first, trivial_text, input.confidence);
    verdict.kind = form.kind;
    verdict.bound = form.bound;
    how = fmt::format(
        "{}one run against an expectation bound: holds at or below the bound, violated above "
        "bound / {:.3g} (Markov at confidence {}), inconclusive between; the running sum only "
        "grows and the bound is K / T, so the last step is the tightest",
        form.detail.empty() ? "" : form.detail + "; ", 1 - input.confidence, input.confidence);
  }
  verdict.detail = fmt::format("{}; {}", how, fmt::join(t.notes, "; "));
  verdict.premises.push_back(OptimalValueFor(*t.f_star, verdict.kind));
}

// Whether the run's gradients are exact: the problem's sigma is exactly 0.
bool ExactGradients(const RunEvidence& run) {
  const Constant* sigma = run.FindConstant("sigma");
  return sigma != nullptr && sigma->value == 0 && sigma->certainty == Certainty::kExact;
}

// Whether every step of the run is a function of x^0 alone: exact gradients, and every sender's
// compressor deterministic (probe q-deviate). Only then is the left side of a bound a number
// rather than one draw of the expectation the theorem bounds.
bool DeterministicRun(const RunEvidence& run) {
  if (!ExactGradients(run)) return false;
  const Series* flags = run.Probe("q-deviate", "deterministic");
  if (flags == nullptr || flags->empty()) return false;
  for (const Series::Point& p : flags->sample()) {
    if (p.value == 0) return false;
  }
  return true;
}

// EF21's contraction constants from the compressor's alpha: theta = 1 - sqrt(1 - alpha) and
// beta = (1 - alpha) / (1 - sqrt(1 - alpha)), with the alpha premise checked on the run and G^0
// (probe shift-error at step 1) read; nullopt with verdict.detail set when the check cannot go on.
struct Contraction {
  double theta = 0, beta = 0, g0 = 0;
  bool deterministic = false;  // DeterministicRun
};
std::optional<Contraction> ReadContraction(const AssertionInput& input, const RunEvidence& run,
                                           const EstimatorClaimOptions& o, Trajectory& t,
                                           Verdict& verdict) {
  const std::optional<UsedCompressorConstant> alpha =
      FindCompressorConstant(run, "alpha", o.constant);
  if (!alpha) {
    verdict.detail =
        "the compressor declares no alpha (it is not in C(alpha)) and the check claims none: "
        "give `alpha`";
    return std::nullopt;
  }
  verdict.premises.push_back(CompressorErrorWithin(
      run, 1 - alpha->value, "C in C(alpha) (EF21 Definition 1)", alpha->source, alpha->claimed,
      RoundingSlack(run, o.rtol), input.confidence));
  const double a = alpha->value;
  const double root = std::sqrt(1 - a);
  Contraction c{1 - root, a == 1 ? 0.0 : (1 - a) / (1 - root), 0, DeterministicRun(run)};
  t.notes.push_back(alpha->source);
  t.notes.push_back(fmt::format("theta = {:.6g}, beta = {:.6g}", c.theta, c.beta));
  // The bound has E G^0. A deterministic run's G^0 is that expectation, measured (probe
  // shift-error at step 1). Otherwise the step-1 value is one draw, which would move the bound
  // with the draw; a bound on its expectation is used instead: 0 when the first round sends full
  // precision, else (1 - alpha) (1/n) sum_i ||y_i^0||^2, since g_i starts at 0 and the first
  // message is C(y_i^0), y_i^0 the first gradient (EF21-SGDM: the first momentum, the same).
  if (c.deterministic) {
    const std::optional<double> g0 = WorkersMeanAt(run, "shift-error", "sq_error", 1);
    if (!g0) {
      verdict.detail = "the run has no G^0 (probe shift-error at step 1, every worker)";
      return std::nullopt;
    }
    c.g0 = *g0;
    t.notes.push_back(fmt::format("G^0 = {:.6g} (probe shift-error, step 1)", c.g0));
  } else if (const std::optional<Ef21Options> ef21 =
                 Ef21OptionsOf(run.optimizer, run.hyperparameters);
             ef21 && ef21->init == Ef21Init::kFull) {
    t.notes.push_back("E G^0 = 0 (init = full: the first round sends the gradients themselves)");
  } else {
    const std::optional<double> y0 = WorkersMeanAt(run, "shift-error", "gradient_sq", 1);
    if (!y0) {
      verdict.detail = "the run has no first gradients (probe shift-error's gradient_sq at step 1)";
      return std::nullopt;
    }
    c.g0 = (1 - a) * *y0;
    t.notes.push_back(fmt::format(
        "E G^0 <= (1 - alpha) (1/n) sum_i ||y_i^0||^2 = {:.6g} (a bound: the run's draws are "
        "random; init = compressed)",
        c.g0));
  }
  return c;
}

Verdict CheckEf21Theorem1(const AssertionInput& input, const EstimatorClaimOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  Trajectory t;
  if (!ReadTrajectory(run, "EF21 Theorem 1", verdict, t)) return verdict;
  const std::optional<Contraction> c = ReadContraction(input, run, o, t, verdict);
  if (!c) return verdict;
  const double rule = 1 / (t.lipschitz * (1 + std::sqrt(c->beta / c->theta)));
  verdict.premises.push_back(
      StepSizeRule(t.gamma, rule, "1 / (L + L~ sqrt(beta / theta)) (EF21 Theorem 1)"));
  const double numerator = 2 * t.f_gap / t.gamma + c->g0 / c->theta;
  JudgeAtLastStep(input, t, numerator, "2 (f(x^0) - f*) / (gamma T) + G^0 / (theta T)",
                  c->deterministic, RoundingSlack(run, o.rtol), verdict);
  return verdict;
}

// EF21-SGDM with full gradients (docs/ef21-diana-marina.md §4): v_i^0 is the first gradient, so
// the momentum error P^0 is 0 and the bound is 2 (f(x^0) - f*) / (gamma T) + 2 G^0 / (theta T) for
// gamma <= 1 / (L + L~ sqrt(K)), K = 2 / eta^2 + 4 beta (1 + eta^2) / theta.
Verdict CheckEf21SgdmFullGradient(const AssertionInput& input, const EstimatorClaimOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  Trajectory t;
  if (!ReadTrajectory(run, "EF21-SGDM, docs/ef21-diana-marina.md §4", verdict, t)) return verdict;
  const std::optional<Ef21Options> ef21 = Ef21OptionsOf(run.optimizer, run.hyperparameters);
  const std::optional<double> eta = ef21 ? ef21->eta : std::nullopt;
  if (!eta) {
    verdict.detail = "the run's optimizer has no eta";
    return verdict;
  }
  const std::optional<Contraction> c = ReadContraction(input, run, o, t, verdict);
  if (!c) return verdict;
  verdict.premises.push_back(Premise::Met(
      "v_i^0 = grad f_i(x^0), so P^0 = 0",
      "ef21-sgdm starts each worker's momentum at its first gradient (optimizers/ef21.h), which "
      "full gradients make exact"));
  const double k = 2 / (*eta * *eta) + 4 * c->beta * (1 + *eta * *eta) / c->theta;
  const double rule = 1 / (t.lipschitz * (1 + std::sqrt(k)));
  verdict.premises.push_back(
      StepSizeRule(t.gamma, rule, "1 / (L + L~ sqrt(2 / eta^2 + 4 beta (1 + eta^2) / theta))"));
  t.notes.push_back(fmt::format("eta = {:.6g}", *eta));
  const double numerator = 2 * t.f_gap / t.gamma + 2 * c->g0 / c->theta;
  JudgeAtLastStep(input, t, numerator, "2 (f(x^0) - f*) / (gamma T) + 2 G^0 / (theta T)",
                  c->deterministic, RoundingSlack(run, o.rtol), verdict);
  return verdict;
}

// The omega of the workers' compressor as a premise of DIANA's and MARINA's proofs: unbiased,
// within omega on the run, independent across workers.
std::optional<UsedCompressorConstant> OmegaPremises(const AssertionInput& input,
                                                    const RunEvidence& run,
                                                    const EstimatorClaimOptions& o,
                                                    std::string_view statement, Verdict& verdict) {
  const std::optional<UsedCompressorConstant> omega =
      FindCompressorConstant(run, "omega", o.constant);
  if (!omega) return std::nullopt;
  verdict.premises.push_back(CompressorErrorWithin(
      run, omega->value, fmt::format("C in U(omega) ({})", statement), omega->source,
      omega->claimed, RoundingSlack(run, o.rtol), input.confidence));
  verdict.premises.push_back(
      IndependentCompressors(run, "the variance of the mean message is the mean of theirs"));
  return omega;
}

Verdict CheckMarinaTheorem21(const AssertionInput& input, const EstimatorClaimOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  Trajectory t;
  if (!ReadTrajectory(run, "MARINA Theorem 2.1", verdict, t)) return verdict;
  const std::optional<MarinaOptions> marina = MarinaOptionsOf(run.optimizer, run.hyperparameters);
  if (!marina) {
    verdict.detail = "the run's optimizer has no p";
    return verdict;
  }
  const double p = marina->p;
  // With p = 1 every round sends full gradients: no compressor is used and omega drops out.
  std::optional<UsedCompressorConstant> omega = UsedCompressorConstant{0, "p = 1: no compression"};
  if (p < 1) {
    omega = OmegaPremises(input, run, o, "MARINA Assumption 1.3", verdict);
    if (!omega) {
      verdict.detail = "the compressor declares no omega and the check claims none: give `omega`";
      return verdict;
    }
  }
  const double n = run.workers;
  const double rule = 1 / (t.lipschitz * (1 + std::sqrt((1 - p) * omega->value / (p * n))));
  verdict.premises.push_back(StepSizeRule(
      t.gamma, rule, "1 / (L (1 + sqrt((1 - p) omega / (p n)))) (MARINA Theorem 2.1)"));
  t.notes.push_back(omega->source);
  t.notes.push_back(fmt::format("p = {:.6g}, n = {}", p, run.workers));
  // With p = 1 every round sends full gradients: nothing draws.
  JudgeAtLastStep(input, t, 2 * t.f_gap / t.gamma, "2 (f(x^0) - f*) / (gamma T)",
                  p == 1 && ExactGradients(run), RoundingSlack(run, o.rtol), verdict);
  return verdict;
}

Verdict CheckDianaNonconvex(const AssertionInput& input, const EstimatorClaimOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  Trajectory t;
  if (!ReadTrajectory(run, "DIANA, docs/ef21-diana-marina.md §3", verdict, t)) return verdict;
  const std::optional<UsedCompressorConstant> omega =
      OmegaPremises(input, run, o, "DIANA's compressor class", verdict);
  const std::optional<DianaOptions> diana = DianaOptionsOf(run.optimizer, run.hyperparameters);
  const std::optional<double> a = diana ? std::optional<double>(diana->a) : std::nullopt;
  if (!omega || !a) {
    verdict.detail = !omega ? "the compressor declares no omega and the check claims none: give "
                              "`omega`"
                            : "the run's optimizer has no a";
    return verdict;
  }
  const std::optional<double> h0 = WorkersMeanAt(run, "shift-error", "gradient_sq", 1);
  if (!h0) {
    verdict.detail = "the run has no H^0 (probe shift-error's gradient_sq at step 1, every worker)";
    return verdict;
  }
  const double w = omega->value;
  const double n = run.workers;
  const double L = t.lipschitz;
  const double a_rule = 1 / (w + 1);
  verdict.premises.push_back(
      *a <= a_rule
          ? Premise::Met("a <= 1 / (omega + 1)", fmt::format("a = {:.6g} <= {:.6g}", *a, a_rule))
          : Premise::Failed(
                "a <= 1 / (omega + 1)",
                fmt::format("a = {:.6g} > {:.6g}: the shifts' contraction fails", *a, a_rule)));
  const double rule =
      w == 0 ? 1 / (2 * L) : std::min(1 / (2 * L), *a / L * std::sqrt(n / (4 * w * (*a + 2))));
  verdict.premises.push_back(
      StepSizeRule(t.gamma, rule, "min(1 / (2L), (a / L~) sqrt(n / (4 omega (a + 2))))"));
  t.notes.push_back(omega->source);
  t.notes.push_back(fmt::format("a = {:.6g}, n = {}", *a, run.workers));
  t.notes.push_back(
      fmt::format("H^0 = {:.6g} (probe shift-error's gradient_sq at step 1: h_i^0 = 0)", *h0));
  const double numerator = 2 * t.f_gap / t.gamma + 4 * L * t.gamma * w * *h0 / (n * *a);
  JudgeAtLastStep(input, t, numerator,
                  "2 (f(x^0) - f*) / (gamma T) + 4 L gamma omega H^0 / (n a T)",
                  DeterministicRun(run), RoundingSlack(run, o.rtol), verdict);
  return verdict;
}

Judgement MakeEf21Theorem1Check(OptionTable& options, const AssertionContext& /*context*/) {
  const EstimatorClaimOptions o = ReadClaimOptions(options, "alpha", Interval{0, 1, true, false});
  return [o](const AssertionInput& input) { return CheckEf21Theorem1(input, o); };
}

Judgement MakeEf21SgdmFullGradientCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const EstimatorClaimOptions o = ReadClaimOptions(options, "alpha", Interval{0, 1, true, false});
  return [o](const AssertionInput& input) { return CheckEf21SgdmFullGradient(input, o); };
}

Judgement MakeMarinaTheorem21Check(OptionTable& options, const AssertionContext& /*context*/) {
  const EstimatorClaimOptions o = ReadClaimOptions(options, "omega", Interval::NonNegative());
  return [o](const AssertionInput& input) { return CheckMarinaTheorem21(input, o); };
}

Judgement MakeDianaNonconvexCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const EstimatorClaimOptions o = ReadClaimOptions(options, "omega", Interval::NonNegative());
  return [o](const AssertionInput& input) { return CheckDianaNonconvex(input, o); };
}

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
std::vector<AssertionInfo> EstimatorAssertions() {
  return {
      {.name = "ef21-theorem1",
       .summary =
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + G^0 / (theta T) "
           "for C in C(alpha) and gamma <= 1 / (L + L~ sqrt(beta / theta)), full gradients "
           "(deterministic with a deterministic compressor, else Markov)",
       .source = "Richtárik, Sokolov & Fatkhullin, NeurIPS 2021, EF21 Theorem 1",
       .probes = {"shift-error", "q-deviate"},
       .make = &MakeEf21Theorem1Check,
       .algorithms = {"ef21"},
       .example = {ExampleSpec(kFullGradients, R"(
[[optimizer]]
name = "ef21"
compressor = { name = "top-k", k = 4 }
schedule = { name = "constant", lr = 0.1 }
)",
                               "ef21-theorem1"),
                   {{"a step size above the rule", {"optimizer.schedule.lr=0.3"}},
                    {"noisy gradients", {"problem.noise=sphere", "problem.sigma=0.5"}}}}},
      {.name = "ef21-sgdm-full-gradient",
       .summary =
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 2 G^0 / (theta "
           "T) "
           "for C in C(alpha), v_i^0 = grad f_i(x^0) and gamma <= 1 / (L + L~ sqrt(2 / eta^2 + "
           "4 beta (1 + eta^2) / theta)), full gradients (deterministic with a deterministic "
           "compressor, else Markov)",
       .source = "EF21-SGDM (Fatkhullin, Tyurin & Richtárik, NeurIPS 2023); the full-gradient "
                 "bound is "
                 "proved in docs/ef21-diana-marina.md §4",
       .probes = {"shift-error", "q-deviate"},
       .make = &MakeEf21SgdmFullGradientCheck,
       .algorithms = {"ef21-sgdm"},
       .example = {ExampleSpec(kFullGradients, R"(
[[optimizer]]
name = "ef21-sgdm"
compressor = { name = "top-k", k = 4 }
eta = 0.5
schedule = { name = "constant", lr = 0.045 }
)",
                               "ef21-sgdm-full-gradient"),
                   {{"a step size above the rule", {"optimizer.schedule.lr=0.1"}},
                    {"noisy gradients", {"problem.noise=sphere", "problem.sigma=0.5"}}}}},
      {.name = "marina-theorem21",
       .summary =
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) for independent "
           "C_i "
           "in U(omega) and gamma <= 1 / (L (1 + sqrt((1 - p) omega / (p n)))), full gradients "
           "(Markov)",
       .source = "Gorbunov, Burlachenko, Li & Richtárik, ICML 2021, MARINA Theorem 2.1",
       .probes = {"q-deviate"},
       .make = &MakeMarinaTheorem21Check,
       .algorithms = {"marina"},
       .example = {ExampleSpec(kFullGradients, R"(
[[optimizer]]
name = "marina"
compressor = { name = "random-k", k = 4 }
p = 0.2
schedule = { name = "constant", lr = 0.3 }
)",
                               "marina-theorem21"),
                   {{"a step size above the rule", {"optimizer.schedule.lr=0.9"}},
                    {"senders that share their draws (PermK)", {"optimizer.compressor=permk"}}}}},
      {.name = "diana-nonconvex",
       .summary =
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 4 L gamma omega "
           "H^0 / (n a T) for independent C_i in U(omega), a <= 1/(omega + 1) and gamma <= "
           "min(1/(2L), (a/L) sqrt(n / (4 omega (a + 2)))), full gradients (Markov)",
       .source = "DIANA (Mishchenko, Gorbunov, Takáč & Richtárik 2019, Algorithm 1); the bound is "
                 "re-derived in docs/ef21-diana-marina.md §3",
       .probes = {"shift-error", "q-deviate"},
       .make = &MakeDianaNonconvexCheck,
       .algorithms = {"diana"},
       .example = {ExampleSpec(kFullGradients, R"(
[[optimizer]]
name = "diana"
compressor = { name = "random-k", k = 4 }
schedule = { name = "constant", lr = 0.06 }
)",
                               "diana-nonconvex"),
                   {{"a step size above the rule", {"optimizer.schedule.lr=0.2"}},
                    {"senders that share their draws (PermK)", {"optimizer.compressor=permk"}}}}},
  };
}

}  // namespace lemmalab
