// Birder's claims (birder.txt Sec. 3 and App. A), judged from the probes of
// theory/birder_probes.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "theory/assertions.h"
#include "theory/statistics.h"

namespace lemmalab {
// Lemma 1 (Eq. 16, 19): E||e||^2 <= d for the quantizer's error when its input lies in [-1, 1].
// Measured: the mean over steps and workers of ||e_t||^2 / d, per side (workers, server), with a
// one-sided batch-means interval; violated when the interval lies above 1. The worst step is the
// largest single ||e||^2 / d (a single step may exceed 1: the claim is about the mean).
Verdict CheckErrorNorm(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  verdict.bound = "<= 1";
  verdict.bound_value = 1;
  const double d = static_cast<double>(run.dimension);
  const double z = NormalQuantile(input.confidence);
  bool any = false;
  std::vector<std::string> parts;
  for (const auto& [series, side] :
       {std::pair{"worker_sq_norm", "workers"}, std::pair{"server_sq_norm", "server"}}) {
    const Series* s = run.Probe("ef-norm", series);
    if (s == nullptr || s->empty()) continue;
    any = true;
    std::vector<double> ratios;
    for (const Series::Point& p : s->points) ratios.push_back(p.value / d);
    const MeanEstimate mean = BatchMeans(ratios);
    const double lower = mean.mean - z * mean.standard_error;
    const Series::Point worst = *s->Max();
    parts.push_back(fmt::format("{} mean {:.4g} (lower {:.0f}% bound {:.4g}), max {:.4g}", side,
                                mean.mean, 100 * input.confidence,
                                std::isfinite(lower) ? lower : -INFINITY, worst.value / d));
    if (!std::isfinite(verdict.measured_value) || mean.mean > verdict.measured_value) {
      verdict.measured_value = mean.mean;
      verdict.worst_step = worst.step;
      verdict.worst_worker = worst.worker;
    }
    if (lower > 1) verdict.kind = VerdictKind::kViolated;
  }
  if (!any) return Verdict::Inconclusive("the run has no error feedback series (probe ef-norm)");
  verdict.measured = fmt::format("||e||^2/d: {}", fmt::join(parts, "; "));
  return verdict;
}

}  // namespace lemmalab
