// The compressors' contracts, judged on the inputs a run gave them (probes q-unbiased and
// q-deviate, theory/compressor_probes.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "theory/assertion_examples.h"
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
  return fmt::format("the {} compressor's declared contract (compressors/, docs/compressors.md)",
                     fmt::join(names, " and "));
}

struct UnbiasedOptions {
  bool inside = false;
  double tolerance = 0.05;
};

// E[C(u)] = u. A deterministic compressor (its `deterministic` flag, probe q-unbiased) has no
// draws to average: E C(u) = C(u), so the claim is C(u) = u on every sampled call, decided
// exactly (the draws' relative bias ||mean C(u) - u|| / ||u|| is then ||C(u) - u|| / ||u||): any
// call that moved its input beyond the run's rounding violates it (a top-k that drops one
// coordinate, a bf16 cast). For the stochastic ones, evidence against: each call's split-sample
// statistic z is Student-t with nu = draws/2 - 1 degrees of freedom when C is unbiased (variance
// nu / (nu - 2)); the calls use independent draws, so Stouffer's Z = sum z / sqrt(N nu / (nu -
// 2)) is standard normal, and a bias in any direction pushes it up: violated when Z exceeds the
// one-sided normal quantile at the check's confidence. Evidence for: the calls' unbiased
// estimates of the relative squared bias ||E C(u) - u||^2 / ||u||^2 are averaged, and their
// one-sided upper confidence bound (Student-t over the calls) must lie below tolerance^2: the
// data rule out a relative bias above `tolerance` (default 0.05). Not rejected but not bounded
// either (few calls, a large noise) is inconclusive. `coordinates = "inside"` judges only the
// coordinates with |u_j| <= 1, where Lemma 1 speaks. The draws are the probe's own, so a
// diverged run's recorded calls would still be valid tests, but the claim is about the run's
// inputs: a run that did not complete is inconclusive.
Verdict CheckUnbiased(const AssertionInput& input, const UnbiasedOptions& o) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.source = ContractSource(run, "birder.txt Eq. 5, Lemma 1 Eq. 17");
  v.premises.push_back(RunCompleted(run));
  std::string why;
  const Series* z = RequireProbe(run, "q-unbiased", o.inside ? "z_inside" : "z", why);
  const Series* sq = RequireProbe(run, "q-unbiased", o.inside ? "sq_bias_inside" : "sq_bias", why);
  const Series* bias = RequireProbe(run, "q-unbiased", "bias", why);
  if (z == nullptr || sq == nullptr || bias == nullptr) {
    Verdict missing = Verdict::Inconclusive(why);
    missing.premises = std::move(v.premises);
    return missing;
  }
  // The deterministic senders, judged exactly: the largest move of any of their sampled calls.
  std::optional<Series::Point> moved;
  std::vector<std::string> deterministic;
  if (const Series* flags = run.Probe("q-unbiased", "deterministic")) {
    for (const Series::Point& flag : flags->sample()) {
      if (flag.value == 0) continue;
      deterministic.push_back(SenderName(flag.worker));
      const Extent e = bias->extent(flag.worker);
      const Series::Point worst =
          e.finite() ? Series::Point{e.max_step, flag.worker, e.max}
                     : Series::Point{e.first_non_finite_step, flag.worker, e.first_non_finite};
      if (!moved || !(worst.value <= moved->value)) moved = worst;
    }
  }
  const double rounding = RoundingSlack(run);
  if (moved && !(moved->value <= rounding)) {
    v.kind = VerdictKind::kViolated;
    v.measured_value = moved->value;
    v.bound_value = rounding;
    v.worst_step = moved->step;
    v.worst_worker = moved->worker;
    v.measured = fmt::format(
        "||C(u) - u|| / ||u|| = {:.4g} at step {} ({}), the largest over all {} sampled calls of "
        "the deterministic compressor",
        moved->value, moved->step, SenderName(moved->worker), bias->observed());
    v.bound = fmt::format("C(u) = u up to rounding ({:.1g}): a deterministic C has E C(u) = C(u)",
                          rounding);
    v.detail = fmt::format(
        "{} compress{} deterministically, so E C(u) = C(u): the calls that moved their input are "
        "exact evidence of a bias",
        fmt::join(deterministic, ", "), deterministic.size() == 1 ? "es" : "");
    return v;
  }
  // Over every sampled call (the extents), whatever probe_every recorded of them.
  const double nu = kUnbiasednessDraws / 2 - 1;
  const Extent z_all = z->extent();
  const auto n = static_cast<double>(z_all.count);
  const double stouffer =
      (z_all.finite() ? z_all.sum : z_all.first_non_finite) / std::sqrt(n * nu / (nu - 2));
  const double critical = NormalQuantile(input.confidence);
  std::vector<double> sq_biases;
  for (const Series::Point& p : sq->sample()) sq_biases.push_back(p.value);
  const MeanEstimate mean_bias =
      MeanOfEveryValue(IndependentMean(sq_biases), sq->extent(), /*independent=*/true);
  const double upper = mean_bias.dof > 0
                           ? mean_bias.mean + StudentTQuantile(input.confidence, mean_bias.dof) *
                                                  mean_bias.standard_error
                           : std::numeric_limits<double>::infinity();
  v.measured_value = stouffer;
  v.bound_value = critical;
  const Series::Point worst = *z->Max();
  v.worst_step = worst.step;
  v.worst_worker = worst.worker;
  v.measured = fmt::format(
      "Stouffer Z = {:.4g} over {} calls x {} draws{}; relative bias ||E C(u) - u|| / ||u|| at "
      "most {:.3g} ({:.0f}% upper bound)",
      stouffer, z_all.count, kUnbiasednessDraws, o.inside ? " (coordinates with |u| <= 1)" : "",
      std::sqrt(std::max(0.0, upper)), 100 * input.confidence);
  v.bound = fmt::format("Z <= {:.3g} (one-sided, {:.0f}%) and relative bias <= tolerance = {:.3g}",
                        critical, 100 * input.confidence, o.tolerance);
  if (stouffer > critical) {
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
        z_all.count, o.tolerance, std::sqrt(std::max(0.0, upper)));
  }
  if (!deterministic.empty() && v.kind != VerdictKind::kViolated) {
    v.detail = fmt::format("{}{}the deterministic {} never moved an input (C(u) = u)", v.detail,
                           v.detail.empty() ? "" : "; ", fmt::join(deterministic, ", "));
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
  // The calls the probe sampled, paired: both series are recorded at the same calls.
  const std::span<const Series::Point> nums =
      num == nullptr ? std::span<const Series::Point>() : num->sample();
  const std::span<const Series::Point> dens =
      den == nullptr ? std::span<const Series::Point>() : den->sample();
  const std::size_t k = nums.size();
  if (num == nullptr || den == nullptr || k < 2 || dens.size() != k) {
    v.detail = num == nullptr || den == nullptr ? why : "fewer than 2 sampled calls";
    return v;
  }
  // The ratio of the sums over every sampled call (the extents); the recorded calls estimate its
  // spread.
  const Extent num_all = num->extent(), den_all = den->extent();
  const double ratio = (num_all.finite() ? num_all.sum : num_all.first_non_finite) /
                       (den_all.finite() ? den_all.sum : den_all.first_non_finite);
  double sq = 0, worst = -1;
  std::size_t worst_call = 0;
  for (std::size_t c = 0; c < k; ++c) {
    const double r = nums[c].value - ratio * dens[c].value;
    sq += r * r;
    if (std::abs(r) > worst) {
      worst = std::abs(r);
      worst_call = c;
    }
  }
  const double n = static_cast<double>(k), all = static_cast<double>(den_all.count);
  const double se = std::sqrt(sq / ((n - 1) * all)) / (den_all.sum / all);
  const double half = StudentTQuantile(0.5 + input.confidence / 2, n - 1) * se;
  v.measured_value = ratio;
  v.bound_value = 1;
  v.measured =
      fmt::format("sum s_j^2 / sum (1 - u_j^2) = {:.5g} +- {:.2g} ({:.0f}%, {} calls x {} draws)",
                  ratio, half, 100 * input.confidence, den_all.count, kUnbiasednessDraws);
  v.bound = fmt::format("= 1 (the interval within 1 +- tolerance = {:.3g})", o.tolerance);
  if (std::abs(ratio - 1) > half) {
    v.kind = VerdictKind::kViolated;
  } else if (std::abs(ratio - 1) + half <= o.tolerance) {
    v.kind = VerdictKind::kHolds;
  } else {
    v.kind = VerdictKind::kInconclusive;
    v.detail = fmt::format("the interval contains 1 but reaches beyond 1 +- {:.3g}", o.tolerance);
  }
  v.worst_step = nums[worst_call].step;
  v.worst_worker = nums[worst_call].worker;
  return v;
}

// spams.txt Assumption 1: ||C(x) - x|| <= q ||x|| with q < 1, for every call, recorded or not
// (the exact extremes of the ratio). q is `q` from the [[assert]] table for every sender, or each
// sender's own declared q (workers and server may use different compressors). Deterministic:
// every call is evidence, whether or not the run went on to complete.
Verdict CheckDeviation(const AssertionInput& input, std::optional<double> given_q) {
  const RunEvidence& run = input.runs.front();
  std::string why;
  const Series* ratio = RequireProbe(run, "q-deviate", "ratio", why);
  if (ratio == nullptr) return Verdict::Inconclusive(why);
  if (given_q) {
    return EveryValueAtMost({ratio}, *given_q, "||C(u) - u|| / ||u||",
                            fmt::format("<= q = {:.6g} (given)", *given_q));
  }
  std::map<int, double> declared;
  if (const Series* d = run.Probe("q-deviate", "declared_q")) {
    for (const Series::Point& p : d->sample()) declared[p.worker] = p.value;
  }
  std::vector<std::string> qs;
  for (const auto& [sender, q] : declared) {
    qs.push_back(fmt::format("{} {:.4g}", SenderName(sender), q));
  }
  // Per sender, its largest ratio over every call against its own q (q = 0, the identity: any
  // move at all breaks it).
  Verdict v;
  v.kind = VerdictKind::kHolds;
  v.bound_value = 1;
  v.bound = fmt::format("<= 1, q declared per sender: {}", fmt::join(qs, ", "));
  double worst = -1;
  std::int64_t calls = 0;
  for (const int sender : ratio->workers()) {
    const auto it = declared.find(sender);
    if (it == declared.end()) {
      return Verdict::Inconclusive(fmt::format(
          "{}'s compressor declares no q (stochastic and sign compressors have none): give q in "
          "the [[assert]] table",
          SenderName(sender)));
    }
    const Extent e = ratio->extent(sender);
    calls += e.count;
    const Series::Point largest =
        e.finite() ? Series::Point{e.max_step, sender, e.max}
                   : Series::Point{e.first_non_finite_step, sender, e.first_non_finite};
    const double q = it->second;
    const double r = q > 0 ? largest.value / q
                           : (largest.value == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (!(r <= worst) || worst < 0) {
      worst = std::isnan(r) ? std::numeric_limits<double>::quiet_NaN() : r;
      v.worst_step = largest.step;
      v.worst_worker = sender;
    }
    if (!(r <= 1)) v.kind = VerdictKind::kViolated;
  }
  v.measured_value = worst;
  v.statistic = Verdict::Statistic{{ratio->name()}, "max", false};  // against each sender's q
  v.measured = fmt::format("max ||C(u) - u|| / (q ||u||) {:.6g} over all {} calls ({} recorded)",
                           worst, calls, ratio->recorded());
  if (v.kind == VerdictKind::kViolated) {
    // The first call over its q, where the recorded calls are all of them.
    if (ratio->Complete()) {
      for (const Series::Point& p : ratio->points()) {
        const double q = declared.at(p.worker);
        if (!(q > 0 ? p.value <= q : p.value == 0)) {
          v.worst_step = p.step;
          v.worst_worker = p.worker;
          break;
        }
      }
    }
    v.detail = fmt::format("broken at step {} ({})", *v.worst_step, SenderName(*v.worst_worker));
  }
  return v;
}

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

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
std::vector<AssertionInfo> CompressorAssertions() {
  return {
      {.name = "q-deviate",
       .summary = "||C(u) - u|| <= q ||u|| with q < 1 for every compressor call",
       .source = "spams.txt Assumption 1",
       .probes = {"q-deviate"},
       .make = &MakeDeviationCheck,
       .example = {ExampleSpec(kNoisyQuadratic, kDistSpams, "q-deviate"),
                   {{"a compressor that declares no q", {"optimizer.compressor.name=random-k"}}}}},
      {.name = "q-unbiased",
       .summary = "E[C(u)] = u on the run's own inputs (repeated draws)",
       .source = "birder.txt Eq. 5, Lemma 1 Eq. 17",
       .probes = {"q-unbiased"},
       .make = &MakeUnbiasedCheck,
       .example = {ExampleSpec(kNoisyQuadratic, R"(
[[optimizer]]
name = "ef-sgd"
compressor = { name = "qsgd" }
schedule = { name = "constant", lr = 0.05 }
)",
                               "q-unbiased"),
                   {{"a deterministic compressor that moves its inputs (top-9 of 10)",
                     {"optimizer.compressor.name=top-k", "optimizer.compressor.k=9"}},
                    {"a cast to bf16", {"optimizer.compressor.name=bf16"}}}}},
      {.name = "q-variance",
       .summary = "Var Q(u)_j = 1 - u_j^2 on |u_j| <= 1 (Birder's quantizer)",
       .source = "birder.txt Lemma 1, Eq. 18",
       .probes = {"q-unbiased"},
       .make = &MakeQuantizerVarianceCheck,
       .example = {ExampleSpec(kNoisyQuadratic, kBirder, "q-variance"),
                   {{"QSGD, whose variance is not Eq. 18's", {"optimizer.compressor=qsgd"}}}}},
  };
}

}  // namespace lemmalab
