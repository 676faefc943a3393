// Birder's claims (birder.txt Sec. 3 and App. A), judged from the probes of
// theory/birder_probes.h, with the premises their proofs use checked on the run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "theory/assertion_examples.h"
#include "theory/assertions.h"
#include "theory/birder_probes.h"
#include "theory/bounds.h"
#include "theory/metrics.h"
#include "theory/optimizer_options.h"
#include "theory/premises.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// Lemma 1 (Eq. 15) defines Q on -1 <= u_j <= 1 only: every input of Q must lie there for its
// error to obey Eq. 17-19 (probe q-domain), at every call, recorded or not.
Premise QuantizerInputsInside(const RunEvidence& run) {
  const std::string name = "Q's inputs lie in [-1, 1] (birder.txt Eq. 15, Lemma 1)";
  const Series* workers = run.Probe("q-domain", "worker_fraction");
  const Series* server = run.Probe("q-domain", "server_fraction");
  if ((workers == nullptr || workers->empty()) && (server == nullptr || server->empty())) {
    return Premise::Failed(name, "the run recorded no q-domain series");
  }
  const Verdict inside = EveryValueAtMost({workers, server}, 0.0, "fraction outside", "= 0");
  if (inside.kind == VerdictKind::kHolds) {
    return Premise::Met(name, fmt::format("no input outside: {}", inside.measured));
  }
  return Premise::Failed(
      name,
      fmt::format("{:.3g}% of the inputs outside at {} (error feedback pushes m/b + e out of the "
                  "interval); {}",
                  100 * inside.measured_value, inside.detail, inside.measured),
      inside.worst_step, inside.worst_worker);
}

// The mean of ||e||^2 / d over the steps of one side (workers or server), with a batch-means
// interval.
struct ErrorNormSide {
  std::string side;
  MeanEstimate mean;
  double lower = 0, upper = 0;
  Series::Point worst;
  std::vector<double> ratios;
};
std::vector<ErrorNormSide> ErrorNormSides(const RunEvidence& run, double confidence) {
  std::vector<ErrorNormSide> sides;
  const double d = static_cast<double>(run.dimension);
  for (const auto& [series, side] :
       {std::pair{"worker_sq_norm", "workers'"}, std::pair{"server_sq_norm", "server's"}}) {
    const Series* s = run.Probe("ef-norm", series);
    if (s == nullptr || s->empty()) continue;
    ErrorNormSide out;
    out.side = side;
    // A mean over every step (the extent); the recorded ones, a sample, give its spread.
    for (const Series::Point& p : s->sample()) out.ratios.push_back(p.value / d);
    out.mean = MeanOfEveryValue(BatchMeans(out.ratios), s->extent(), /*independent=*/false);
    out.mean.mean /= d;
    const double half = std::isfinite(out.mean.standard_error)
                            ? StudentTQuantile(confidence, out.mean.dof) * out.mean.standard_error
                            : std::numeric_limits<double>::infinity();
    out.lower = out.mean.mean - half;
    out.upper = out.mean.mean + half;
    out.worst = *s->Max();
    sides.push_back(std::move(out));
  }
  return sides;
}

// What Theorem 1's proof takes from Lemma 1: E||e_t||^2 <= d (step (vi)), as measured on the run
// (the upper confidence bound of each side's mean within d).
Premise ErrorNormWithinD(const RunEvidence& run, double confidence) {
  const std::string name = "E||e_t||^2 <= d (Lemma 1, used by the proof's step (vi))";
  const std::vector<ErrorNormSide> sides = ErrorNormSides(run, confidence);
  if (sides.empty()) return Premise::Failed(name, "the run recorded no ef-norm series");
  std::vector<std::string> parts;
  for (const ErrorNormSide& s : sides) {
    parts.push_back(fmt::format("{} mean ||e||^2/d {:.4g}, {:.0f}% upper bound {:.4g}", s.side,
                                s.mean.mean, 100 * confidence, s.upper));
    if (!(s.upper <= 1)) {
      return Premise::Failed(name, fmt::format("{}: not shown to be <= 1", parts.back()));
    }
    // The proof needs the bound at every t, not on average: a series that grows is not shown.
    if (const Premise drift = Stationary(s.ratios, "||e||^2 / d", confidence); drift.failed()) {
      return Premise::Failed(name, fmt::format("{}: {}", s.side, drift.detail));
    }
  }
  return Premise::Met(name, fmt::format("{}", fmt::join(parts, "; ")));
}

// The proof's step (iii): alpha_{t-1} / b_{t-1} >= alpha_t / b_t on every coordinate, from the
// min-b probe's step_ratio (the largest (alpha_t / b_t,j) / (alpha_{t-1} / b_{t-1},j) of a worker
// and step, which must not exceed 1).
Premise EffectiveStepNonIncreasing(const RunEvidence& run) {
  const std::string name =
      "alpha_(t-1)/b_(t-1) >= alpha_t/b_t on every coordinate (the proof's step (iii); Algorithm "
      "1 line 7's max rule with T0 = 0 guarantees it)";
  const Series* ratio = run.Probe("min-b", "step_ratio");
  if (ratio == nullptr || ratio->empty()) {
    return Premise::Failed(name, "the run recorded no min-b/step_ratio series");
  }
  const std::optional<BirderOptions> birder = BirderOptionsOf(run.optimizer, run.hyperparameters);
  const std::string t0 = birder && birder->t0 ? fmt::format("t0 = {}", *birder->t0)
                                              : std::string("no max rule (t0 unset)");
  const Verdict kept = EveryValueAtMost({ratio}, 1 + 1e-12, "ratio", "<= 1");
  if (kept.kind == VerdictKind::kHolds) {
    return Premise::Met(name, fmt::format("{}; largest ratio {:.6g} {}", t0, kept.measured_value,
                                          OverAllValues(*ratio)));
  }
  return Premise::Failed(
      name,
      fmt::format("{}: the effective step alpha_t/b_t grew on some coordinate, by x{:.4g} at {}",
                  t0, kept.measured_value, kept.detail),
      kept.worst_step, kept.worst_worker);
}

// max_j b_t,j <= G (the proof bounds ||m_{t-1}|| and b by G).
Premise DenominatorWithinG(const RunEvidence& run, const UsedConstant& g) {
  const std::string name = "max_j b_t,j <= G (used by the proof)";
  const Series* max_b = run.Probe("min-b", "max_b");
  if (max_b == nullptr || max_b->empty()) {
    return Premise::Failed(name, "the run recorded no min-b/max_b series");
  }
  const Series::Point largest = *max_b->Max();
  if (!(largest.value <= g.value * (1 + 1e-12))) {
    return Premise::Failed(name,
                           fmt::format("max_j b = {:.6g} at step {} ({}) exceeds {}", largest.value,
                                       largest.step, SenderName(largest.worker), g.description),
                           largest.step, largest.worker);
  }
  return Premise::Met(name, fmt::format("largest b {:.6g} {}; {}", largest.value,
                                        OverAllValues(*max_b), g.description));
}

// The unit roundoff of the run's precision.
double UnitRoundoff(const RunEvidence& run) {
  return run.precision == Precision::kFp64 ? 0x1p-53 : 0x1p-24;
}

// Birder's quantizer at every sender (theory/birder_probes.h): the workers' and the server's.
Premise BirderCompressor(const RunEvidence& run, std::string_view why) {
  const std::string name =
      fmt::format("compressor.name = stochastic-binary at the workers and the server ({})", why);
  const BirderQuantizerSides sides = BirderQuantizerOf(run.hyperparameters);
  const std::string configured = fmt::format(
      "compressor.name = {}, server_compressor.name = {}",
      run.hyperparameters.Text("compressor.name").value_or("none"),
      run.hyperparameters.Text("server_compressor.name").value_or("(the same configuration)"));
  return sides.workers && sides.server ? Premise::Met(name, configured)
                                       : Premise::Failed(name, configured);
}

std::array<Premise, 2> ClassicFeedback(const RunEvidence& run, std::string_view why) {
  return {OptionIs(run, "worker_feedback", "classic", why),
          OptionIs(run, "server_feedback", "classic", why)};
}

// Lemma 1 (Eq. 16, 19): E||e||^2 <= d for the quantizer's error, which Eq. 15-18 derive for
// inputs in [-1, 1]. Measured: the mean over steps and workers of ||e_t||^2 / d, per side
// (workers, server), with a one-sided batch-means interval. Holds when every side's upper bound
// is <= 1, violated when a side's lower bound is above 1. Premises: Birder's quantizer, its
// inputs inside [-1, 1] (error feedback breaks this on most runs: the lemma then says nothing
// about the run's e, whatever the mean), a completed run and stationary series (a mean of a
// series that grows is not an expectation).
Verdict CheckErrorNorm(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  verdict.premises.push_back(RunCompleted(run));
  verdict.premises.push_back(BirderCompressor(run, "Lemma 1 is about Birder's quantizer"));
  verdict.premises.push_back(QuantizerInputsInside(run));
  const std::vector<ErrorNormSide> sides = ErrorNormSides(run, input.confidence);
  if (sides.empty()) {
    verdict.detail = "the run has no error feedback series (probe ef-norm)";
    return verdict;
  }
  verdict.kind = VerdictKind::kHolds;
  verdict.bound = "<= 1";
  verdict.bound_value = 1;
  std::vector<std::string> parts;
  for (const ErrorNormSide& s : sides) {
    verdict.premises.push_back(
        Stationary(s.ratios, fmt::format("the {} ||e||^2 / d", s.side), input.confidence));
    if (!std::isfinite(s.mean.standard_error)) {
      verdict.kind = VerdictKind::kInconclusive;
      verdict.detail = fmt::format(
          "{} values of ||e||^2 are too few for a batch-means interval (at least {} needed)",
          s.ratios.size(), 2 * kBatches);
      continue;
    }
    parts.push_back(fmt::format("{} mean {:.4g} ({:.0f}% interval [{:.4g}, {:.4g}]), max {:.4g}",
                                s.side, s.mean.mean, 100 * input.confidence, s.lower, s.upper,
                                s.worst.value / static_cast<double>(run.dimension)));
    if (!std::isfinite(verdict.measured_value) || s.mean.mean > verdict.measured_value) {
      verdict.measured_value = s.mean.mean;
      verdict.worst_step = s.worst.step;
      verdict.worst_worker = s.worst.worker;
    }
    if (s.lower > 1) {
      verdict.kind = VerdictKind::kViolated;
    } else if (s.upper > 1 && verdict.kind == VerdictKind::kHolds) {
      verdict.kind = VerdictKind::kInconclusive;
      verdict.detail = fmt::format("the {} interval contains 1", s.side);
    }
  }
  verdict.measured = fmt::format("||e||^2/d: {}", fmt::join(parts, "; "));
  return verdict;
}

// Eq. 5 defines Q on [-1, 1] only; after error feedback the input can leave it (docs/
// conventions.md). Deterministic: every call's fraction of inputs outside must be 0.
Verdict CheckQuantizerDomain(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  Verdict v = EveryValueAtMost(
      {run.Probe("q-domain", "worker_fraction"), run.Probe("q-domain", "server_fraction")}, 0.0,
      "fraction of Q inputs outside [-1, 1]", "= 0");
  v.premises.push_back(BirderCompressor(run, "Eq. 5's domain is that of Birder's quantizer"));
  return v;
}

// Theorem 1 assumes (b_t^(i))_j >= rho > 0. The denominator b + eps is at least eps by
// construction (b >= 0), so against rho <= eps the claim cannot fail: vacuous. With `rho` above
// eps the check is against that value; with eps = 0, rho must come from b itself (> 0).
Verdict CheckDenominatorFloor(const AssertionInput& input, std::optional<double> rho) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* s = RequireProbe(run, "min-b", "min_denominator", why);
  if (s == nullptr) return Verdict::Inconclusive(why);
  const std::optional<BirderOptions> birder = BirderOptionsOf(run.optimizer, run.hyperparameters);
  if (!birder) return Verdict::Inconclusive("the run's optimizer has no eps (not Birder)");
  const double eps = birder->eps;
  // The run added eps in its own precision: in fp32, 1e-8 is 9.99999994e-9.
  const auto stored = [&](double x) {
    return run.precision == Precision::kFp32 ? static_cast<double>(static_cast<float>(x)) : x;
  };
  if (!rho && eps == 0) {
    return EveryValueAtLeast({s}, std::numeric_limits<double>::min(), "min_j (b + eps)",
                             "> 0 (eps = 0: rho must come from b)");
  }
  const double floor = rho.value_or(eps);
  Verdict v = EveryValueAtLeast({s}, stored(floor), "min_j (b + eps)",
                                fmt::format(">= rho = {:.3g}{}", floor, rho ? "" : " (= eps)"));
  if (v.kind == VerdictKind::kHolds && floor <= eps) {
    v.kind = VerdictKind::kVacuous;
    v.detail = fmt::format(
        "vacuous: b >= 0, so b + eps >= eps = {:.3g} >= rho by construction; give a rho above eps "
        "to test a floor the run could miss (b-positive tests b itself)",
        eps);
  }
  return v;
}

// The same assumption on b itself, without the added constant: on data with coordinates whose
// gradient is always 0 (the border pixels of MNIST feed dead weights), min b = 0 and rho > 0
// holds only because of eps (docs/conventions.md).
Verdict CheckRawDenominatorPositive(const AssertionInput& input) {
  std::string why;
  const Series* s = RequireProbe(input.runs.front(), "min-b", "min_b", why);
  if (s == nullptr) return Verdict::Inconclusive(why);
  Verdict v = EveryValueAtLeast({s}, std::numeric_limits<double>::min(), "min_j b_t,j", "> 0");
  if (const Series* at = input.runs.front().Probe("min-b", "at_constant")) {
    if (const auto most = at->Max()) {
      v.detail += fmt::format("{}at most {:.0f} of {} coordinates had b = 0 (step {})",
                              v.detail.empty() ? "" : "; ", most->value,
                              input.runs.front().dimension, most->step);
    }
  }
  return v;
}

// Lemma 2 is algebra on the update rule (Eq. 14): the residual of Eq. 22 must be at rounding
// level at every step. Its premises are the update rule's: classic error feedback at the workers
// and the server (Eq. 14 telescopes e_t - e_{t+1}) and no decoupled weight decay (which shrinks
// x outside Eq. 14; l2 decay enters through the gradient the probe replays).
Verdict CheckZSequence(const AssertionInput& input, std::optional<double> tolerance_option) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* s = RequireProbe(run, "birder-z", "relative", why);
  if (s == nullptr) return Verdict::Inconclusive(why);
  // 256 units of the run's precision by default: the identity combines a few dozen rounded
  // values, each relative to the largest entry; Birder's residual is observed at a few units.
  const double tolerance = tolerance_option.value_or(256 * UnitRoundoff(run));
  Verdict v = EveryValueAtMost(
      {s}, tolerance, "relative residual ||R_t||_inf / ||z||_inf",
      fmt::format("<= {:.3g} (rounding, {})", tolerance, PrecisionName(run.precision)));
  for (Premise& p : ClassicFeedback(run, "Eq. 14 telescopes the errors")) {
    v.premises.push_back(std::move(p));
  }
  const bool decoupled =
      run.hyperparameters.Number("weight_decay").value_or(0) > 0 &&
      run.hyperparameters.Text("weight_decay_mode").value_or("decoupled") == "decoupled";
  const std::string decay_name = "no decoupled weight decay (Eq. 14 has no shrinking of x)";
  v.premises.push_back(decoupled ? Premise::Failed(decay_name, "weight_decay_mode = decoupled")
                                 : Premise::Met(decay_name, "none, or l2 (replayed in g)"));
  return v;
}

struct Theorem1Options {
  bool printed = false;  // judge by the bound as printed instead of the re-derived one
  std::optional<double> g;
};

// Theorem 1 (Eq. 6, 41-42): E[((1/T) sum_{t=1}^T ||grad f(x_t)||)^2] <= C1/sqrt(T) +
// C2 (1 + log T)/sqrt(T), evaluated at every T the run reaches, with the constants the proof
// supports (theory/bounds.h, re-derived) and, beside them, the constants as printed. The run's
// own constants: c from alpha_t = c/sqrt(t), beta from its options, rho = the smallest b + eps it
// saw (probe min-b), G the problem's bound (or `G` from the [[assert]] table), L and f* the
// problem's, f(z_1) from probe birder-z. One run is one sample of the expectation; the bound is
// deterministic given the run's constants, so any T over it is a violation.
// At T = 1 the left side is deterministic (x_1 is the initial point), so a value over the bound
// there is a violation; at T > 1 it is one draw of the expectation the theorem bounds, and only a
// value beyond Markov's level (bound x T_max / (1 - confidence), corrected for the T's checked)
// is evidence against; a value over the bound but below that level is inconclusive.
//
// Premises (each checked on the run, theory/premises.h): Assumptions 1-4 (f*, L known; one data
// distribution; ||g|| <= G and ||grad f|| <= G along the trajectory), rho > 0, alpha_t = c /
// sqrt(t), the effective step alpha_t / b_t non-increasing on every coordinate (step (iii)),
// max b <= G, beta in [0, 1), classic error feedback at workers and server, no weight decay, and
// E||e||^2 <= d as the proof uses it from Lemma 1 (measured). Vacuous when the bound is nowhere
// below min(G^2, ||grad f(x_1)||^2): the left-hand side cannot exceed G^2 under Assumption 4,
// and a run that never moved from x_1 would meet a bound above ||grad f(x_1)||^2.
Verdict CheckBirderTheorem1(const AssertionInput& input, const Theorem1Options& o) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  const Series* gsq = run.Metric(metric::kGradSqNorm);
  const Series* lr = run.Metric(metric::kLr);
  if (gsq == nullptr || lr == nullptr || lr->empty()) {
    v.detail = "the run has no grad_sq_norm or lr metric";
    return v;
  }
  // ||grad f(x_t)|| for the paper's t = 1..T is lemmalab's evaluation at step t - 1.
  std::vector<double> norms(static_cast<std::size_t>(run.steps_done + 1), -1.0);
  for (const Series::Point& p : gsq->points()) {
    if (p.step >= 0 && p.step <= run.steps_done) {
      norms[static_cast<std::size_t>(p.step)] = std::sqrt(p.value);
    }
  }
  if (run.steps_done < 1 || std::count(norms.begin(), norms.end(), -1.0) > 0) {
    v.detail = "Theorem 1's left-hand side needs ||grad f(x_t)|| at every step: set eval_every = 1";
    return v;
  }
  const double c = lr->sample().front().value;
  const std::string schedule_name = "alpha_t = c / sqrt(t) (Theorem 1's step size)";
  v.premises.push_back(Premise::Met(schedule_name, fmt::format("c = {:.6g}", c)));
  for (const Series::Point& p : lr->points()) {
    const double c_t = p.value * std::sqrt(static_cast<double>(p.step));
    if (std::abs(c_t - c) > 1e-9 * c) {
      v.premises.back() =
          Premise::Failed(schedule_name,
                          fmt::format("alpha = {:.6g} at step {} is not {:.6g} / sqrt({})", p.value,
                                      p.step, c, p.step),
                          p.step);
      break;
    }
  }
  std::string why;
  const Series* min_den = RequireProbe(run, "min-b", "min_denominator", why);
  const Series* f_z1 = RequireProbe(run, "birder-z", "f_z1", why);
  if (min_den == nullptr || f_z1 == nullptr) {
    v.detail = why;
    return v;
  }
  const Constant* l = run.FindConstant("L");
  const Constant* f_star = run.FindConstant("f_star");
  const std::optional<UsedConstant> g = FindUsedConstant(run, "G", o.g);
  if (l == nullptr || f_star == nullptr || !g) {
    v.detail =
        "Theorem 1 needs L, f* and G, which this problem does not all know (set reference = true "
        "to estimate L and f*)";
    return v;
  }
  v.premises.push_back(
      Premise::Met("Assumptions 1-2 (f* and L)",
                   fmt::format("{}; {}", DescribeConstant(*f_star), DescribeConstant(*l))));
  v.premises.push_back(OneDistribution(run, "Assumption 3"));
  v.premises.push_back(GradientsWithin(run, *g, "Assumption 4", /*full_gradient=*/true));
  v.premises.push_back(DenominatorWithinG(run, *g));
  v.premises.push_back(EffectiveStepNonIncreasing(run));
  v.premises.push_back(
      OptionWithin(run, "beta", kMovingAverageFactor, "the proof divides by 1 - beta"));
  for (Premise& p : ClassicFeedback(run, "Lemmas 1-2 as the proof uses them")) {
    v.premises.push_back(std::move(p));
  }
  v.premises.push_back(NoWeightDecay(run));
  v.premises.push_back(ErrorNormWithinD(run, input.confidence));

  BirderConstants k;
  k.c = c;
  k.grad_bound = g->value;
  k.lipschitz = l->value;
  k.d = static_cast<double>(run.dimension);
  k.rho = min_den->Min()->value;
  const std::optional<BirderOptions> birder = BirderOptionsOf(run.optimizer, run.hyperparameters);
  k.beta = birder ? birder->beta : 0;
  k.f_z1_gap = f_z1->sample().front().value - f_star->value;
  std::vector<std::string> notes;  // the constants are in the premises
  if (k.f_z1_gap < 0) {
    // Only an estimated f* can lie above f(z_1); the gap is then taken as 0 (its lower end).
    notes.push_back(fmt::format("f(z_1) - f* = {:.3g} < 0 with this f*: taken as 0", k.f_z1_gap));
    k.f_z1_gap = 0;
  }
  const std::string rho_name = "rho > 0 (b_t + eps >= rho, footnote 5)";
  if (!(k.rho > 0)) {
    v.premises.push_back(Premise::Failed(
        rho_name, fmt::format("min (b + eps) = {:.3g}: the bound is infinite", k.rho)));
    return v;
  }
  v.premises.push_back(Premise::Met(rho_name, fmt::format("rho = {:.6g}, the smallest b + eps "
                                                          "the run saw",
                                                          k.rho)));
  notes.push_back(
      fmt::format("c = {:.6g}, beta = {:.6g}, rho = {:.6g}, f(z_1) - f* = {:.6g}, d = {}", k.c,
                  k.beta, k.rho, k.f_z1_gap, run.dimension));

  // Both forms at every T: the verdict's (re-derived by default) and the other one.
  struct Form {
    std::string name;
    bool printed;
    VerdictKind kind = VerdictKind::kHolds;
    double worst_ratio = std::numeric_limits<double>::infinity();
    std::int64_t worst_t = 1, first_broken = 0;
    double lhs_at_worst = 0, bound_at_worst = 0, smallest_bound = kVacuousBound;
    double lhs_at_first_broken = 0, bound_at_first_broken = 0;
    std::int64_t above = 0;  // T's at which the one run's value is above the bound
  };
  std::array<Form, 2> forms = {Form{o.printed ? "as printed" : "re-derived", o.printed},
                               Form{o.printed ? "re-derived" : "as printed", !o.printed}};
  double sum = 0;
  for (std::int64_t t = 1; t <= run.steps_done; ++t) {
    sum += norms[static_cast<std::size_t>(t - 1)];
    const double lhs = (sum / static_cast<double>(t)) * (sum / static_cast<double>(t));
    const BirderTheorem1Result r = BirderTheorem1(k, static_cast<double>(t));
    for (Form& f : forms) {
      const double bound = f.printed ? r.bound : r.bound_rederived;
      f.smallest_bound = std::min(f.smallest_bound, bound);
      const double ratio = bound / lhs;
      if (ratio < f.worst_ratio) {
        f.worst_ratio = ratio;
        f.worst_t = t;
        f.lhs_at_worst = lhs;
        f.bound_at_worst = bound;
      }
      if (lhs <= bound) continue;
      ++f.above;
      // At T = 1 the left side is ||grad f(x_1)||^2 at the fixed initial point: no expectation,
      // a violation. At T > 1 it is one draw of a random variable whose expectation the theorem
      // bounds: evidence against only beyond Markov's level, corrected for the T's checked.
      const bool evidence =
          t == 1 || lhs > bound * static_cast<double>(run.steps_done) / (1 - input.confidence);
      if (evidence && f.first_broken == 0) {
        f.kind = VerdictKind::kViolated;
        f.first_broken = t;
        f.lhs_at_first_broken = lhs;
        f.bound_at_first_broken = bound;
      }
    }
  }
  const double grad_at_start = norms.front() * norms.front();
  const double trivial = std::min(g->value * g->value, grad_at_start);
  const std::string trivial_text = fmt::format("min(G^2, ||grad f(x_1)||^2) = min({:.4g}, {:.4g})",
                                               g->value * g->value, grad_at_start);
  const BirderTheorem1Result at_t = BirderTheorem1(k, static_cast<double>(run.steps_done));
  for (Form& f : forms) {
    if (f.kind == VerdictKind::kHolds && f.above > 0) f.kind = VerdictKind::kInconclusive;
    if (f.kind == VerdictKind::kHolds && f.smallest_bound >= trivial) {
      f.kind = VerdictKind::kVacuous;
    }
  }
  const Form& main = forms[0];
  v.kind = main.kind;
  // A violation is reported where it first happens; otherwise where the bound is tightest.
  const bool broken = main.first_broken > 0;
  const std::int64_t at = broken ? main.first_broken : main.worst_t;
  v.worst_step = at;
  v.measured_value = broken ? main.lhs_at_first_broken : main.lhs_at_worst;
  v.bound_value = broken ? main.bound_at_first_broken : main.bound_at_worst;
  v.measured =
      fmt::format("((1/T) sum ||grad f(x_t)||)^2 = {:.6g} at T = {} ({})", v.measured_value, at,
                  broken ? "the first T over the bound" : "closest to the bound");
  const auto describe = [&](const Form& f) {
    const bool f_broken = f.first_broken > 0;
    return fmt::format(
        "C1/sqrt(T) + C2(1 + ln T)/sqrt(T) = {:.6g} at T = {} ({}; C1 = {:.4g}, C2 = {:.4g}){}",
        f_broken ? f.bound_at_first_broken : f.bound_at_worst,
        f_broken ? f.first_broken : f.worst_t, f.name, f.printed ? at_t.c1 : at_t.c1_rederived,
        f.printed ? at_t.c2 : at_t.c2_rederived,
        f_broken ? fmt::format("; first broken at T = {} (left side {:.6g})", f.first_broken,
                               f.lhs_at_first_broken)
                 : fmt::format("; slack x{:.3g}", f.worst_ratio));
  };
  v.bound = describe(main);
  const Form& other = forms[1];
  v.other_forms.push_back(
      {other.name, other.kind, describe(other),
       other.first_broken > 0 ? other.bound_at_first_broken : other.bound_at_worst,
       other.kind == VerdictKind::kVacuous ? fmt::format("never below {}", trivial_text) : ""});
  if (main.above > 0 && main.kind == VerdictKind::kInconclusive) {
    notes.insert(notes.begin(),
                 fmt::format("the run's value is above the bound at {} of {} T's, but never beyond "
                             "Markov's level for one draw of an expectation (bound x {} / {:.2g})",
                             main.above, run.steps_done, run.steps_done, 1 - input.confidence));
  }
  if (main.kind == VerdictKind::kVacuous) {
    notes.insert(notes.begin(),
                 fmt::format("vacuous: the bound is never below {} (smallest {:.4g})", trivial_text,
                             main.smallest_bound));
  }
  notes.push_back(
      fmt::format("checked at every T = 1..{}; one run is one sample of the "
                  "expectation",
                  run.steps_done));
  v.detail = fmt::format("{}", fmt::join(notes, "; "));
  // The left side is ((1/T) sum ||grad f||)^2, not the running mean of ||grad f||^2: the figure
  // shows the series it is computed from, with the bound at the verdict's T.
  v.statistic = Verdict::Statistic{{gsq->name()}, "running mean", false};
  v.premises.push_back(OptimalValueFor(*f_star, v.kind));
  return v;
}

Judgement MakeErrorNormCheck(OptionTable& /*options*/, const AssertionContext& /*context*/) {
  return [](const AssertionInput& input) { return CheckErrorNorm(input); };
}

Judgement MakeQuantizerDomainCheck(OptionTable& /*options*/, const AssertionContext& /*context*/) {
  return [](const AssertionInput& input) { return CheckQuantizerDomain(input); };
}

Judgement MakeDenominatorFloorCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const std::optional<double> rho = options.GetOptionalDouble("rho", Interval::NonNegative());
  return [rho](const AssertionInput& input) { return CheckDenominatorFloor(input, rho); };
}

Judgement MakeRawDenominatorPositiveCheck(OptionTable& /*options*/,
                                          const AssertionContext& /*context*/) {
  return [](const AssertionInput& input) { return CheckRawDenominatorPositive(input); };
}

Judgement MakeZSequenceCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const std::optional<double> tolerance =
      options.GetOptionalDouble("tolerance", Interval::Positive());
  return [tolerance](const AssertionInput& input) { return CheckZSequence(input, tolerance); };
}

Judgement MakeBirderTheorem1Check(OptionTable& options, const AssertionContext& /*context*/) {
  Theorem1Options o;
  o.printed = Choose(options, "bound", "rederived", {"rederived", "printed"}) == "printed";
  o.g = options.GetOptionalDouble("G", Interval::Positive());
  return [o](const AssertionInput& input) { return CheckBirderTheorem1(input, o); };
}

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
std::vector<AssertionInfo> BirderAssertions() {
  return {
      {.name = "b-floor",
       .summary = "min_j (b_t,j + eps) >= rho for every worker and step",
       .source = "birder.txt Thm 1 assumption and footnote 5",
       .probes = {"min-b"},
       .make = &MakeDenominatorFloorCheck,
       .algorithms = {"birder", "softsign-sgd"},
       .example = {ExampleSpec(kNoisyQuadratic, kBirder, "b-floor", "rho = 1e-6\n")}},
      {.name = "b-positive",
       .summary = "min_j b_t,j > 0 without the added constant",
       .source = "birder.txt Thm 1 assumption (rho > 0), Eq. 4",
       .probes = {"min-b"},
       .make = &MakeRawDenominatorPositiveCheck,
       .algorithms = {"birder", "softsign-sgd"},
       .example = {ExampleSpec(kNoisyQuadratic, kBirder, "b-positive")}},
      {.name = "birder-lemma2",
       .summary = "the z-sequence identity holds to rounding at every step",
       .source = "birder.txt Lemma 2, Eq. 20-23",
       .probes = {"birder-z"},
       .make = &MakeZSequenceCheck,
       .algorithms = {"birder", "softsign-sgd"},
       .example = {ExampleSpec(kNoisyQuadratic, kBirder, "birder-lemma2"),
                   {{"no server error feedback: Eq. 14 telescopes the errors",
                     {"optimizer.server_feedback=none"}}}}},
      {.name = "birder-theorem1",
       .summary = "((1/T) sum ||grad f(x_t)||)^2 <= C1/sqrt(T) + C2 (1 + ln T)/sqrt(T) at every T",
       .source = "birder.txt Thm 1, Eq. 6, 41-42",
       .probes = {"min-b", "birder-z", "ef-norm"},
       .make = &MakeBirderTheorem1Check,
       .algorithms = {"birder"},
       .example = {ExampleSpec(kNoisyQuadratic, R"(
[[optimizer]]
name = "birder"
t0 = 0
schedule = { name = "inv-sqrt", lr = 0.05 }
)",
                               "birder-theorem1", "expect = \"vacuous\"\n"),
                   {{"no max rule: the proof's step (iii) fails", {"optimizer.t0=100000"}},
                    {"a constant step, not c / sqrt(t)", {"optimizer.schedule.name=constant"}}}}},
      {.name = "ef-norm",
       .summary = "E||e||^2 <= d for worker and server error feedback",
       .source = "birder.txt Lemma 1, Eq. 16 and 19",
       .probes = {"ef-norm", "q-domain"},
       .make = &MakeErrorNormCheck,
       .example = {ExampleSpec(kNoisyQuadratic, kBirder, "ef-norm"),
                   {{"a compressor other than Birder's quantizer", {"optimizer.compressor=qsgd"}}},
                   "error feedback pushes Q's inputs out of [-1, 1] on every Birder run, where "
                   "Lemma 1 says nothing, and without it there is no error to measure"}},
      {.name = "q-domain",
       .summary = "every input of Q lies in [-1, 1]",
       .source = "birder.txt Eq. 5, Lemma 1",
       .probes = {"q-domain"},
       .make = &MakeQuantizerDomainCheck,
       .example = {ExampleSpec(kNoisyQuadratic, R"(
[[optimizer]]
name = "birder"
worker_feedback = "none"
server_feedback = "none"
schedule = { name = "inv-sqrt", lr = 0.05 }
)",
                               "q-domain"),
                   {{"error feedback, which pushes the inputs out",
                     {"optimizer.worker_feedback=classic"}}}}},
  };
}

}  // namespace lemmalab
