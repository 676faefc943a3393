// Claims about whole runs: rates fitted over seeds and worker counts, where a run ends up, and
// how far it drifts from a reference run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "theory/assertions.h"
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

// Which paper states a rate for the run's algorithm (the claim's source for that run).
std::string RateSource(const RunEvidence& run) {
  static const std::map<std::string, std::string, std::less<>> kSources = {
      {"birder", "birder.txt Thm 1, Eq. 6 (and the O(1/sqrt(nT)) the text after it claims)"},
      {"dist-spams", "spams.txt Thm 1, Cor. 1 (lines 221-270)"},
      {"spams", "spams.txt Thm 1, Cor. 2 (lines 221-316)"},
      {"onebit-adam", "onebit-adam-icml-with-appendix.txt Thm 1, Cor. 1"},
      {"onebit-adam-fp32", "onebit-adam-icml-with-appendix.txt Thm 1, Cor. 1"},
      {"onebit-lamb", "onebit-lamb.txt Thm 1, Cor. 1 (App. A.9)"},
  };
  const auto it = kSources.find(run.optimizer);
  return it != kSources.end()
             ? it->second
             : fmt::format("no paper's theorem for {}: the classical rate given as `exponent`",
                           run.optimizer);
}

struct RateOptions {
  std::string quantity;
  double exponent = 0.5;
  bool at_least = true;
  double tolerance = 0.05;  // how far below (at-least) or around (equal) the exponent may lie
  double floor = 0.05;      // the share of the last value a fitted limit c may make up: above it,
                            // the quantity does not go to zero
  std::int64_t from = 10;
  int points = 30;
  AcrossSeedsOptions fit;
};

RateOptions ReadRateOptions(OptionTable& options) {
  RateOptions o;
  o.quantity = Choose(options, "quantity", "grad_sq_norm", {"grad_sq_norm", "optimality_gap"});
  o.exponent = options.GetDouble("exponent", 0.5, Interval::NonNegative());
  o.at_least = Choose(options, "compare", "at-least", {"at-least", "equal"}) == "at-least";
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval::Positive());
  o.floor = options.GetDouble("floor", o.floor, Interval{0, 1, true, true});
  o.from = options.GetInt("from", 10, 1);
  o.points = static_cast<int>(options.GetInt("points", 30, 3, 1000));
  o.fit.fit.fit_offset = options.GetBool("offset", true);
  return o;
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

// Does the quantity go to zero? The fitted c is the level the curve tends to; its share of the
// last value, c / y(T), over the seeds: an interval above `floor` (default 0.05) says the
// quantity does not go to zero (violated), one that reaches above it leaves the question open
// (inconclusive). The model's c can only show a floor if it is fitted (offset = true).
void JudgeFloor(Verdict& v, const ExponentEstimate& e, std::span<const Curve> curves,
                const RateOptions& o, double confidence, std::string_view quantity) {
  if (!o.fit.fit.fit_offset || e.fits.size() < 2) return;
  std::vector<double> shares;
  for (std::size_t s = 0; s < e.fits.size(); ++s) {
    if (e.fits[s].converged) shares.push_back(e.fits[s].c / curves[s].y.back());
  }
  if (shares.size() < 2) return;
  const MeanEstimate share = IndependentMean(shares);
  const double half = StudentTQuantile(0.5 + confidence / 2, share.dof) * share.standard_error;
  std::vector<std::string> per_seed;
  for (const double x : shares) per_seed.push_back(fmt::format("{:.3g}", x));
  const std::string text = fmt::format(
      "the fitted floor c is {:.3g} of the last value ({:.0f}% interval [{:.3g}, {:.3g}]; per "
      "seed {})",
      share.mean, 100 * confidence, share.mean - half, share.mean + half,
      fmt::join(per_seed, ", "));
  if (share.mean - half > o.floor) {
    v.kind = VerdictKind::kViolated;
    v.detail = fmt::format("{} does not go to zero: {}, above floor = {:.3g}; {}", quantity, text,
                           o.floor, v.detail);
  } else if (share.mean + half > o.floor && v.kind == VerdictKind::kHolds) {
    v.kind = VerdictKind::kInconclusive;
    v.detail = fmt::format("{} may stall: {}, which reaches floor = {:.3g}; {}", quantity, text,
                           o.floor, v.detail);
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
// with the theorem's exponent (`exponent`, default 1/2), and the offset c with the last value.
Verdict CheckRate(const AssertionInput& input, RateOptions o) {
  o.fit.confidence = input.confidence;
  Verdict incomplete;
  if (!AllCompleted(input.runs, incomplete)) return incomplete;
  std::vector<Curve> curves;
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
  }
  const ExponentEstimate e = FitAcrossSeeds(curves, o.fit);
  Verdict v = ExponentVerdict(e, o, "T", fmt::format("running mean of {}", o.quantity));
  v.source = RateSource(input.runs.front());
  incomplete.premises.swap(v.premises);
  JudgeFloor(v, e, curves, o, input.confidence, fmt::format("the running mean of {}", o.quantity));
  return v;
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
    if (const Series* lr = run.Metric("lr"); lr != nullptr && !lr->empty()) {
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
  v.source = RateSource(input.runs.front());
  return v;
}

// Where the run ends: f(x_T) - f* <= `tolerance` at the last evaluation (the signSGD
// counterexamples converge, but to the wrong point).
Verdict CheckOptimalityGap(const AssertionInput& input, double tolerance) {
  const RunEvidence& run = input.runs.front();
  const Series* gap = run.Metric("optimality_gap");
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

}  // namespace

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
  o.metric = options.GetString("metric", "train_loss");
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval::Positive());
  if (std::find(context.labels.begin(), context.labels.end(), o.reference) ==
      context.labels.end()) {
    options.Fail("reference", fmt::format("no [[optimizer]] is labelled '{}' (labels: {})",
                                          o.reference, fmt::join(context.labels, ", ")));
  }
  return [o](const AssertionInput& input) { return CheckTracksReference(input, o); };
}

}  // namespace lemmalab
