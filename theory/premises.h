// The premises lemmas and theorems share, each checked on a run's evidence: the run is healthy,
// the stochastic gradients stay within G, the compressor is q-deviate with the q the bound uses,
// a hyperparameter lies where the proof needs it, a series is stationary where its mean is taken.
// Each returns a Premise (theory/assertion.h) that names the assumption and says how it was
// checked, and, when it fails, the first step, the worker and the value.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/options.h"
#include "problems/problem.h"
#include "theory/assertion.h"

namespace lemmalab {

// The run completed, its values stayed finite and its loss did not blow up (minibatch loss above
// 1000 x (1 + |f(x_0)|)): a diverged run proves nothing about a mean or a bound that assumes it
// did not.
Premise RunCompleted(const RunEvidence& run);

// A constant a bound uses, with where it came from: the [[assert]] table's `key` (a user's
// claim about the problem, which the run may contradict), else the problem's constant `name`
// (exact or a bound), else the run's estimate. nullopt when none exists.
struct UsedConstant {
  double value = 0;
  Certainty certainty = Certainty::kEstimate;
  std::string description;  // for the verdict's detail: "G = 8.1 (bound: ...)"
  bool given = false;       // from the [[assert]] table
};
std::optional<UsedConstant> FindUsedConstant(const RunEvidence& run, std::string_view name,
                                             std::optional<double> given);

// f* where a bound grows as f* falls (f(x_0) - f* with a positive coefficient, as in every
// theorem here), as the verdict `kind` uses it: met for an exact f*; for an upper bound on it (f at
// a point a solver reached, problems/reference.h) met unless the verdict is a violation, since the
// bound computed with it is at most the true one (meeting it is evidence, exceeding it is not);
// failed for an estimate, which may lie on either side.
Premise OptimalValueFor(const Constant& f_star, VerdictKind kind);

// Every worker's stochastic gradient is unbiased for grad f: the workers sample one distribution
// (Birder's Assumption 3, 1-bit Adam's Assumption 1.2 with one sigma for every worker). Met with
// one worker or sigma_g = 0, failed with sigma_g > 0. Where the problem does not know sigma_g, the
// measured spread of the shards' gradients (metric shard_spread) decides: failed when shards
// that are not an iid split (sorted labels, Dirichlet, file order) spread at an iterate; for an
// iid split grad f_i = grad f only in expectation over the split: unchecked, with the spread.
Premise OneDistribution(const RunEvidence& run, std::string_view assumption);

// ||g_t^(i)|| <= G at every step and worker (metric max_grad_norm, the largest stochastic
// gradient norm of each step) and, with `full_gradient`, ||grad f(x_t)|| <= G too (metric
// grad_sq_norm). `assumption` names it ("spams.txt Assumption 3"). With G the run's own largest
// observed norm the premise holds by construction, and the detail says so.
Premise GradientsWithin(const RunEvidence& run, const UsedConstant& g, std::string_view assumption,
                        bool full_gradient = false);

// ||C(u) - u|| <= q ||u|| for every compressor call of the run (probe q-deviate, series ratio),
// up to a relative rounding slack `rtol`: the q a bound uses must be one the run's compressor
// actually keeps to. `workers_q` and `server_q` are the q used for each side's calls (nullopt: no
// bound uses that side's q, its calls are not checked); `q_source` says where they come from.
Premise CompressorWithinQ(const RunEvidence& run, std::optional<double> workers_q,
                          std::optional<double> server_q, std::string_view q_source, double rtol);

// E||C(u) - u||^2 <= limit ||u||^2 for the workers' compressor, with `limit` the constant a bound
// uses (EF21's 1 - alpha, DIANA's and MARINA's omega; `assumption` names it, `source` says where
// the constant comes from), on all the run's calls (probe q-deviate's running totals, kept
// whatever probe_every keeps). A deterministic compressor must keep it on every call (up to the
// relative slack rtol). For a stochastic one only the calls' mean estimates the expectation:
// failed when the mean's lower confidence bound (at `confidence`) exceeds the limit, so the run
// contradicts the constant. A constant the compressor declares is proven for it, so the premise is
// then met; a constant the check `claimed` must also be shown: failed unless the upper confidence
// bound is within it.
Premise CompressorErrorWithin(const RunEvidence& run, double limit, std::string_view assumption,
                              std::string_view source, bool claimed, double rtol,
                              double confidence);

// The workers' compressors draw independently of each other (the proofs that add the workers'
// errors as independent, zero-mean terms: DIANA's and MARINA's variance of the mean message);
// failed for compressors whose senders share draws (PermK), from probe q-deviate's record.
Premise IndependentCompressors(const RunEvidence& run, std::string_view why);

// Full gradients: every worker's gradient is exact, sigma = 0 (EF21's, DIANA's and MARINA's
// theorems for the deterministic setting). Met when the problem's sigma is exactly 0; failed
// when it is positive or unknown (a data problem's minibatch noise), since the theorem then
// makes no claim.
Premise FullGradients(const RunEvidence& run, std::string_view statement);

// A hyperparameter of the run within `rule` ("beta1 < 1" for a proof that divides by 1 - beta1).
Premise OptionWithin(const RunEvidence& run, std::string_view key, const Interval& rule,
                     std::string_view why);
// A hyperparameter of the run equal to `value` ("worker_feedback = classic" where a lemma needs
// error feedback); failed when it differs or the run has no such option.
Premise OptionIs(const RunEvidence& run, std::string_view key, std::string_view value,
                 std::string_view why);

// The run's optimizer is one the lemma or theorem is about (its registry name).
Premise AlgorithmIs(const RunEvidence& run, std::span<const std::string_view> names,
                    std::string_view statement);

// No weight decay: the papers' algorithms have none, so a theorem about them says nothing about
// a run that shrinks x or adds lambda x to its gradients.
Premise NoWeightDecay(const RunEvidence& run);

// A constant step size (the theorem's eta); failed at the first step whose lr differs.
Premise ConstantStepSize(const RunEvidence& run);

// Whether `values` (a per-step series, in order) are stationary enough for a batch-means mean to
// mean something: after a burn-in of the first tenth, the means of the two halves may not differ
// significantly (Welch's t on the batch means of each half, at `confidence`) by more than a
// quarter of the overall mean. A series that grows without bound fails it.
Premise Stationary(std::span<const double> values, std::string_view what, double confidence);

}  // namespace lemmalab
