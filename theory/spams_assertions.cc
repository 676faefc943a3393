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
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "optimizers/spams.h"
#include "theory/assertions.h"
#include "theory/bounds.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// The relative slack for rounding (see the top of the file).
double RoundingTolerance(const AssertionInput& input, const RunEvidence& run) {
  const double fallback = run.precision == Precision::kFp64 ? 1e-12 : 1e-6;
  return input.options.GetDouble("rtol", fallback, Interval::NonNegative());
}

bool IsSpams(const RunEvidence& run) {
  return run.optimizer == "spams" || run.optimizer == "dist-spams";
}

// A SPAMS option of the run (spams.h's defaults); nullopt for another optimizer that does not set
// it, since its default need not be SPAMS's.
std::optional<double> SpamsOption(const RunEvidence& run, std::string_view key, double fallback) {
  OptionTable* table = run.optimizer_options.get();
  if (table != nullptr && table->Has(key)) return table->GetDouble(key, fallback);
  if (IsSpams(run)) return fallback;
  return std::nullopt;
}

// Assumption 1's q for the points of `worker` (a worker index or kServer): the check's option
// `q`, else what the probe recorded for that side (series "q": worker 0 for the workers'
// compressor, kServer for the server's).
struct DeclaredQ {
  std::optional<double> workers, server;
  std::string source;
};
DeclaredQ FindQ(const AssertionInput& input, const RunEvidence& run, std::string_view probe) {
  DeclaredQ q;
  if (input.options.Has("q")) {
    q.workers = q.server = input.options.GetDouble("q", 0, Interval::NonNegative());
    q.source = fmt::format("q = {:.6g} (the check's option)", *q.workers);
    return q;
  }
  if (const Series* s = run.Probe(probe, "q")) {
    for (const Series::Point& p : s->points) {
      (p.worker == kServer ? q.server : q.workers) = p.value;
    }
  }
  std::vector<std::string> parts;
  if (q.workers) parts.push_back(fmt::format("workers' q = {:.6g}", *q.workers));
  if (q.server) parts.push_back(fmt::format("server's q = {:.6g}", *q.server));
  q.source = fmt::format("{} (declared by the compressor)", fmt::join(parts, ", "));
  return q;
}

// Shared by Lemmas 2 and 4: every point of `series` against bound(q of its side), with the
// run's G. `what` names the quantity in messages.
Verdict CheckPerStepBound(const AssertionInput& input, std::string_view probe,
                          std::string_view series_name, std::string_view what,
                          double (*bound_of)(double q, double grad_bound),
                          std::string_view bound_text) {
  const RunEvidence& run = input.runs.front();
  const Series* series = run.Probe(probe, series_name);
  if (series == nullptr || series->empty()) {
    return Verdict::Inconclusive(fmt::format("the run has no {} series (probe {})", what, probe));
  }
  const DeclaredQ q = FindQ(input, run, probe);
  if (!q.workers && !q.server) {
    return Verdict::Inconclusive(
        "the compressor declares no q (spams.txt Assumption 1 does not hold for it, or the "
        "optimizer keeps no compression records); give the check a `q`");
  }
  const Constant* g = run.FindConstant("G");
  if (g == nullptr) return Verdict::Inconclusive("the constant G (Assumption 3) is unknown");
  const double rtol = RoundingTolerance(input, run);

  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  double worst_ratio = -1;
  std::optional<Series::Point> first_violation;
  std::int64_t violations = 0;
  for (const Series::Point& p : series->points) {
    const std::optional<double> side_q = p.worker == kServer ? q.server : q.workers;
    if (!side_q) {
      return Verdict::Inconclusive(fmt::format("no q for the {}'s compressor; give the check a `q`",
                                               p.worker == kServer ? "server" : "workers"));
    }
    if (*side_q >= 1) {
      return Verdict::Inconclusive(
          fmt::format("q = {:.6g} >= 1: spams.txt Assumption 1 needs q < 1", *side_q));
    }
    const double bound = bound_of(*side_q, g->value);
    const double ratio = bound > 0 ? p.value / bound : (p.value > 0 ? INFINITY : 0.0);
    const bool over = !(p.value <= bound * (1 + rtol));  // NaN counts as over
    if (over) {
      ++violations;
      if (!first_violation) first_violation = p;
    }
    if (std::isnan(ratio) || ratio > worst_ratio || !verdict.worst_step) {
      worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
      verdict.worst_step = p.step;
      verdict.worst_worker = p.worker;
      verdict.measured_value = p.value;
      verdict.bound_value = bound;
    }
  }
  verdict.measured = fmt::format("max {} {:.6g} (step {}), {:.4g} of the bound", what,
                                 verdict.measured_value, *verdict.worst_step, worst_ratio);
  verdict.bound = fmt::format("<= {} = {:.6g}", bound_text, verdict.bound_value);
  std::string g_note = g->certainty == Certainty::kEstimate
                           ? "; G is an estimate, not a proven bound (when it is the run's "
                             "largest stochastic gradient norm, Assumption 3 holds on this run by "
                             "construction)"
                           : "";
  verdict.detail = fmt::format("{}; {}{}; rounding slack rtol = {:.1g}", q.source,
                               DescribeConstant(*g), g_note, rtol);
  if (violations > 0) {
    verdict.kind = VerdictKind::kViolated;
    verdict.detail += fmt::format("; {} of {} points over the bound, the first at step {} ({})",
                                  violations, series->points.size(), first_violation->step,
                                  first_violation->worker == kServer
                                      ? std::string("server")
                                      : fmt::format("worker {}", first_violation->worker));
  } else if (!run.completed()) {
    verdict.kind = VerdictKind::kInconclusive;
    verdict.detail +=
        fmt::format("; the steps recorded meet the bound, but the run {}", run.status);
  }
  return verdict;
}

}  // namespace

// Lemma 2 (lines 534-538): ||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker, from
// Eq. 3 by recursion (deterministic given ||C(x) - x|| <= q ||x|| and ||g|| <= G).
Verdict CheckSpamsLemma2(const AssertionInput& input) {
  return CheckPerStepBound(input, "spams-ef", "sq_norm", "||e_t||^2", &SpamsLemma2ErrorBound,
                           "4 q^2 G^2 / (1-q^2)^2");
}

// Lemma 4 (lines 547-549): v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 for every t and j.
Verdict CheckSpamsLemma4(const AssertionInput& input) {
  return CheckPerStepBound(input, "spams-vhat", "max_vhat", "max_j v_hat_t,j",
                           &SpamsLemma4VHatBound, "4 (1+q^2)^3 G^2 / (1-q^2)^2");
}

// Lemma 5 (lines 566-571): sum_{t<=T} ||D_t||_1 <= d / sqrt(eps) and sum_{t<=T} ||D_t||^2 <= d /
// eps for every T. Both sums telescope because v_hat never decreases; the probe takes absolute
// values, so a decreasing v_hat (an implementation that is not AMSGrad) shows as a violation.
// The first step whose cumulative sum exceeds its bound is the worst step.
Verdict CheckSpamsLemma5(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  const Series* l1 = run.Probe("spams-d", "l1");
  const Series* sq = run.Probe("spams-d", "sq");
  if (l1 == nullptr || sq == nullptr || l1->empty() || sq->empty()) {
    return Verdict::Inconclusive("the run has no D_t series (probe spams-d)");
  }
  std::optional<double> eps = SpamsOption(run, "eps", SpamsOptions{}.eps);
  if (input.options.Has("eps")) eps = input.options.GetDouble("eps", 0, Interval::Positive());
  if (!eps) {
    return Verdict::Inconclusive(fmt::format(
        "optimizer '{}' is not SPAMS and its eps is not in the run's options; give the check an "
        "`eps`",
        run.optimizer));
  }
  const double d = static_cast<double>(run.dimension);
  const SpamsLemma5Bounds bounds = SpamsLemma5(d, *eps);
  const double rtol = RoundingTolerance(input, run);

  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  std::vector<std::string> parts;
  double worst_fraction = -1;
  for (const auto& [series, bound, name] : {std::tuple{l1, bounds.l1_sum, "sum ||D_t||_1"},
                                            std::tuple{sq, bounds.squared_sum, "sum ||D_t||^2"}}) {
    double sum = 0;
    std::optional<std::int64_t> over;
    for (const Series::Point& p : series->points) {
      sum += p.value;
      if (!over && !(sum <= bound * (1 + rtol))) over = p.step;
    }
    const double fraction = sum / bound;
    parts.push_back(fmt::format("{} = {:.6g} ({:.4g} of {:.6g})", name, sum, fraction, bound));
    if (over) {
      if (verdict.kind != VerdictKind::kViolated || *over < *verdict.worst_step) {
        verdict.worst_step = *over;
        verdict.measured_value = sum;
        verdict.bound_value = bound;
      }
      verdict.kind = VerdictKind::kViolated;
    } else if (verdict.kind == VerdictKind::kHolds && fraction > worst_fraction) {
      worst_fraction = fraction;
      verdict.worst_step = series->points.back().step;
      verdict.measured_value = sum;
      verdict.bound_value = bound;
    }
  }
  verdict.worst_worker = kServer;
  verdict.measured = fmt::format("{}", fmt::join(parts, "; "));
  verdict.bound =
      fmt::format("<= d / sqrt(eps) = {:.6g} and d / eps = {:.6g} (d = {}, eps = {:.3g})",
                  bounds.l1_sum, bounds.squared_sum, run.dimension, *eps);
  verdict.detail = fmt::format(
      "deterministic (v_hat_0 = 0, v_hat non-decreasing); rounding slack "
      "rtol = {:.1g}",
      rtol);
  if (verdict.kind == VerdictKind::kViolated) {
    verdict.detail +=
        fmt::format("; the first cumulative sum over its bound at step {}", *verdict.worst_step);
  } else if (!run.completed()) {
    verdict.kind = VerdictKind::kInconclusive;
    verdict.detail +=
        fmt::format("; the steps recorded meet the bound, but the run {}", run.status);
  }
  return verdict;
}

// Theorem 1 (lines 221-222, proof 552-590): (1/T) sum_{t=1}^T E||grad f(theta_t)||^2 <= the
// bound of theory/bounds.h (SpamsTheorem1) for a constant step size eta <= eta_max.
//
// Measured: the run's (1/T) sum_{t=1}^T ||grad f(theta_t)||^2 from the metric grad_sq_norm, whose
// step s value is the paper's theta_{s+1} (step 0: theta_1, the initial point), so steps
// 0..T-1; it needs eval_every = 1. The theorem bounds the expectation, and one run gives one
// draw of a non-negative random variable X with E X <= B; by Markov's inequality P(X > B / a)
// <= a, so the claim is rejected at the check's confidence c only when X > B / (1 - c).
// Otherwise it holds, with slack B - X. Inconclusive when a constant is unknown (L, G, sigma,
// sigma_g for n > 1, f_star), the step size is not constant or not admissible, q is unknown or
// >= 1, or the run did not complete.
Verdict CheckSpamsTheorem1(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  if (!run.completed()) return Verdict::Inconclusive(fmt::format("the run {}", run.status));
  const auto T = run.steps_done;
  if (T < 1) return Verdict::Inconclusive("the run took no step");

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
  const Constant* G = constant("G");
  const Constant* sigma = constant("sigma");
  const Constant* f_star = constant("f_star");
  const Constant* sigma_g = nullptr;
  if (run.workers > 1) {
    sigma_g = constant("sigma_g");
  } else {
    notes.emplace_back("sigma_g = 0 (n = 1)");
  }
  if (!missing.empty()) {
    return Verdict::Inconclusive(fmt::format("unknown constants: {}", fmt::join(missing, ", ")));
  }
  const DeclaredQ q = FindQ(input, run, "spams-ef");
  // Algorithm 2 compresses at the workers; Algorithm 3 (spams) at the server.
  const std::optional<double> q_value = q.workers ? q.workers : q.server;
  if (!q_value) {
    return Verdict::Inconclusive(
        "the compressor declares no q (probe spams-ef) and the check has no `q`");
  }
  if (*q_value >= 1) {
    return Verdict::Inconclusive(
        fmt::format("q = {:.6g} >= 1: spams.txt Assumption 1 needs q < 1", *q_value));
  }
  notes.push_back(q.source);

  const Series* lr = run.Metric("lr");
  if (lr == nullptr || lr->empty()) return Verdict::Inconclusive("the run has no lr metric");
  const double eta = lr->points.front().value;
  for (const Series::Point& p : lr->points) {
    if (p.value != eta) {
      return Verdict::Inconclusive(fmt::format(
          "Theorem 1 needs a constant step size; lr is {:.6g} at step {} and {:.6g} at step {}",
          eta, lr->points.front().step, p.value, p.step));
    }
  }
  const Series* loss = run.Metric("train_loss");
  const Series* grad = run.Metric("grad_sq_norm");
  if (grad == nullptr || loss == nullptr) {
    return Verdict::Inconclusive("the run has no grad_sq_norm or train_loss metric");
  }
  std::vector<double> by_step(static_cast<std::size_t>(T), NAN);
  std::optional<double> f1;
  for (const Series::Point& p : grad->points) {
    if (p.step >= 0 && p.step < T) by_step[static_cast<std::size_t>(p.step)] = p.value;
  }
  for (const Series::Point& p : loss->points) {
    if (p.step == 0) f1 = p.value;
  }
  const auto gaps =
      std::count_if(by_step.begin(), by_step.end(), [](double v) { return std::isnan(v); });
  if (gaps > 0 || !f1) {
    return Verdict::Inconclusive(fmt::format(
        "grad_sq_norm is missing at {} of the steps 0..{} (the theorem averages over every "
        "iterate: run with eval_every = 1)",
        gaps, T - 1));
  }
  double sum = 0;
  for (double v : by_step) sum += v;
  const double measured = sum / static_cast<double>(T);

  const std::optional<double> beta1 = SpamsOption(run, "beta1", SpamsOptions{}.beta1);
  const std::optional<double> eps = SpamsOption(run, "eps", SpamsOptions{}.eps);
  if (!beta1 || !eps) {
    return Verdict::Inconclusive(
        fmt::format("optimizer '{}' is not SPAMS and does not set beta1 and eps in its options",
                    run.optimizer));
  }
  SpamsConstants k;
  k.q = *q_value;
  k.grad_bound = G->value;
  k.lipschitz = L->value;
  k.eps = *eps;
  k.beta1 = *beta1;
  k.eta = eta;
  k.n = run.workers;
  k.d = static_cast<double>(run.dimension);
  k.sigma = sigma->value;
  k.sigma_g = sigma_g == nullptr ? 0.0 : sigma_g->value;
  k.f_gap = std::max(0.0, *f1 - f_star->value);
  const SpamsTheorem1Result r = SpamsTheorem1(k, static_cast<double>(T));
  if (!r.step_size_admissible) {
    return Verdict::Inconclusive(fmt::format(
        "the step size eta = {:.6g} is above the theorem's eps / (3 C0 sqrt(2L max(2L, C2))) = "
        "{:.6g}: Theorem 1 makes no claim ({})",
        eta, r.eta_max, fmt::join(notes, "; ")));
  }
  Verdict verdict;
  const double alpha = 1 - input.confidence;
  verdict.measured_value = measured;
  verdict.bound_value = r.bound;
  verdict.measured =
      fmt::format("(1/T) sum_t ||grad f(theta_t)||^2 = {:.6g} over T = {} iterates", measured, T);
  verdict.bound = fmt::format("<= {:.6g} (E[.], Theorem 1 as printed; the proof's C2 form {:.6g})",
                              r.bound, r.bound_proof);
  verdict.kind = measured > r.bound / alpha ? VerdictKind::kViolated : VerdictKind::kHolds;
  notes.push_back(fmt::format("f(theta_1) - f* = {:.6g}", k.f_gap));
  notes.push_back(fmt::format("eta = {:.6g} <= eta_max = {:.6g}", eta, r.eta_max));
  verdict.detail = fmt::format(
      "slack bound - measured = {:.6g} (measured / bound = {:.3g}); one run against an "
      "expectation bound: violated only above bound / {:.3g} (Markov at confidence {}); {}",
      r.bound - measured, measured / r.bound, alpha, input.confidence, fmt::join(notes, "; "));
  return verdict;
}

}  // namespace lemmalab
