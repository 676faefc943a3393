// Assertions: the claims of the papers that `lemmalab check` turns into verdicts.
//
// An assertion reads the series probes and metrics left in a run's results (theory/evidence.h)
// and says whether the claim holds there: holds, violated (where and by how much), or
// inconclusive (not enough samples, a constant the bound needs is unknown, the run diverged
// before the claim could be judged). Each names its source (paper file, lemma or theorem,
// equation) and the probes it needs, which `lemmalab check` attaches to the runs by itself.
//
// Statistical assertions state their confidence level (the check's `confidence`, default 0.99)
// and draw only from the run's keyed streams, so a verdict is reproducible bit for bit.
//
// Adding an assertion: one function and one line in theory/assertion_registry.cc, one
// known-answer test (and a negative control) in tests/.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "core/registry.h"
#include "theory/evidence.h"

namespace lemmalab {

enum class VerdictKind { kHolds, kViolated, kInconclusive };
std::string_view VerdictName(VerdictKind kind);  // "holds", "violated", "inconclusive"

struct Verdict {
  VerdictKind kind = VerdictKind::kInconclusive;
  std::string measured;  // the measured left-hand side, in words and numbers ("max 0.93")
  std::string bound;     // what it is compared with ("<= 1 (d = 100)")
  double measured_value = std::numeric_limits<double>::quiet_NaN();
  double bound_value = std::numeric_limits<double>::quiet_NaN();
  std::optional<std::int64_t> worst_step;  // where the claim is closest to failing, or fails
  std::optional<int> worst_worker;         // worker index or kServer, when per worker
  std::string detail;  // why inconclusive; which constants are exact, bounds or estimates

  static Verdict Inconclusive(std::string why) {
    Verdict v;
    v.detail = std::move(why);
    return v;
  }
};

// What one evaluation sees. `runs` are the runs the assertion judges together: one run for
// per-run assertions; the same label over the check's seeds (kAcrossSeeds) or over its worker
// counts and seeds (kAcrossWorkers). `experiment` holds every run of the experiment `runs[0]`
// belongs to (same seed and workers), for assertions that compare with a reference run.
struct AssertionInput {
  std::span<const RunEvidence> runs;
  std::span<const RunEvidence> experiment;
  OptionTable& options;      // the [[assert]] table: the assertion's own keys
  double confidence = 0.99;  // for statistical verdicts
};

enum class AssertionScope { kRun, kAcrossSeeds, kAcrossWorkers };

using AssertionFn = Verdict (*)(const AssertionInput& input);

struct AssertionInfo {
  std::string_view name;
  std::string_view summary;              // the claim, in words
  std::string_view source;               // "birder.txt Lemma 1, Eq. 16"
  std::vector<std::string_view> probes;  // probes whose series it reads (attached by the check)
  AssertionScope scope = AssertionScope::kRun;
  AssertionFn evaluate = nullptr;
};

const Registry<AssertionInfo>& Assertions();

}  // namespace lemmalab
