// The compressors' contracts, judged on the inputs a run gave them (probes q-unbiased and
// q-deviate, theory/compressor_probes.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "theory/assertions.h"
#include "theory/birder_probes.h"
#include "theory/compressor_probes.h"
#include "theory/premises.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// Where a compressor property comes from: Birder's Lemma 1 where every sender uses its
// quantizer, otherwise the contracts the run's compressors declare (workers', and the server's
// when it has its own).
std::string ContractSource(const RunEvidence& run, std::string_view birder_source) {
  const BirderQuantizerSides sides = BirderQuantizerOf(run.hyperparameters);
  if (sides.workers && sides.server) return std::string(birder_source);
  std::vector<std::string> names;
  for (const char* key : {"compressor.name", "server_compressor.name"}) {
    const std::optional<std::string> name = run.hyperparameters.Text(key);
    if (name && *name != "identity" &&
        std::find(names.begin(), names.end(), *name) == names.end()) {
      names.push_back(*name);
    }
  }
  if (names.empty()) return std::string(birder_source);
  return fmt::format("the {} compressor's declared contract (compressors/, README Compressors)",
                     fmt::join(names, " and "));
}

struct UnbiasedOptions {
  bool inside = false;
  double tolerance = 0.05;
};

// E[C(u)] = u. Evidence against: each call's split-sample statistic z is Student-t with
// nu = draws/2 - 1 degrees of freedom when C is unbiased (variance nu / (nu - 2)); the calls use
// independent draws, so Stouffer's Z = sum z / sqrt(N nu / (nu - 2)) is standard normal, and a
// bias in any direction pushes it up: violated when Z exceeds the one-sided normal quantile at
// the check's confidence, or when a deterministic compressor moved an input (z = +inf).
// Evidence for: the calls' unbiased estimates of the relative squared bias ||E C(u) - u||^2 /
// ||u||^2 are averaged, and their one-sided upper confidence bound (Student-t over the calls)
// must lie below tolerance^2: the data rule out a relative bias above `tolerance` (default
// 0.05). Not rejected but not bounded either (few calls, a large noise) is inconclusive.
// `coordinates = "inside"` judges only the coordinates with |u_j| <= 1, where Lemma 1 speaks.
// The draws are the probe's own, so a diverged run's recorded calls would still be valid tests,
// but the claim is about the run's inputs: a run that did not complete is inconclusive.
Verdict CheckUnbiased(const AssertionInput& input, const UnbiasedOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.source = ContractSource(run, "birder.txt Eq. 5, Lemma 1 Eq. 17");
  v.premises.push_back(RunCompleted(run));
  std::string why;
  const Series* z = RequireProbe(run, "q-unbiased", o.inside ? "z_inside" : "z", why);
  const Series* sq = RequireProbe(run, "q-unbiased", o.inside ? "sq_bias_inside" : "sq_bias", why);
  if (z == nullptr || sq == nullptr) {
    Verdict missing = Verdict::Inconclusive(why);
    missing.premises = std::move(v.premises);
    return missing;
  }
  const double nu = kUnbiasednessDraws / 2 - 1;
  double sum = 0;
  const Series::Point* infinite = nullptr;
  for (const Series::Point& p : z->points) {
    if (std::isinf(p.value) && p.value > 0 && infinite == nullptr) infinite = &p;
    sum += p.value;
  }
  const auto n = static_cast<double>(z->points.size());
  const double stouffer = sum / std::sqrt(n * nu / (nu - 2));
  const double critical = NormalQuantile(input.confidence);
  const MeanEstimate bias = IndependentMean(sq->Values());
  const double upper =
      bias.dof > 0 ? bias.mean + StudentTQuantile(input.confidence, bias.dof) * bias.standard_error
                   : std::numeric_limits<double>::infinity();
  v.measured_value = stouffer;
  v.bound_value = critical;
  const Series::Point worst = *z->Max();
  v.worst_step = worst.step;
  v.worst_worker = worst.worker;
  v.measured = fmt::format(
      "Stouffer Z = {:.4g} over {} calls x {} draws{}; relative bias ||E C(u) - u|| / ||u|| at "
      "most {:.3g} ({:.0f}% upper bound)",
      stouffer, z->points.size(), kUnbiasednessDraws,
      o.inside ? " (coordinates with |u| <= 1)" : "", std::sqrt(std::max(0.0, upper)),
      100 * input.confidence);
  v.bound = fmt::format("Z <= {:.3g} (one-sided, {:.0f}%) and relative bias <= tolerance = {:.3g}",
                        critical, 100 * input.confidence, o.tolerance);
  if (infinite != nullptr) {
    v.kind = VerdictKind::kViolated;
    v.worst_step = infinite->step;
    v.worst_worker = infinite->worker;
    v.detail = fmt::format(
        "a deterministic compressor moved its input at step {} ({}): every draw gave the same "
        "C(u) != u",
        infinite->step, SenderName(infinite->worker));
  } else if (stouffer > critical) {
    v.kind = VerdictKind::kViolated;
    v.detail = "the draws lean the way the first half of each call's draws saw (Stouffer's Z)";
  } else if (upper <= o.tolerance * o.tolerance) {
    v.kind = VerdictKind::kHolds;
  } else if (!std::isfinite(upper)) {
    v.kind = VerdictKind::kInconclusive;
    v.detail = "no bias detected, but the bias estimates are not all finite";
  } else {
    v.kind = VerdictKind::kInconclusive;
    v.detail = fmt::format(
        "no bias detected, but the {} calls cannot rule out a relative bias above tolerance = "
        "{:.3g} (upper bound {:.3g}): more calls or a larger tolerance",
        z->points.size(), o.tolerance, std::sqrt(std::max(0.0, upper)));
  }
  return v;
}

struct VarianceOptions {
  double tolerance = 0.05;
};

// Lemma 1 Eq. 18: Var Q(u)_j = 1 - u_j^2 for Birder's quantizer on |u_j| <= 1. Per call c the
// draws' summed sample variances N_c have expectation D_c = sum_j (1 - u_j^2); the ratio
// estimator R = sum_c N_c / sum_c D_c pools the calls (a per-call ratio is heavy-tailed when
// every |u_j| is near 1 and D_c is tiny) and its standard error is the delta method's,
// sqrt(sum_c (N_c - R D_c)^2 / (k (k - 1))) / mean_c D_c. An equality is supported only by an
// interval that is narrow around it: holds when the two-sided Student-t interval lies within
// [1 - tolerance, 1 + tolerance] (default 0.05), violated when it excludes 1.
Verdict CheckQuantizerVariance(const AssertionInput& input, const VarianceOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  v.premises.push_back(OptionIs(run, "compressor.name", "stochastic-binary",
                                "Eq. 18 is the variance law of Birder's quantizer"));
  std::string why;
  const Series* num = RequireProbe(run, "q-unbiased", "variance_sum", why);
  const Series* den = RequireProbe(run, "q-unbiased", "variance_expected", why);
  const std::size_t k = num == nullptr ? 0 : num->points.size();
  if (num == nullptr || den == nullptr || k < 2 || den->points.size() != k) {
    v.detail = num == nullptr || den == nullptr ? why : "fewer than 2 sampled calls";
    return v;
  }
  double sum_n = 0, sum_d = 0;
  for (std::size_t c = 0; c < k; ++c) {
    sum_n += num->points[c].value;
    sum_d += den->points[c].value;
  }
  const double ratio = sum_n / sum_d;
  double sq = 0, worst = -1;
  std::size_t worst_call = 0;
  for (std::size_t c = 0; c < k; ++c) {
    const double r = num->points[c].value - ratio * den->points[c].value;
    sq += r * r;
    if (std::abs(r) > worst) {
      worst = std::abs(r);
      worst_call = c;
    }
  }
  const double n = static_cast<double>(k);
  const double se = std::sqrt(sq / (n * (n - 1))) / (sum_d / n);
  const double half = StudentTQuantile(0.5 + input.confidence / 2, n - 1) * se;
  v.measured_value = ratio;
  v.bound_value = 1;
  v.measured =
      fmt::format("sum s_j^2 / sum (1 - u_j^2) = {:.5g} +- {:.2g} ({:.0f}%, {} calls x {} draws)",
                  ratio, half, 100 * input.confidence, k, kUnbiasednessDraws);
  v.bound = fmt::format("= 1 (the interval within 1 +- tolerance = {:.3g})", o.tolerance);
  if (std::abs(ratio - 1) > half) {
    v.kind = VerdictKind::kViolated;
  } else if (std::abs(ratio - 1) + half <= o.tolerance) {
    v.kind = VerdictKind::kHolds;
  } else {
    v.kind = VerdictKind::kInconclusive;
    v.detail = fmt::format("the interval contains 1 but reaches beyond 1 +- {:.3g}", o.tolerance);
  }
  v.worst_step = num->points[worst_call].step;
  v.worst_worker = num->points[worst_call].worker;
  return v;
}

// spams.txt Assumption 1: ||C(x) - x|| <= q ||x|| with q < 1, for every call. q is `q` from the
// [[assert]] table for every sender, or each sender's own declared q (workers and server may
// use different compressors). Deterministic: every recorded call is evidence, whether or not the
// run went on to complete.
Verdict CheckDeviation(const AssertionInput& input, std::optional<double> given_q) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* ratio = RequireProbe(run, "q-deviate", "ratio", why);
  if (ratio == nullptr) return Verdict::Inconclusive(why);
  if (given_q) {
    return EveryPointAtMost(*ratio, *given_q, "||C(u) - u|| / ||u||",
                            fmt::format("<= q = {:.6g} (given)", *given_q));
  }
  std::map<int, double> declared;
  if (const Series* d = run.Probe("q-deviate", "declared_q")) {
    for (const Series::Point& p : d->points) declared[p.worker] = p.value;
  }
  Series relative;
  std::vector<std::string> qs;
  for (const auto& [sender, q] : declared) {
    qs.push_back(fmt::format("{} {:.4g}", SenderName(sender), q));
  }
  for (const Series::Point& p : ratio->points) {
    const auto it = declared.find(p.worker);
    if (it == declared.end()) {
      return Verdict::Inconclusive(fmt::format(
          "{}'s compressor declares no q (stochastic and sign compressors have none): give q in "
          "the [[assert]] table",
          SenderName(p.worker)));
    }
    // q = 0 (the identity): any move at all breaks it.
    const double q = it->second;
    const double r =
        q > 0 ? p.value / q : (p.value == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    relative.points.push_back({p.step, p.worker, r});
  }
  return EveryPointAtMost(relative, 1.0, "||C(u) - u|| / (q ||u||)",
                          fmt::format("<= 1, q declared per sender: {}", fmt::join(qs, ", ")));
}

}  // namespace

Judgement MakeUnbiasedCheck(OptionTable& options, const AssertionContext& /*context*/) {
  UnbiasedOptions o;
  o.inside = Choose(options, "coordinates", "all", {"all", "inside"}) == "inside";
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval{0, 1, true, false});
  return [o](const AssertionInput& input) { return CheckUnbiased(input, o); };
}

Judgement MakeQuantizerVarianceCheck(OptionTable& options, const AssertionContext& /*context*/) {
  VarianceOptions o;
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval{0, 1, true, false});
  return [o](const AssertionInput& input) { return CheckQuantizerVariance(input, o); };
}

Judgement MakeDeviationCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const std::optional<double> q = options.GetOptionalDouble("q", Interval::ClosedOpen(0, 1));
  return [q](const AssertionInput& input) { return CheckDeviation(input, q); };
}

}  // namespace lemmalab
