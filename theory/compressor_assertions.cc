// The compressors' contracts, judged on the inputs a run gave them (probes q-unbiased and
// q-deviate, theory/compressor_probes.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <map>

#include "theory/assertions.h"
#include "theory/compressor_probes.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {

// E[C(u)] = u. Each call's split-sample statistic z is Student-t with nu = draws/2 - 1 degrees
// of freedom when C is unbiased (variance nu / (nu - 2)); the calls use independent draws, so
// Stouffer's Z = sum z / sqrt(N nu / (nu - 2)) is standard normal, and a bias in any direction
// pushes it up. Violated when Z exceeds the one-sided normal quantile at the check's confidence,
// or when a deterministic compressor moved an input (z = +inf). `coordinates = "inside"` tests
// only the coordinates with |u_j| <= 1, where Lemma 1 speaks.
Verdict CheckUnbiased(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  const bool inside = Choose(input.options, "coordinates", "all", {"all", "inside"}) == "inside";
  std::string why;
  const Series* z = RequireProbe(run, "q-unbiased", inside ? "z_inside" : "z", why);
  if (z == nullptr) return Verdict::Inconclusive(why);
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
  Verdict v;
  v.measured_value = stouffer;
  v.bound_value = critical;
  v.bound = fmt::format("Z <= {:.3g} (one-sided, {:.0f}%)", critical, 100 * input.confidence);
  const Series::Point worst = *z->Max();
  v.worst_step = worst.step;
  v.worst_worker = worst.worker;
  double largest_bias = 0;
  if (const Series* bias = run.Probe("q-unbiased", "bias"); bias != nullptr && !bias->empty()) {
    largest_bias = bias->Max()->value;
  }
  v.measured = fmt::format(
      "Stouffer Z = {:.4g} over {} calls x {} draws{}; largest relative bias "
      "of a call's mean {:.3g}",
      stouffer, z->points.size(), kUnbiasednessDraws, inside ? " (coordinates with |u| <= 1)" : "",
      largest_bias);
  if (infinite != nullptr) {
    v.kind = VerdictKind::kViolated;
    v.worst_step = infinite->step;
    v.worst_worker = infinite->worker;
    v.detail = fmt::format(
        "a deterministic compressor moved its input at step {} ({}): every "
        "draw gave the same C(u) != u",
        infinite->step, SenderName(infinite->worker));
    return v;
  }
  v.kind = stouffer > critical ? VerdictKind::kViolated : VerdictKind::kHolds;
  return v;
}

// Lemma 1 Eq. 18: Var Q(u)_j = 1 - u_j^2 for Birder's quantizer on |u_j| <= 1. Per call c the
// draws' summed sample variances N_c have expectation D_c = sum_j (1 - u_j^2); the ratio
// estimator R = sum_c N_c / sum_c D_c pools the calls (a per-call ratio is heavy-tailed when
// every |u_j| is near 1 and D_c is tiny) and its standard error is the delta method's,
// sqrt(sum_c (N_c - R D_c)^2 / (k (k - 1))) / mean_c D_c. Violated when 1 lies outside the
// two-sided Student-t interval.
Verdict CheckQuantizerVariance(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* num = RequireProbe(run, "q-unbiased", "variance_sum", why);
  const Series* den = RequireProbe(run, "q-unbiased", "variance_expected", why);
  if (num == nullptr || den == nullptr) return Verdict::Inconclusive(why);
  const std::size_t k = num->points.size();
  if (k < 2 || den->points.size() != k) return Verdict::Inconclusive("fewer than 2 sampled calls");
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
  Verdict v;
  v.measured_value = ratio;
  v.bound_value = 1;
  v.measured =
      fmt::format("sum s_j^2 / sum (1 - u_j^2) = {:.5g} +- {:.2g} ({:.0f}%, {} calls x {} draws)",
                  ratio, half, 100 * input.confidence, k, kUnbiasednessDraws);
  v.bound = "= 1";
  v.kind = std::abs(ratio - 1) <= half ? VerdictKind::kHolds : VerdictKind::kViolated;
  v.worst_step = num->points[worst_call].step;
  v.worst_worker = num->points[worst_call].worker;
  return v;
}

// spams.txt Assumption 1: ||C(x) - x|| <= q ||x|| with q < 1, for every call. q is `q` from the
// [[assert]] table for every sender, or each sender's own declared q (workers and server may
// use different compressors).
Verdict CheckDeviation(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* ratio = RequireProbe(run, "q-deviate", "ratio", why);
  if (ratio == nullptr) return Verdict::Inconclusive(why);
  if (input.options.Has("q")) {
    const double q = input.options.GetDouble("q", 0, Interval::ClosedOpen(0, 1));
    return EveryPointAtMost(*ratio, q, "||C(u) - u|| / ||u||",
                            fmt::format("<= q = {:.6g} (given)", q));
  }
  std::map<int, double> declared;
  if (const Series* d = run.Probe("q-deviate", "declared_q")) {
    for (const Series::Point& p : d->points) declared[p.worker] = p.value;
  }
  Series relative;
  std::vector<std::string> qs;
  for (const auto& [sender, q] : declared)
    qs.push_back(fmt::format("{} {:.4g}", SenderName(sender), q));
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

}  // namespace lemmalab
