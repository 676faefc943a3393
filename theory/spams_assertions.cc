// SPAMS's claims (spams.txt App. A and B), judged from the probes of theory/spams_probes.h and
// the run's metrics.
//
// Lemmas 2, 4 and 5 are deterministic statements about every step of a run (given Assumptions 1
// and 3), so a single step over the bound is a violation, reported at that step. The only slack
// is for rounding: the run's state is stored in its precision, so a value may sit a few units in
// the last place above a bound it meets in exact arithmetic (option `rtol`, default 1e-6 for fp32
// runs and 1e-12 for fp64). Theorem 1 bounds an expectation; one run's average is judged with
// Markov's inequality (see CheckSpamsTheorem1).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "theory/assertion_examples.h"
#include "theory/assertions.h"
#include "theory/bounds.h"
#include "theory/metrics.h"
#include "theory/optimizer_options.h"
#include "theory/premises.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// Options every SPAMS claim may take: Assumption 1's q and Assumption 3's G as the user claims
// them (checked against the run), and the rounding slack.
struct SpamsClaimOptions {
  std::optional<double> q, g, rtol;
};

SpamsClaimOptions ReadClaimOptions(OptionTable& options) {
  SpamsClaimOptions o;
  o.q = options.GetOptionalDouble("q", Interval::ClosedOpen(0, 1));
  o.g = options.GetOptionalDouble("G", Interval::Positive());
  o.rtol = options.GetOptionalDouble("rtol", Interval::NonNegative());
  return o;
}

// Assumption 1's q for each side: the check's option `q`, else what the probe recorded for that
// side (series "q": worker 0 for the workers' compressor, kServer for the server's).
struct DeclaredQ {
  std::optional<double> workers, server;
  std::string source;
};
DeclaredQ FindQ(const SpamsClaimOptions& o, const RunEvidence& run, std::string_view probe) {
  DeclaredQ q;
  if (o.q) {
    q.workers = q.server = *o.q;
    q.source = fmt::format("q = {:.6g} (the check's option)", *o.q);
    return q;
  }
  if (const Series* s = run.Probe(probe, "q")) {
    for (const Series::Point& p : s->sample()) {
      (p.worker == kServer ? q.server : q.workers) = p.value;
    }
  }
  std::vector<std::string> parts;
  if (q.workers) parts.push_back(fmt::format("workers' q = {:.6g}", *q.workers));
  if (q.server) parts.push_back(fmt::format("server's q = {:.6g}", *q.server));
  q.source = fmt::format("{} (declared by the compressor)", fmt::join(parts, ", "));
  return q;
}

// Error feedback where SPAMS compresses: the workers of Algorithm 2 (worker_feedback), the
// server of Algorithm 3 (feedback).
Premise SpamsFeedback(const RunEvidence& run) {
  const char* key = run.hyperparameters.Has("worker_feedback") ? "worker_feedback" : "feedback";
  return OptionIs(run, key, "classic", "Lemma 2's recursion is classic error feedback");
}

// The premises of the lemmas that bound through q and G (Lemmas 2 and 4, Theorem 1): the
// algorithm, q and G as the run keeps to them, error feedback.
void QAndGPremises(Verdict& v, const RunEvidence& run, const DeclaredQ& q, const UsedConstant& g,
                   double rtol) {
  v.premises.push_back(CompressorWithinQ(run, q.workers, q.server, q.source, rtol));
  v.premises.push_back(GradientsWithin(run, g, "spams.txt Assumption 3"));
  v.premises.push_back(SpamsFeedback(run));
}

// Shared by Lemmas 2 and 4: every point of `series` against bound(q of its side), with the
// run's G. `what` names the quantity in messages.
Verdict CheckPerStepBound(const AssertionInput& input, const SpamsClaimOptions& o,
                          std::string_view probe, std::string_view series_name,
                          std::string_view what, double (*bound_of)(double q, double grad_bound),
                          std::string_view bound_text) {
  const RunEvidence& run = input.runs.front();
  const Series* series = run.Probe(probe, series_name);
  if (series == nullptr || series->empty()) {
    return Verdict::Inconclusive(fmt::format("the run has no {} series (probe {})", what, probe));
  }
  const DeclaredQ q = FindQ(o, run, probe);
  if (!q.workers && !q.server) {
    return Verdict::Inconclusive(
        "the compressor declares no q (spams.txt Assumption 1 does not hold for it, or the "
        "optimizer keeps no compression records); give the check a `q`");
  }
  const std::optional<UsedConstant> g = FindUsedConstant(run, "G", o.g);
  if (!g) return Verdict::Inconclusive("the constant G (Assumption 3) is unknown");
  const double rtol = RoundingSlack(run, o.rtol);

  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  // The q the bound uses is that of whichever side compressed (Lemma 4 records it beside v_hat,
  // at the server, even when the workers compress): it applies to every call.
  DeclaredQ any_side = q;
  if (!any_side.workers) any_side.workers = q.server;
  if (!any_side.server) any_side.server = q.workers;
  QAndGPremises(verdict, run, any_side, *g, rtol);
  // Every value of each sender, by its exact extremes, against its side's bound.
  double worst_ratio = -1;
  std::optional<Series::Point> worst_over;
  for (const int sender : series->workers()) {
    const std::optional<double> side_q = sender == kServer ? q.server : q.workers;
    if (!side_q) {
      return Verdict::Inconclusive(fmt::format("no q for the {}'s compressor; give the check a `q`",
                                               sender == kServer ? "server" : "workers"));
    }
    const double bound = bound_of(*side_q, g->value);
    const Extent e = series->extent(sender);
    const Series::Point largest =
        e.finite() ? Series::Point{e.max_step, sender, e.max}
                   : Series::Point{e.first_non_finite_step, sender, e.first_non_finite};
    double ratio = bound > 0 ? largest.value / bound : (largest.value > 0 ? INFINITY : 0.0);
    if (std::isnan(ratio)) ratio = INFINITY;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      verdict.worst_step = largest.step;
      verdict.worst_worker = sender;
      verdict.measured_value = largest.value;
      verdict.bound_value = bound;
    }
    if (!(largest.value <= bound * (1 + rtol)) && !worst_over) worst_over = largest;
  }
  // One level for every value when both sides use one q.
  verdict.statistic =
      Verdict::Statistic{{series->name()}, "max", q.workers == q.server || !q.workers || !q.server};
  verdict.measured =
      fmt::format("max {} {:.6g} (step {}), {:.4g} of the bound, {}", what, verdict.measured_value,
                  *verdict.worst_step, worst_ratio, OverAllValues(*series));
  verdict.bound = fmt::format("<= {} = {:.6g}", bound_text, verdict.bound_value);
  verdict.detail =
      fmt::format("{}; {}; rounding slack rtol = {:.1g}", q.source, g->description, rtol);
  if (worst_over) {
    verdict.kind = VerdictKind::kViolated;
    verdict.detail += fmt::format("; over the bound at step {} ({})", worst_over->step,
                                  SenderName(worst_over->worker));
  }
  return verdict;
}

// Lemma 2 (lines 498-513): ||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker, from
// Eq. 3 by recursion (deterministic given ||C(x) - x|| <= q ||x|| and ||g|| <= G).
Verdict CheckSpamsLemma2(const AssertionInput& input, const SpamsClaimOptions& o) {
  return CheckPerStepBound(input, o, "spams-ef", "sq_norm", "||e_t||^2", &SpamsLemma2ErrorBound,
                           "4 q^2 G^2 / (1-q^2)^2");
}

// Lemma 4 (lines 536-549): v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 for every t and j.
Verdict CheckSpamsLemma4(const AssertionInput& input, const SpamsClaimOptions& o) {
  return CheckPerStepBound(input, o, "spams-vhat", "max_vhat", "max_j v_hat_t,j",
                           &SpamsLemma4VHatBound, "4 (1+q^2)^3 G^2 / (1-q^2)^2");
}

// Lemma 5 (lines 601-622): sum_{t<=T} ||D_t||_1 <= d / sqrt(eps) and sum_{t<=T} ||D_t||^2 <= d /
// eps for every T. Both sums telescope because v_hat never decreases; the probe takes absolute
// values, so a decreasing v_hat (an implementation that is not AMSGrad) shows as a violation.
// The first step whose cumulative sum exceeds its bound is the worst step.
Verdict CheckSpamsLemma5(const AssertionInput& input, std::optional<double> rtol_option) {
  const RunEvidence& run = input.runs.front();
  const Series* l1 = run.Probe("spams-d", "l1");
  const Series* sq = run.Probe("spams-d", "sq");
  if (l1 == nullptr || sq == nullptr || l1->empty() || sq->empty()) {
    return Verdict::Inconclusive("the run has no D_t series (probe spams-d)");
  }
  const std::optional<MomentOptions> moments = MomentOptionsOf(run.optimizer, run.hyperparameters);
  if (!moments) return Verdict::Inconclusive("the run's optimizer has no eps");
  const double eps = moments->eps;
  const double d = static_cast<double>(run.dimension);
  const SpamsLemma5Bounds bounds = SpamsLemma5(d, eps);
  const double rtol = RoundingSlack(run, rtol_option);

  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  std::vector<std::string> parts;
  double worst_fraction = -1;
  for (const auto& [series, bound, name] : {std::tuple{l1, bounds.l1_sum, "sum ||D_t||_1"},
                                            std::tuple{sq, bounds.squared_sum, "sum ||D_t||^2"}}) {
    // The sum over every step (its extent), whatever was recorded. Its terms are norms, so the
    // partial sums only grow: the sum at T decides every T.
    const Extent e = series->extent();
    const double sum = e.finite() ? e.sum : e.first_non_finite;
    const double fraction = sum / bound;
    parts.push_back(fmt::format("{} = {:.6g} ({:.4g} of {:.6g}) over all {} steps", name, sum,
                                fraction, bound, e.count));
    if (!(sum <= bound * (1 + rtol))) {
      // Where the running sum first passes the bound, when the recorded points are every term.
      std::int64_t at = e.last_step;
      if (series->Complete()) {
        double partial = 0;
        for (const Series::Point& p : series->points()) {
          partial += p.value;
          if (!(partial <= bound * (1 + rtol))) {
            at = p.step;
            break;
          }
        }
      }
      if (verdict.kind != VerdictKind::kViolated || at < *verdict.worst_step) {
        verdict.worst_step = at;
        verdict.measured_value = sum;
        verdict.bound_value = bound;
        verdict.statistic = Verdict::Statistic{{series->name()}, "running sum"};
      }
      verdict.kind = VerdictKind::kViolated;
    } else if (verdict.kind == VerdictKind::kHolds && fraction > worst_fraction) {
      worst_fraction = fraction;
      verdict.worst_step = e.last_step;
      verdict.measured_value = sum;
      verdict.bound_value = bound;
      verdict.statistic = Verdict::Statistic{{series->name()}, "running sum"};
    }
  }
  verdict.worst_worker = kServer;
  verdict.measured = fmt::format("{}", fmt::join(parts, "; "));
  verdict.bound =
      fmt::format("<= d / sqrt(eps) = {:.6g} and d / eps = {:.6g} (d = {}, eps = {:.3g})",
                  bounds.l1_sum, bounds.squared_sum, run.dimension, eps);
  verdict.detail = fmt::format(
      "deterministic (v_hat_0 = 0, v_hat non-decreasing); rounding slack "
      "rtol = {:.1g}",
      rtol);
  if (verdict.kind == VerdictKind::kViolated) {
    verdict.detail += fmt::format("; the sum is over its bound by step {}", *verdict.worst_step);
  }
  return verdict;
}

// Theorem 1 (lines 221-222, proof 552-590): (1/T) sum_{t=1}^T E||grad f(theta_t)||^2 <= the
// bound of theory/bounds.h (SpamsTheorem1) for a constant step size eta <= eta_max.
//
// Measured: the run's (1/T) sum_{t=1}^T ||grad f(theta_t)||^2 from the metric grad_sq_norm, whose
// step s value is the paper's theta_{s+1} (step 0: theta_1, the initial point), so steps
// 0..T-1; it needs eval_every = 1. The verdict uses the bound the proof supports (its
// penultimate line, with C2 in the sigma^2 term: the printed C1 follows only when C2 <= C1, which
// fails for beta1 > 1/2); the printed bound is shown beside it. One run against an expectation:
// ExpectationVerdict. Premises: Assumptions 1-4 (q as the run keeps to it, L, G along the
// trajectory, sigma and sigma_g known), eta constant and <= eta_max, beta1 < 1, eps > 0, error
// feedback, no weight decay. Vacuous when the bound is not below min(G^2, ||grad f(theta_1)||^2).
//
// Corollaries 1 and 2 (lines 266-316) are Theorem 1 at a prescribed step size: eta = L sqrt(n/T)
// (Algorithm 2), eta = L / sqrt(T) with n = 1 (Algorithm 3). `corollary` (0 for the theorem)
// adds the premise that the run used it; Theorem 1's own eta <= eta_max, which the corollaries do
// not restate, stays a premise.
Verdict CheckSpamsTheorem1Impl(const AssertionInput& input, const SpamsClaimOptions& o,
                               bool printed, int corollary) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  verdict.premises.push_back(RunCompleted(run));
  const auto T = run.steps_done;
  if (T < 1) return Verdict::Inconclusive("the run took no step");
  if (corollary == 2) {
    verdict.premises.push_back(
        run.workers == 1
            ? Premise::Met("n = 1 (Corollary 2)", "one worker")
            : Premise::Failed("n = 1 (Corollary 2)", fmt::format("n = {}", run.workers)));
  }

  std::vector<std::string> missing, notes;
  const auto constant = [&](std::string_view name) -> const Constant* {
    const Constant* c = run.FindConstant(name);
    if (c == nullptr) {
      missing.emplace_back(name);
    } else {
      notes.push_back(DescribeConstant(*c));
    }
    return c;
  };
  const Constant* L = constant("L");
  const Constant* sigma = constant("sigma");
  const Constant* f_star = constant("f_star");
  const Constant* sigma_g = nullptr;
  if (run.workers > 1) {
    sigma_g = constant("sigma_g");
  } else {
    notes.emplace_back("sigma_g = 0 (n = 1)");
  }
  const std::optional<UsedConstant> G = FindUsedConstant(run, "G", o.g);
  if (!G) missing.emplace_back("G");
  if (!missing.empty()) {
    verdict.detail = fmt::format("unknown constants: {}", fmt::join(missing, ", "));
    return verdict;
  }
  const DeclaredQ q = FindQ(o, run, "spams-ef");
  // Algorithm 2 compresses at the workers; Algorithm 3 (spams) at the server.
  const std::optional<double> q_value = q.workers ? q.workers : q.server;
  if (!q_value) {
    verdict.detail = "the compressor declares no q (probe spams-ef) and the check has no `q`";
    return verdict;
  }
  if (*q_value >= 1) {
    verdict.detail = fmt::format("q = {:.6g} >= 1: spams.txt Assumption 1 needs q < 1", *q_value);
    return verdict;
  }
  notes.push_back(q.source);
  QAndGPremises(verdict, run, q, *G, RoundingSlack(run, o.rtol));
  verdict.premises.push_back(
      Premise::Met("Assumptions 2 and 4 (L, sigma, sigma_g known)",
                   fmt::format("{}", fmt::join(std::span(notes).first(notes.size() - 1), "; "))));
  verdict.premises.push_back(ConstantStepSize(run));
  verdict.premises.push_back(NoWeightDecay(run));

  const std::optional<GradientAverage> average = ReadGradientAverage(run, T, verdict.detail);
  if (!average) return verdict;
  verdict.statistic = average->statistic;
  const double eta = average->step_size;
  const double measured = average->sum / static_cast<double>(T);

  const std::optional<MomentOptions> moments = MomentOptionsOf(run.optimizer, run.hyperparameters);
  if (!moments) {
    verdict.detail = fmt::format("optimizer '{}' has no beta1 and eps", run.optimizer);
    return verdict;
  }
  SpamsConstants k;
  k.q = *q_value;
  k.grad_bound = G->value;
  k.lipschitz = L->value;
  k.eps = moments->eps;
  k.beta1 = moments->beta1;
  k.eta = eta;
  k.n = run.workers;
  k.d = static_cast<double>(run.dimension);
  k.sigma = sigma->value;
  k.sigma_g = sigma_g == nullptr ? 0.0 : sigma_g->value;
  k.f_gap = std::max(0.0, average->initial_loss - f_star->value);
  const SpamsTheorem1Result r = SpamsTheorem1(k, static_cast<double>(T));
  if (corollary > 0) {
    const double prescribed = corollary == 1 ? k.lipschitz * std::sqrt(k.n / static_cast<double>(T))
                                             : k.lipschitz / std::sqrt(static_cast<double>(T));
    const std::string name =
        fmt::format("eta = {} (Corollary {}'s step size)",
                    corollary == 1 ? "L sqrt(n / T)" : "L / sqrt(T)", corollary);
    verdict.premises.push_back(
        std::abs(eta - prescribed) <= 1e-9 * prescribed
            ? Premise::Met(name, fmt::format("eta = {:.6g}", eta))
            : Premise::Failed(name, fmt::format("eta = {:.6g}, the corollary's {:.6g} (give the "
                                                "schedule lr = L, workers_exponent = {}, "
                                                "steps_exponent = -0.5)",
                                                eta, prescribed, corollary == 1 ? 0.5 : 0.0)));
  }
  const std::string eta_name = "eta <= eta_max = eps / (3 C0 sqrt(2L max(2L, C2)))";
  verdict.premises.push_back(
      r.step_size_admissible
          ? Premise::Met(eta_name, fmt::format("eta = {:.6g} <= {:.6g}", eta, r.eta_max))
          : Premise::Failed(eta_name, fmt::format("eta = {:.6g} > {:.6g}: Theorem 1 makes no "
                                                  "claim at this step size",
                                                  eta, r.eta_max)));
  verdict.measured_value = measured;
  verdict.measured =
      fmt::format("(1/T) sum_t ||grad f(theta_t)||^2 = {:.6g} over T = {} iterates", measured, T);
  const double trivial = std::min(G->value * G->value, average->grad_sq.front());
  const std::string trivial_text =
      fmt::format("min(G^2, ||grad f(theta_1)||^2) = min({:.4g}, {:.4g})", G->value * G->value,
                  average->grad_sq.front());
  const auto judge = [&](double bound, std::string_view form) {
    return ExpectationForm(std::string(form), fmt::format("<= {:.6g} (E[.], {})", bound, form),
                           measured, bound, trivial, trivial_text, input.confidence);
  };
  const BoundForm proof = judge(r.bound_proof, "the proof's C2 form");
  BoundForm statement = judge(r.bound, "Theorem 1 as printed (C1)");
  // The printed statement replaces C2 by C1 in its last step "because C2 <= C1" (line 676),
  // which fails once beta1 / (1 - beta1) or 2q / (1 - q^2) exceeds 1: then the printed bound does
  // not follow from the proof, and only the proof's form says anything.
  const std::string c2_name = "C2 <= C1 (the printed statement's last step, line 676)";
  const std::string c2_numbers = fmt::format(
      "C1 = {:.4g}, C2 = {:.4g} (beta1 = {:.3g}, q = {:.3g})", r.c1, r.c2, k.beta1, k.q);
  if (printed) {
    Premise c2 =
        r.c2 <= r.c1 ? Premise::Met(c2_name, c2_numbers) : Premise::Failed(c2_name, c2_numbers);
    c2.own_form_only = true;  // the proof's form does not use it
    verdict.premises.push_back(std::move(c2));
  } else if (r.c2 > r.c1 && statement.kind != VerdictKind::kInconclusive) {
    statement.detail = fmt::format(
        "does not follow from the proof here ({}); the bound alone "
        "would say {}",
        c2_numbers, VerdictName(statement.kind));
    statement.kind = VerdictKind::kInconclusive;
  }
  const BoundForm& main = printed ? statement : proof;
  verdict.kind = main.kind;
  verdict.premises.push_back(OptimalValueFor(*f_star, verdict.kind));
  verdict.bound_value = main.bound_value;
  verdict.bound = main.bound;
  verdict.other_forms.push_back(printed ? proof : statement);
  notes.push_back(fmt::format("f(theta_1) - f* = {:.6g}", k.f_gap));
  verdict.detail = fmt::format(
      "{}one run against an expectation bound: holds at or below the bound, violated above "
      "bound / {:.3g} (Markov at confidence {}), inconclusive between; {}",
      main.detail.empty() ? "" : main.detail + "; ", 1 - input.confidence, input.confidence,
      fmt::join(notes, "; "));
  return verdict;
}

Judgement MakeSpamsLemma2Check(OptionTable& options, const AssertionContext& /*context*/) {
  const SpamsClaimOptions o = ReadClaimOptions(options);
  return [o](const AssertionInput& input) { return CheckSpamsLemma2(input, o); };
}

Judgement MakeSpamsLemma4Check(OptionTable& options, const AssertionContext& /*context*/) {
  const SpamsClaimOptions o = ReadClaimOptions(options);
  return [o](const AssertionInput& input) { return CheckSpamsLemma4(input, o); };
}

Judgement MakeSpamsLemma5Check(OptionTable& options, const AssertionContext& /*context*/) {
  const std::optional<double> rtol = options.GetOptionalDouble("rtol", Interval::NonNegative());
  return [rtol](const AssertionInput& input) { return CheckSpamsLemma5(input, rtol); };
}

Judgement MakeTheoremOrCorollary(OptionTable& options, int corollary) {
  const SpamsClaimOptions o = ReadClaimOptions(options);
  const bool printed = Choose(options, "bound", "proof", {"proof", "printed"}) == "printed";
  return [o, printed, corollary](const AssertionInput& input) {
    return CheckSpamsTheorem1Impl(input, o, printed, corollary);
  };
}

// Lemmas 1 and 3 (lines 527-545) bound sums of expectations by the run's own sum_t E||grad
// f(theta_t)||^2 (steps 0..T-1 of grad_sq_norm are theta_1..theta_T): one run against an
// expectation (ExpectationVerdict). Lemma 1, sum_t ||m'_t||^2 <= T sigma^2 + sum_t ||grad f||^2,
// needs unbiased gradients with variance sigma^2 (Assumption 4 i); Lemma 3, sum_t ||E_t||^2 <=
// 4 T q^2 / (1-q^2)^2 (sigma^2 + sigma_g^2) + 4 q^2 / (1-q^2)^2 sum_t ||grad f||^2, also
// Assumption 1's q (as the run keeps to it), Assumption 4 ii's sigma_g and error feedback.
Verdict CheckSpamsMomentLemma(const AssertionInput& input, const SpamsClaimOptions& o,
                              bool lemma3) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  const Series* series = run.Probe("spams-moments", lemma3 ? "error_average_sq" : "momentum_sq");
  const Series* grad = run.Metric(metric::kGradSqNorm);
  if (series == nullptr || series->empty() || grad == nullptr) {
    v.detail = "the run has no spams-moments series or grad_sq_norm metric";
    return v;
  }
  const std::int64_t T = run.steps_done;
  // The sum over every step (the series' extent), whatever was recorded.
  const Extent terms = series->extent();
  const double measured = terms.finite() ? terms.sum : terms.first_non_finite;
  double grad_sum = 0;
  std::int64_t evaluations = 0;
  for (const Series::Point& p : grad->points()) {
    if (p.step >= 0 && p.step < T) {
      grad_sum += p.value;
      ++evaluations;
    }
  }
  if (evaluations != T) {
    v.detail = "the sum of ||grad f(theta_t)||^2 needs every iterate: run with eval_every = 1";
    return v;
  }
  const Constant* sigma = run.FindConstant("sigma");
  const Constant* sigma_g = run.workers > 1 ? run.FindConstant("sigma_g") : nullptr;
  if (sigma == nullptr || (lemma3 && run.workers > 1 && sigma_g == nullptr)) {
    v.detail = "the problem does not know sigma (and sigma_g for n > 1): Assumption 4";
    return v;
  }
  std::vector<std::string> constants = {DescribeConstant(*sigma)};
  double bound = 0;
  if (lemma3) {
    const DeclaredQ q = FindQ(o, run, "spams-ef");
    const std::optional<double> q_value = q.workers ? q.workers : q.server;
    if (!q_value) {
      v.detail = "the compressor declares no q and the check has no `q`";
      return v;
    }
    v.premises.push_back(
        CompressorWithinQ(run, q.workers, q.server, q.source, RoundingSlack(run, o.rtol)));
    v.premises.push_back(SpamsFeedback(run));
    const double s_g = sigma_g == nullptr ? 0.0 : sigma_g->value;
    if (sigma_g != nullptr) constants.push_back(DescribeConstant(*sigma_g));
    constants.push_back(q.source);
    bound =
        SpamsLemma3ErrorAverageBound(*q_value, sigma->value, s_g, static_cast<double>(T), grad_sum);
  } else {
    bound = SpamsLemma1MomentumBound(sigma->value, static_cast<double>(T), grad_sum);
  }
  v.measured_value = measured;
  v.bound_value = bound;
  v.measured = fmt::format("sum_t ||{}||^2 = {:.6g} over all {} steps ({} recorded), T = {}",
                           lemma3 ? "E_t" : "m'_t", measured, terms.count, series->recorded(), T);
  v.bound = lemma3 ? fmt::format(
                         "<= 4 T q^2/(1-q^2)^2 (sigma^2 + sigma_g^2) + 4 q^2/(1-q^2)^2 "
                         "sum_t ||grad f||^2 = {:.6g} (E[.])",
                         bound)
                   : fmt::format("<= T sigma^2 + sum_t ||grad f||^2 = {:.6g} (E[.])", bound);
  v.kind = ExpectationVerdict(measured, bound, input.confidence);
  v.worst_step = T;
  v.detail = fmt::format(
      "sum_t ||grad f(theta_t)||^2 = {:.6g} from the run; one run against an expectation: holds "
      "at or below the bound, violated above bound / {:.3g}, inconclusive between; {}",
      grad_sum, 1 - input.confidence, fmt::join(constants, "; "));
  return v;
}

Judgement MakeSpamsTheorem1Check(OptionTable& options, const AssertionContext& /*context*/) {
  return MakeTheoremOrCorollary(options, 0);
}

Judgement MakeSpamsCorollary1Check(OptionTable& options, const AssertionContext& /*context*/) {
  return MakeTheoremOrCorollary(options, 1);
}

Judgement MakeSpamsCorollary2Check(OptionTable& options, const AssertionContext& /*context*/) {
  return MakeTheoremOrCorollary(options, 2);
}

Judgement MakeSpamsLemma1Check(OptionTable& options, const AssertionContext& /*context*/) {
  const SpamsClaimOptions o = ReadClaimOptions(options);
  return [o](const AssertionInput& input) { return CheckSpamsMomentLemma(input, o, false); };
}

Judgement MakeSpamsLemma3Check(OptionTable& options, const AssertionContext& /*context*/) {
  const SpamsClaimOptions o = ReadClaimOptions(options);
  return [o](const AssertionInput& input) { return CheckSpamsMomentLemma(input, o, true); };
}

// SPAMS where Theorem 1's step-size condition can hold: eps = 1e4 makes eta_max large.
constexpr std::string_view kDistSpamsLargeEps = R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 9 }
eps = 1e4
beta1 = 0.0
beta2 = 0.5
schedule = { name = "constant", lr = 16 }
)";

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
std::vector<AssertionInfo> SpamsAssertions() {
  return {
      {.name = "spams-corollary1",
       .summary = "Theorem 1 at Corollary 1's step size eta = L sqrt(n/T) (Algorithm 2)",
       .source = "spams.txt Corollary 1 (lines 266-270)",
       .probes = {"spams-ef", "q-deviate"},
       .make = &MakeSpamsCorollary1Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 9 }
beta1 = 0.0
eps = 1e4
schedule = { name = "constant", lr = 1.0, workers_exponent = 0.5, steps_exponent = -0.5 }
)",
                               "spams-corollary1", "expect = \"vacuous\"\n"),
                   {{"a step size that is not the corollary's",
                     {"optimizer.schedule.workers_exponent=0.0"}}}}},
      {.name = "spams-corollary2",
       .summary = "Theorem 1 at Corollary 2's step size eta = L / sqrt(T), n = 1 (Algorithm 3)",
       .source = "spams.txt Corollary 2 (lines 311-316)",
       .probes = {"spams-ef", "q-deviate"},
       .make = &MakeSpamsCorollary2Check,
       .algorithms = {"spams"},
       .example = {ExampleSpec(R"(seed = 2
steps = 300
workers = 1
precision = "fp64"

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1
)",
                               R"(
[[optimizer]]
name = "spams"
compressor = { name = "top-k", k = 9 }
eps = 1e4
beta1 = 0.0
schedule = { name = "constant", lr = 1.0, steps_exponent = -0.5 }
)",
                               "spams-corollary2", "expect = \"vacuous\"\n"),
                   {{"two workers: Corollary 2 is about one", {"workers=2"}}}}},
      {.name = "spams-lemma1",
       .summary = "sum_t ||m'_t||^2 <= T sigma^2 + sum_t ||grad f(theta_t)||^2 (the proof's "
                  "momentum of "
                  "the averaged uncompressed gradients; Markov at the confidence)",
       .source = "spams.txt Lemma 1 (lines 475-490)",
       .probes = {"spams-moments"},
       .make = &MakeSpamsLemma1Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-lemma1")}},
      {.name = "spams-lemma2",
       .summary = "||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker",
       .source = "spams.txt Lemma 2 (lines 498-513, Eq. 3)",
       .probes = {"spams-ef", "q-deviate"},
       .make = &MakeSpamsLemma2Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpams, "spams-lemma2"),
                   {{"a q the compressor does not keep", {}, "q = 0.1\n"},
                    {"iterates that leave the ball where G holds",
                     {"optimizer.compressor.k=2", "optimizer.schedule.lr=2.0"}}}}},
      {.name = "spams-lemma3",
       .summary = "sum_t ||E_t||^2 <= 4Tq^2/(1-q^2)^2 (sigma^2 + sigma_g^2) + 4q^2/(1-q^2)^2 sum_t "
                  "||grad f(theta_t)||^2 (E_t the moving average of the averaged errors; Markov)",
       .source = "spams.txt Lemma 3 (lines 515-530)",
       .probes = {"spams-moments", "spams-ef", "q-deviate"},
       .make = &MakeSpamsLemma3Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-lemma3"),
                   {{"a q the compressor does not keep", {}, "q = 0.1\n"}}}},
      {.name = "spams-lemma4",
       .summary = "max_j v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 at every step",
       .source = "spams.txt Lemma 4 (lines 536-549)",
       .probes = {"spams-vhat", "q-deviate"},
       .make = &MakeSpamsLemma4Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpams, "spams-lemma4"),
                   {{"a q the compressor does not keep", {}, "q = 0.1\n"}}}},
      {.name = "spams-lemma5",
       .summary = "sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps at every step",
       .source = "spams.txt Lemma 5 (lines 601-622)",
       .probes = {"spams-d"},
       .make = &MakeSpamsLemma5Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpams, "spams-lemma5")}},
      {.name = "spams-theorem1",
       .summary =
           "(1/T) sum_t ||grad f(theta_t)||^2 <= Theorem 1's bound (Markov at the confidence)",
       .source = "spams.txt Theorem 1 (lines 221-222; proof lines 552-590)",
       .probes = {"spams-ef", "q-deviate"},
       .make = &MakeSpamsTheorem1Check,
       .algorithms = {"spams", "dist-spams"},
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-theorem1"),
                   {{"a step size above eta_max", {"optimizer.schedule.lr=100"}}}}},
  };
}

}  // namespace lemmalab
