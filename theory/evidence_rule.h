// The evidence rule: what a verdict may claim from the evidence its judgement read. Every
// assertion's judgement goes through JudgeClaim, which logs each read of the runs' series and
// constants (theory/evidence.h) and then holds the verdict to what was read:
//
//   - Scope. A claim about named algorithms (AssertionInfo::algorithms) has the premise that each
//     judged run is one of them.
//   - Regions. A constant read by the judgement that holds only on a region (the box of
//     Rosenbrock's L, the ball of a quadratic's G) adds the premise that every iterate stayed
//     inside, checked on the exact extremes of the position the run recorded at every step.
//   - Premises. A failed premise makes the verdict inconclusive (Settle).
//   - Whole runs. "holds" (or "holds (vacuous)") needs every judged run to have completed: a
//     run that diverged at step s says nothing about the steps after s.
//   - Every value. "holds" from the recorded points of a series, read as if they were every
//     value (Series::points), needs them to be every value (Series::Complete): points that
//     skipped steps (probe_every, metrics_every > 1) make it inconclusive. Extents are complete
//     by construction; samples need not be.
//   - Finite values. A non-finite value in any series read makes the verdict inconclusive, with
//     its step and worker, unless the claim is about divergence (AssertionInfo::judges_failure),
//     or it is a violation found at a finite value before the first non-finite one.
//
// The verdict lists its evidence (Verdict::evidence): each series read, how, over how many of its
// values. docs/evidence.md explains the rule; tests/assertion_contract_test.cc checks it on every
// registered assertion.
#pragma once

#include <utility>
#include <vector>

#include "theory/assertion.h"

namespace lemmalab {

// The judgement's verdict on `input`, under the evidence rule. A bound that cannot be evaluated
// on the run's values (a diverged run's infinite constants: the calculators refuse them) is an
// inconclusive verdict saying so.
// With `reads`, what the judgement read of each run it could read (for tests that perturb the
// evidence a verdict rests on).
using RunReads = std::vector<std::pair<const RunEvidence*, EvidenceReads>>;
Verdict JudgeClaim(const AssertionInfo& info, const Judgement& judge, const AssertionInput& input,
                   RunReads* reads = nullptr);

// The premise that the iterates of `run` stayed in the region where `constant` holds (met for a
// constant that holds everywhere).
Premise WithinRegion(const RunEvidence& run, const Constant& constant);

}  // namespace lemmalab
