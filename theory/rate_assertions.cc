// Claims about whole runs: rates fitted over seeds and worker counts, where a run ends up, and
// how far it drifts from a reference run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "theory/assertion_examples.h"
#include "theory/assertions.h"
#include "theory/metrics.h"
#include "theory/premises.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// The per-step values metric[t-1] for the paper's t = 1..T (lemmalab's evaluations at steps
// 0..T-1), or empty when the run did not evaluate every step.
std::vector<double> PerStep(const RunEvidence& run, std::string_view metric) {
  const Series* s = run.Metric(metric);
  if (s == nullptr) return {};
  std::vector<double> values(static_cast<std::size_t>(run.steps_done), std::nan(""));
  std::vector<bool> seen(values.size(), false);
  for (const Series::Point& p : s->points()) {
    if (p.step < 0 || p.step >= run.steps_done) continue;
    values[static_cast<std::size_t>(p.step)] = p.value;
    seen[static_cast<std::size_t>(p.step)] = true;
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) return {};
  return values;
}

struct RateOptions {
  std::string quantity;
  double exponent = 0.5;
  bool at_least = true;
  double tolerance = 0.05;  // how far below (at-least) or around (equal) the exponent may lie
  double tail = 0.75;       // the share of the run, at its end, whose own decay is judged
  std::int64_t from = 10;
  int points = 30;
  bool cite = true;  // cite the theorem of the runs' algorithm, with its premises
  AcrossSeedsOptions fit;
};

RateOptions ReadRateOptions(OptionTable& options) {
  RateOptions o;
  o.quantity = Choose(options, "quantity", metric::kGradSqNorm,
                      {metric::kGradSqNorm, metric::kOptimalityGap});
  o.exponent = options.GetDouble("exponent", 0.5, Interval::NonNegative());
  o.at_least = Choose(options, "compare", "at-least", {"at-least", "equal"}) == "at-least";
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval::Positive());
  o.tail = options.GetDouble("tail", o.tail, Interval{0, 1, true, true});
  o.from = options.GetInt("from", 10, 1);
  o.points = static_cast<int>(options.GetInt("points", 30, 3, 1000));
  o.fit.fit.fit_offset = options.GetBool("offset", true);
  o.cite = Choose(options, "theorem", "cite", {"cite", "none"}) == "cite";
  return o;
}

// The theorem a rate of an algorithm rests on: its source, and the assertion that checks its
// premises on a run (the corollaries prescribe the step size the rate is for).
struct RateTheorem {
  std::string_view optimizer;
  std::string_view source;
  std::string_view assertion;
};
constexpr RateTheorem kRateTheorems[] = {
    {"birder", "birder.txt Thm 1, Eq. 6 (and the O(1/sqrt(nT)) the text after it claims)",
     "birder-theorem1"},
    {"dist-spams", "spams.txt Thm 1, Cor. 1 (lines 221-270)", "spams-corollary1"},
    {"spams", "spams.txt Thm 1, Cor. 2 (lines 221-316)", "spams-corollary2"},
    {"onebit-adam", "onebit-adam-icml-with-appendix.txt Thm 1, Cor. 1", "onebit-theorem1"},
    {"onebit-adam-fp32", "onebit-adam-icml-with-appendix.txt Thm 1, Cor. 1", "onebit-theorem1"},
    {"onebit-lamb", "onebit-lamb.txt Thm 1, Cor. 1 (App. A.9)", "onebit-lamb-theorem1"},
};

// What a rate claim about `runs` cites: the theorem of their algorithm when its premises can be
// checked on every run (they are then the claim's premises, each merged over the runs: the first
// run that fails it, else one met premise), and nothing otherwise: the claim is then the empirical
// one, with the exponent given, and the source says why no theorem speaks for it.
std::string CiteTheorem(std::span<const RunEvidence> runs, std::span<const RunEvidence> experiment,
                        double confidence, const RateOptions& o, Verdict& v) {
  if (!o.cite) {
    return "empirical: the exponent given, citing no theorem (theorem = \"none\")";
  }
  const std::string& optimizer = runs.front().optimizer;
  const auto* theorem =
      std::find_if(std::begin(kRateTheorems), std::end(kRateTheorems),
                   [&](const RateTheorem& t) { return t.optimizer == optimizer; });
  if (theorem == std::end(kRateTheorems)) {
    return fmt::format("no paper's theorem for {}: the classical rate given as `exponent`",
                       optimizer);
  }
  const AssertionInfo* info = Assertions().Find(theorem->assertion);
  OptionTable defaults(fmt::format("[[assert]] '{}'", theorem->assertion), "");
  const Judgement judge = info->make(defaults, AssertionContext{});
  std::vector<Premise> premises;
  for (const RunEvidence& run : runs) {
    Verdict premises_of_run;
    try {
      premises_of_run = judge({std::span(&run, 1), experiment, confidence});
    } catch (const UserError& e) {
      premises_of_run = Verdict::Inconclusive(e.what());
    }
    // A judgement that stopped before its bound (a constant or series it needs is missing) did
    // not check all its premises, unless one of them already failed.
    const bool failed =
        std::any_of(premises_of_run.premises.begin(), premises_of_run.premises.end(),
                    [](const Premise& p) { return p.failed(); });
    if (premises_of_run.bound.empty() && !failed) {
      return fmt::format(
          "empirical: the exponent given, citing no theorem ({}'s premises cannot be checked on "
          "seed {}, n = {}: {})",
          theorem->assertion, run.seed, run.workers, premises_of_run.detail);
    }
    for (Premise& p : premises_of_run.premises) {
      p.name = fmt::format("{}: {}", theorem->assertion, p.name);
      const auto same = std::find_if(premises.begin(), premises.end(),
                                     [&](const Premise& q) { return q.name == p.name; });
      if (same == premises.end()) {
        premises.push_back(std::move(p));
      } else if (p.failed() && !same->failed()) {
        *same = std::move(p);
      }
    }
  }
  for (Premise& p : premises) v.premises.push_back(std::move(p));
  return std::string(theorem->source);
}

// The verdict on an exponent estimate against the theorem's. "at-least" (the theorem bounds the
// quantity by O(T^-p)): holds when the interval's lower end is at least p - tolerance (the decay
// is shown to be that fast; the tolerance, default 0.05, lets a decay of exactly p be shown),
// violated when its upper end is below p. "equal": holds when the interval lies within p +-
// tolerance, violated when it excludes p. Anything else is inconclusive.
Verdict ExponentVerdict(const ExponentEstimate& e, const RateOptions& o, std::string_view variable,
                        std::string what) {
  Verdict v;
  v.measured_value = e.mean;
  v.bound_value = o.exponent;
  v.measured =
      fmt::format("{}: p = {:.4g}, {:.0f}% interval [{:.4g}, {:.4g}] over {} of {} seeds", what,
                  e.mean, 100 * e.confidence, e.lower, e.upper, e.converged_seeds, e.seeds);
  v.bound = o.at_least ? fmt::format(
                             "p >= {:.4g} (decay like {}^-p; shown when the interval "
                             "lies above {:.4g})",
                             o.exponent, variable, o.exponent - o.tolerance)
                       : fmt::format("p = {:.4g} +- {:.3g} (decay like {}^-p)", o.exponent,
                                     o.tolerance, variable);
  if (!e.interval_available) {
    v.kind = VerdictKind::kInconclusive;
    v.detail = e.message;
    return v;
  }
  std::vector<std::string> fits;
  for (const PowerLawFit& f : e.fits) fits.push_back(fmt::format("{:.3g}", f.p));
  v.detail = fmt::format("per-seed p: {}; model a {}^-p + c fitted with Ceres",
                         fmt::join(fits, ", "), variable);
  if (o.at_least) {
    v.kind = e.lower >= o.exponent - o.tolerance ? VerdictKind::kHolds
             : e.upper < o.exponent              ? VerdictKind::kViolated
                                                 : VerdictKind::kInconclusive;
  } else {
    v.kind = e.lower > o.exponent || e.upper < o.exponent ? VerdictKind::kViolated
             : e.lower >= o.exponent - o.tolerance && e.upper <= o.exponent + o.tolerance
                 ? VerdictKind::kHolds
                 : VerdictKind::kInconclusive;
  }
  if (v.kind == VerdictKind::kInconclusive) {
    v.detail = fmt::format("the interval is too wide to decide; {}", v.detail);
  }
  return v;
}

// Does the quantity itself keep falling at the end of the run? The running mean can decay like
// T^-1 long after the values stopped falling (its sum over an early transient dominates), and a
// fitted floor c compared with the running mean misses that. So the values' own exponent q over
// the last `tail` of the run (TailExponent) is estimated per seed, with a Student-t interval over
// the seeds. The running mean's exponent eventually follows the tail's (for q < 1), so: violated
// when the whole interval lies below p - tolerance (the values decay more slowly than the claim,
// or not at all: a floor); a "holds" is kept only when the interval lies above 0 (the values are
// still falling), else inconclusive ("may stall"). A seed whose tail sits at rounding level
// (below (64 u)^2 times its first value, u the precision's unit roundoff) has converged and says
// nothing about a rate; with every seed there, only the running mean speaks.
void JudgeTail(Verdict& v, std::span<const RunEvidence> runs,
               std::span<const std::vector<double>> per_step, const RateOptions& o,
               double confidence, std::string_view quantity) {
  std::vector<double> exponents;
  int at_rounding = 0;
  std::int64_t first = 0;
  for (std::size_t s = 0; s < per_step.size(); ++s) {
    const std::vector<double>& values = per_step[s];
    const auto steps = static_cast<std::int64_t>(values.size());
    first = std::max<std::int64_t>(1, steps - static_cast<std::int64_t>(o.tail * steps) + 1);
    double tail_mean = 0;
    for (std::int64_t t = first; t <= steps; ++t)
      tail_mean += values[static_cast<std::size_t>(t - 1)];
    tail_mean /= static_cast<double>(steps - first + 1);
    const double u = runs[s].precision == Precision::kFp64 ? 0x1p-53 : 0x1p-24;
    if (tail_mean <= 64 * u * 64 * u * std::abs(values.front())) {
      ++at_rounding;
      continue;
    }
    const std::optional<double> q = TailExponent(values, first);
    if (!q) {
      if (v.kind == VerdictKind::kHolds) v.kind = VerdictKind::kInconclusive;
      v.detail = fmt::format(
          "seed {}: the last {:.0f}% of {} cannot be fitted (too few steps, or a batch mean not "
          "positive); {}",
          runs[s].seed, 100 * o.tail, quantity, v.detail);
      return;
    }
    exponents.push_back(*q);
  }
  if (exponents.empty()) {
    v.detail = fmt::format(
        "{} reached rounding level on every seed (its tail says nothing of a "
        "rate); {}",
        quantity, v.detail);
    return;
  }
  std::vector<std::string> per_seed;
  for (const double q : exponents) per_seed.push_back(fmt::format("{:.3g}", q));
  const double target = std::min(o.exponent, 1.0) - o.tolerance;
  std::string text;
  double lower = -INFINITY, upper = INFINITY;
  if (exponents.size() >= 2) {
    const MeanEstimate q = IndependentMean(exponents);
    const double half = StudentTQuantile(0.5 + confidence / 2, q.dof) * q.standard_error;
    lower = q.mean - half;
    upper = q.mean + half;
    text = fmt::format(
        "{} itself decays like T^-q over the last {:.0f}% of the run (steps {}..): "
        "q = {:.3g}, {:.0f}% interval [{:.3g}, {:.3g}] (per seed {}{})",
        quantity, 100 * o.tail, first, q.mean, 100 * confidence, lower, upper,
        fmt::join(per_seed, ", "),
        at_rounding > 0 ? fmt::format("; {} at rounding level", at_rounding) : "");
  } else {
    text = fmt::format(
        "{} itself decays like T^-q over the last {:.0f}% of the run with q = {} on "
        "the one seed not at rounding level: no interval",
        quantity, 100 * o.tail, per_seed.front());
  }
  if (upper < target) {
    v.kind = VerdictKind::kViolated;
    v.detail = fmt::format(
        "{}: more slowly than T^-{:.3g} (or not at all), so the running mean, whatever it did "
        "over the run, will decay like the tail; {}",
        text, target, v.detail);
  } else if (!(lower > 0) && v.kind == VerdictKind::kHolds) {
    v.kind = VerdictKind::kInconclusive;
    v.detail = fmt::format("{} may stall: {}, which reaches 0; {}", quantity, text, v.detail);
  } else {
    v.detail = fmt::format("{}; {}", text, v.detail);
  }
}

// Premises shared by the fits: every run completed.
bool AllCompleted(std::span<const RunEvidence> runs, Verdict& v) {
  for (const RunEvidence& run : runs) {
    Premise p = RunCompleted(run);
    if (p.failed()) {
      p.name = fmt::format("{} (seed {}, n = {})", p.name, run.seed, run.workers);
      v.premises.push_back(std::move(p));
      return false;
    }
  }
  v.premises.push_back(
      Premise::Met("every run completed with finite values", fmt::format("{} runs", runs.size())));
  return true;
}

// The running average (1/T) sum_{t<=T} of ||grad f(x_t)||^2 (or of f(x_t) - f*) decays like
// a T^-p + c; p is fitted per seed (Ceres) and its Student-t interval over the seeds is compared
// with the theorem's exponent (`exponent`, default 1/2), and the values' own decay over the tail
// with it too (JudgeTail). The claim cites the theorem of the runs' algorithm with its premises,
// or nothing (CiteTheorem).
Verdict CheckRate(const AssertionInput& input, RateOptions o) {
  o.fit.confidence = input.confidence;
  Verdict incomplete;
  if (!AllCompleted(input.runs, incomplete)) return incomplete;
  std::vector<Curve> curves;
  std::vector<std::vector<double>> per_step;
  for (const RunEvidence& run : input.runs) {
    const std::vector<double> values = PerStep(run, o.quantity);
    if (values.empty()) {
      return Verdict::Inconclusive(fmt::format(
          "seed {}: {} is not recorded at every step (eval_every = 1 and, for optimality_gap, a "
          "known f*)",
          run.seed, o.quantity));
    }
    if (o.from >= run.steps_done) {
      return Verdict::Inconclusive(
          fmt::format("from = {} leaves nothing of {} steps to fit", o.from, run.steps_done));
    }
    Curve curve = RunningAverageCurve(values, o.points, o.from);
    if (curve.x.size() < 3 ||
        std::any_of(curve.y.begin(), curve.y.end(), [](double y) { return !(y > 0); })) {
      return Verdict::Inconclusive(fmt::format(
          "seed {}: the running mean of {} from step {} gives {} points, not 3 or more positive "
          "ones a power law can be fitted to",
          run.seed, o.quantity, o.from, curve.x.size()));
    }
    curves.push_back(std::move(curve));
    per_step.push_back(values);
  }
  const ExponentEstimate e = FitAcrossSeeds(curves, o.fit);
  Verdict v = ExponentVerdict(e, o, "T", fmt::format("running mean of {}", o.quantity));
  incomplete.premises.swap(v.premises);
  v.source = CiteTheorem(input.runs, input.experiment, input.confidence, o, v);
  JudgeTail(v, input.runs, per_step, o, input.confidence, o.quantity);
  return v;
}

// Linear speedup is the 1/n of a variance term (sigma^2 / n): it needs noise for the n workers
// to average. Failed when the problem's gradients are exact (sigma = 0): then the runs differ in n
// only through the step size, and no corollary predicts a dependence on n.
Premise GradientNoise(const RunEvidence& run) {
  const std::string name = "noisy gradients, sigma > 0 (the 1/n is the variance term's)";
  const Constant* sigma = run.FindConstant("sigma");
  if (sigma == nullptr) {
    return Premise::Unchecked(name, "the problem does not know sigma");
  }
  if (sigma->value == 0) return Premise::Failed(name, DescribeConstant(*sigma));
  if (sigma->certainty != Certainty::kExact) {
    return Premise::Unchecked(
        name, fmt::format("{}: a bound, which does not show that the noise is positive",
                          DescribeConstant(*sigma)));
  }
  return Premise::Met(name, DescribeConstant(*sigma));
}

// Linear speedup: the mean of the quantity over the paper's t = from..T falls with the number of
// workers like a n^-q + c (sigma / sqrt(n T) gives q = 1/2 for the averaged squared gradient
// norm); q is fitted per seed over the check's worker counts. A late `from` leaves out the
// transient from x_0, which no number of workers shortens. The corollaries prescribe a step size
// that depends on n (and T); `lr_workers_exponent` states the one the claim is about, and the
// runs must have used it (their lr at n against the lr at the smallest n, times n^a).
Verdict CheckSpeedup(const AssertionInput& input, RateOptions o,
                     std::optional<double> lr_exponent) {
  o.fit.confidence = input.confidence;
  Verdict incomplete;
  if (!AllCompleted(input.runs, incomplete)) return incomplete;
  std::map<std::uint64_t, std::map<int, double>> by_seed;  // seed -> n -> value
  std::map<int, double> lr_at;                             // n -> the first step's lr
  std::vector<int> ns;
  for (const RunEvidence& run : input.runs) {
    const std::vector<double> values = PerStep(run, o.quantity);
    if (values.empty()) return Verdict::Inconclusive(o.quantity + " is not recorded every step");
    if (o.from >= static_cast<std::int64_t>(values.size())) {
      return Verdict::Inconclusive(
          fmt::format("from = {} leaves nothing of {} steps", o.from, values.size()));
    }
    double mean = 0;
    for (std::size_t t = static_cast<std::size_t>(o.from) - 1; t < values.size(); ++t) {
      mean += values[t];
    }
    by_seed[run.seed][run.workers] =
        mean / static_cast<double>(values.size() - static_cast<std::size_t>(o.from) + 1);
    if (const Series* lr = run.Metric(metric::kLr); lr != nullptr && !lr->empty()) {
      lr_at[run.workers] = lr->sample().front().value;
    }
    if (std::find(ns.begin(), ns.end(), run.workers) == ns.end()) ns.push_back(run.workers);
  }
  std::sort(ns.begin(), ns.end());
  if (ns.size() < 3) {
    return Verdict::Inconclusive("a speedup fit needs at least 3 worker counts ([check] workers)");
  }
  if (lr_exponent) {
    const std::string name = fmt::format(
        "the step size scales like n^{:.3g} (the corollary's prescription)", *lr_exponent);
    const double base = lr_at[ns.front()] / std::pow(ns.front(), *lr_exponent);
    std::string broken;
    for (const int n : ns) {
      const double expected = base * std::pow(n, *lr_exponent);
      if (std::abs(lr_at[n] - expected) > 1e-9 * expected) {
        broken = fmt::format("lr = {:.6g} at n = {}, the prescription gives {:.6g}", lr_at[n], n,
                             expected);
        break;
      }
    }
    incomplete.premises.push_back(
        broken.empty() ? Premise::Met(name, fmt::format("lr = {:.6g} at n = {}, {:.6g} at n = {}",
                                                        lr_at[ns.front()], ns.front(),
                                                        lr_at[ns.back()], ns.back()))
                       : Premise::Failed(name, broken));
  }
  std::vector<double> n_values(ns.begin(), ns.end());
  std::vector<std::vector<double>> y_per_seed;
  for (const auto& [seed, values] : by_seed) {
    std::vector<double> y;
    for (const int n : ns) {
      if (!values.contains(n)) {
        return Verdict::Inconclusive(fmt::format(
            "seed {} has no run with n = {}: every seed needs every worker count", seed, n));
      }
      if (!(values.at(n) > 0)) {
        return Verdict::Inconclusive(
            fmt::format("seed {}, n = {}: the mean of {} is {:.3g}; a power law needs it > 0", seed,
                        n, o.quantity, values.at(n)));
      }
      y.push_back(values.at(n));
    }
    y_per_seed.push_back(std::move(y));
  }
  Verdict v = ExponentVerdict(FitSpeedup(n_values, y_per_seed, o.fit), o, "n",
                              fmt::format("mean of {} over t = {}..{}, n = {}", o.quantity, o.from,
                                          input.runs.front().steps_done, fmt::join(ns, ", ")));
  v.premises = std::move(incomplete.premises);
  v.premises.push_back(GradientNoise(input.runs.front()));
  v.source = CiteTheorem(input.runs, input.experiment, input.confidence, o, v);
  return v;
}

// Where the run ends: f(x_T) - f* <= `tolerance` at the last evaluation (the signSGD
// counterexamples converge, but to the wrong point).
Verdict CheckOptimalityGap(const AssertionInput& input, double tolerance) {
  const RunEvidence& run = input.runs.front();
  const Series* gap = run.Metric(metric::kOptimalityGap);
  if (gap == nullptr || gap->empty()) {
    return Verdict::Inconclusive(
        "no optimality_gap: the problem does not know f* (set reference "
        "= true to estimate it)");
  }
  const Series::Point last = gap->sample().back();
  Verdict v;
  v.measured_value = last.value;
  v.bound_value = tolerance;
  v.measured = fmt::format("f(x_T) - f* = {:.6g} at step {}{}", last.value, last.step,
                           run.completed() ? "" : " (" + run.status + ")");
  v.bound = fmt::format("<= {:.3g}", tolerance);
  v.worst_step = last.step;
  v.kind =
      last.value <= tolerance && run.completed() ? VerdictKind::kHolds : VerdictKind::kViolated;
  // The gap was measured with the f* the run knew: with an upper bound on it (f where L-BFGS
  // stopped) the measured gap is at most the true one, which shows a gap too large, never one
  // small enough.
  const Constant* f_star = run.FindConstant("f_star");
  const std::string name = "f* exact (the gap within the tolerance is f(x_T) - f*)";
  if (f_star == nullptr || f_star->certainty == Certainty::kExact ||
      v.kind != VerdictKind::kHolds) {
    if (f_star != nullptr) v.premises.push_back(Premise::Met(name, DescribeConstant(*f_star)));
  } else {
    v.premises.push_back(
        Premise::Failed(name, fmt::format("{}: the true gap may be larger than the measured one",
                                          DescribeConstant(*f_star))));
  }
  return v;
}

// How far a run ends from a reference run of the same experiment (`reference`, a label):
// |metric(run) - metric(reference)| <= `tolerance` at the last evaluation, for `metric`
// (default train_loss). Adam with naively compressed gradients drifts from Adam (onebit-adam.txt
// Sec. 3.2); 1-bit Adam's compressed momentum does not.
struct ReferenceOptions {
  std::string reference;
  std::string metric;
  double tolerance = 0.01;
};

Verdict CheckTracksReference(const AssertionInput& input, const ReferenceOptions& o) {
  const RunEvidence& run = input.runs.front();
  const std::string& reference = o.reference;
  const std::string& metric = o.metric;
  const double tolerance = o.tolerance;
  const RunEvidence* ref = nullptr;
  for (const RunEvidence& r : input.experiment) {
    if (r.label == reference) ref = &r;
  }
  if (ref == nullptr) return Verdict::Inconclusive(fmt::format("no run '{}'", reference));
  if (ref == &run || ref->label == run.label) {
    return Verdict::Inconclusive(fmt::format("'{}' is the reference itself", run.label));
  }
  const Series* a = run.Metric(metric);
  const Series* b = ref->Metric(metric);
  if (a == nullptr || b == nullptr || a->empty() || b->empty()) {
    return Verdict::Inconclusive(fmt::format("metric {} is not recorded by both runs", metric));
  }
  const double x = a->sample().back().value, y = b->sample().back().value;
  Verdict v;
  v.measured_value = std::abs(x - y);
  v.bound_value = tolerance;
  v.measured = fmt::format("|{} - {}| = |{:.6g} - {:.6g}| = {:.4g}{}", metric, reference, x, y,
                           v.measured_value, run.completed() ? "" : " (" + run.status + ")");
  v.bound = fmt::format("<= {:.3g}", tolerance);
  v.worst_step = a->sample().back().step;
  v.kind = v.measured_value <= tolerance && run.completed() ? VerdictKind::kHolds
                                                            : VerdictKind::kViolated;
  Premise reference_ok = RunCompleted(*ref);
  reference_ok.name = fmt::format("the reference '{}' completed without diverging", reference);
  v.premises.push_back(std::move(reference_ok));
  return v;
}

Judgement MakeRateCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const RateOptions o = ReadRateOptions(options);
  return [o](const AssertionInput& input) { return CheckRate(input, o); };
}

Judgement MakeSpeedupCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const RateOptions o = ReadRateOptions(options);
  const std::optional<double> lr_exponent =
      options.GetOptionalDouble("lr_workers_exponent", Interval{-2, 2});
  return
      [o, lr_exponent](const AssertionInput& input) { return CheckSpeedup(input, o, lr_exponent); };
}

Judgement MakeOptimalityGapCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const double tolerance = options.GetDouble("tolerance", 1e-3, Interval::Positive());
  return [tolerance](const AssertionInput& input) { return CheckOptimalityGap(input, tolerance); };
}

Judgement MakeTracksReferenceCheck(OptionTable& options, const AssertionContext& context) {
  ReferenceOptions o;
  o.reference = options.RequireString("reference");
  o.metric = options.GetString("metric", metric::kTrainLoss);
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval::Positive());
  if (std::find(context.labels.begin(), context.labels.end(), o.reference) ==
      context.labels.end()) {
    options.Fail("reference", fmt::format("no [[optimizer]] is labelled '{}' (labels: {})",
                                          o.reference, fmt::join(context.labels, ", ")));
  }
  return [o](const AssertionInput& input) { return CheckTracksReference(input, o); };
}

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
// The probes the premises of the theorems the rate assertions cite read (Birder's, SPAMS's,
// 1-bit Adam's and 1-bit LAMB's).
const std::vector<std::string_view> kTheoremPremiseProbes = {
    "min-b", "birder-z", "ef-norm", "spams-ef", "q-deviate", "onebit-error", "lamb-ratios"};

std::vector<AssertionInfo> RateAssertions() {
  return {
      {.name = "linear-speedup",
       .summary = "the averaged squared gradient norm falls like n^-q with the corollary's q, "
                  "at the step "
                  "size it prescribes for each n",
       .source = "the sigma/sqrt(nT) term of onebit-adam ICML Cor. 1, spams.txt Cor. 1, "
                 "onebit-lamb Cor. "
                 "1",
       .probes = {},
       .scope = AssertionScope::kAcrossWorkers,
       .make = &MakeSpeedupCheck,
       .premise_probes = kTheoremPremiseProbes,
       .example = {R"(seed = 1
steps = 600
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3, 4, 5, 6, 7, 8]
workers = [1, 2, 4, 8, 16]

[problem]
name = "quadratic"
dimension = 50
L = 1.0
mu = 0.1
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 1.0, workers_exponent = 0.5, steps_exponent = -0.5 }

[[assert]]
assertion = "linear-speedup"
exponent = 0.5
lr_workers_exponent = 0.5
from = 300
offset = false
)",
                   {{"exact gradients: no noise for n workers to average", {"problem.sigma=0"}}}}},
      {.name = "optimality-gap",
       .summary = "f(x_T) - f* <= tolerance at the end of the run",
       .source = "convergence to a minimiser (the signSGD counterexamples violate it)",
       .probes = {},
       .make = &MakeOptimalityGapCheck,
       .judges_failure = true,
       .example = {ExampleSpec(kFullGradients, R"(
[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.5 }
)",
                               "optimality-gap")}},
      {.name = "rate",
       .summary = "the running average of ||grad f||^2 decays like T^-p with the theorem's p",
       .source = "birder.txt Thm 1; spams.txt Thm 1; onebit-adam-icml-with-appendix.txt Thm 1",
       .probes = {},
       .scope = AssertionScope::kAcrossSeeds,
       .make = &MakeRateCheck,
       .premise_probes = kTheoremPremiseProbes,
       .example = {R"(seed = 1
steps = 800
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3, 4, 5, 6, 7, 8]

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "sgd"
schedule = { name = "inv-sqrt", lr = 0.5 }

[[assert]]
assertion = "rate"
)",
                   {{"a constant step: the values stop falling at the noise floor",
                     {"optimizer.schedule.name=constant"}}}}},
      {.name = "tracks-reference",
       .summary = "the run ends within tolerance of a reference run",
       .source = "onebit-adam.txt Sec. 3.2, Fig. 6 (naive compression drifts from Adam)",
       .probes = {},
       .make = &MakeTracksReferenceCheck,
       .judges_failure = true,
       .example = {ExampleSpec(kNoisyQuadratic, R"(
[[optimizer]]
name = "adam"
schedule = { name = "constant", lr = 0.05 }

[[optimizer]]
name = "onebit-adam"
warmup_steps = 50
schedule = { name = "constant", lr = 0.05 }
)",
                               "tracks-reference",
                               "runs = [\"onebit-adam\"]\nreference = \"adam\"\nmetric = "
                               "\"optimality_gap\"\ntolerance = 0.05\n")}},
  };
}

}  // namespace lemmalab
