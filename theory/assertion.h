// Assertions: the claims of the papers that `lemmalab check` turns into verdicts.
//
// An assertion reads the series probes and metrics left in a run's results (theory/evidence.h)
// and says whether the claim holds there. A verdict is a claim a researcher will cite, so:
//   holds            positive evidence: a bound met at every evaluated point, or, for a
//                    statistical claim, a confidence interval inside the claimed limit;
//   holds (vacuous)  met, but by a bound no smaller than a trivial one (the left-hand side's
//                    value at the start, or the largest value the quantity can take): no
//                    evidence either way;
//   violated         evidence against, with the worst step, worker and margin;
//   inconclusive     anything else, with the reason: a premise of the lemma or theorem that the
//                    run broke (named, with its step and value), a diverged run, a series that is
//                    not stationary where a stationary mean is assumed, too few samples, an
//                    unknown constant.
// Every lemma and theorem lists the premises its proof uses and checks each on the run
// (theory/premises.h); a failed premise makes the verdict inconclusive whatever the bound says.
// Where the printed statement and the bound its proof supports differ, both are evaluated: the
// verdict is the proof's, the printed one is shown beside it (Verdict::other_forms).
//
// An assertion is made from its [[assert]] table before anything runs (Make reads and validates
// every key, so a typo fails at once), and the judgement it returns reads only the evidence.
// Statistical judgements state their confidence level (the check's `confidence`, default 0.99)
// and use only the run's keyed streams, so a verdict is reproducible bit for bit.
//
// Adding an assertion: a Make function and its registry row beside it, in the source file of its
// paper's claims (theory/assertions.h), one known-answer test and a negative control in tests/,
// and its row in docs/theory-checks.md.
#pragma once

#include <cstdint>
#include <functional>
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

enum class VerdictKind { kHolds, kVacuous, kViolated, kInconclusive };
// "holds", "holds (vacuous)", "violated", "inconclusive".
std::string_view VerdictName(VerdictKind kind);
// The word a spec's `expect` uses: "holds", "vacuous", "violated", "inconclusive".
std::string_view ExpectationName(VerdictKind kind);

// An assumption a lemma's or theorem's proof uses, as checked on the run. `kUnchecked` names one
// the run cannot show either way (the detail says why); it does not decide the verdict but is
// printed with it, so a reader sees what the verdict takes on trust.
struct Premise {
  enum class Status { kMet, kFailed, kUnchecked };
  std::string name;  // "Assumption 3 (||g_t,i|| <= G)"
  Status status = Status::kMet;
  std::string detail;  // how it was checked; where it failed, with the value
  std::optional<std::int64_t> step;
  std::optional<int> worker;
  // A premise of the verdict's own bound form only (the printed statement's last step), which
  // leaves the other forms (Verdict::other_forms) as they were judged.
  bool own_form_only = false;

  bool failed() const { return status == Status::kFailed; }
  static Premise Met(std::string name, std::string detail) {
    return {std::move(name), Status::kMet, std::move(detail), std::nullopt, std::nullopt};
  }
  static Premise Unchecked(std::string name, std::string detail) {
    return {std::move(name), Status::kUnchecked, std::move(detail), std::nullopt, std::nullopt};
  }
  static Premise Failed(std::string name, std::string detail,
                        std::optional<std::int64_t> step = std::nullopt,
                        std::optional<int> worker = std::nullopt) {
    return {std::move(name), Status::kFailed, std::move(detail), step, worker};
  }
};

// Another form of the same bound judged on the same run (the statement as printed beside the
// one re-derived from its proof).
struct BoundForm {
  std::string name;  // "as printed"
  VerdictKind kind = VerdictKind::kInconclusive;
  std::string bound;
  double bound_value = std::numeric_limits<double>::quiet_NaN();
  std::string detail;
};

struct Verdict {
  VerdictKind kind = VerdictKind::kInconclusive;
  std::string measured;  // the measured left-hand side, in words and numbers ("max 0.93")
  std::string bound;     // what it is compared with ("<= 1 (d = 100)")
  double measured_value = std::numeric_limits<double>::quiet_NaN();
  double bound_value = std::numeric_limits<double>::quiet_NaN();
  std::optional<std::int64_t> worst_step;  // where the claim is closest to failing, or fails
  std::optional<int> worst_worker;         // worker index or kServer, when per worker
  std::string detail;  // why inconclusive; which constants are exact, bounds or estimates
  // The source for this run when it is not the assertion's own (the run's compressor's contract
  // rather than Birder's Lemma 1, say).
  std::string source;
  std::vector<Premise> premises;
  std::vector<BoundForm> other_forms;
  // What the verdict rests on, one line per series read ("probe q-deviate/ratio: the extremes of
  // all 6000 values (600 recorded)"), filled by the evidence rule (theory/evidence_rule.h).
  std::vector<std::string> evidence;
  // The statistic the measured value comes from, for the report's figure of the evidence: the
  // series ("probe q-deviate/ratio", "metric grad_sq_norm"), reduced at each step over the
  // workers ("max", "min") or over the steps so far ("running mean", "running sum"). The bound is
  // a level every value is held to (`bound_is_level`), or the bound at the verdict's step only.
  struct Statistic {
    std::vector<std::string> series;
    std::string reduction;
    bool bound_is_level = true;
  };
  std::optional<Statistic> statistic;

  static Verdict Inconclusive(std::string why) {
    Verdict v;
    v.detail = std::move(why);
    return v;
  }
};

// What one judgement sees. `runs` are the runs the assertion judges together: one run for
// per-run assertions; the same label over the check's seeds (kAcrossSeeds) or over its worker
// counts and seeds (kAcrossWorkers). `experiment` holds every run of the experiment `runs[0]`
// belongs to (same seed and workers), for assertions that compare with a reference run.
struct AssertionInput {
  std::span<const RunEvidence> runs;
  std::span<const RunEvidence> experiment;
  double confidence = 0.99;  // for statistical verdicts
};

enum class AssertionScope { kRun, kAcrossSeeds, kAcrossWorkers };

// The judgement an [[assert]] table configures.
using Judgement = std::function<Verdict(const AssertionInput& input)>;

// What an assertion may check its options against before anything runs.
struct AssertionContext {
  std::vector<std::string> labels;  // of the spec's [[optimizer]] tables
};

// Reads and validates every key of the assertion's [[assert]] table (beyond assertion, runs and
// expect) and returns the judgement; UserError on a bad key.
using AssertionMaker = Judgement (*)(OptionTable& options, const AssertionContext& context);

// One way to move an example's run, or its claim, outside what the claim covers: --set arguments
// (PATH=VALUE, as `lemmalab run --set` takes them) applied to the example's spec, and TOML lines
// added to its [[assert]] table (the spec's last). `why` says what then falls outside.
struct OutOfScope {
  std::string_view why;
  std::vector<std::string_view> set = {};
  std::string_view assert_keys = "";
};

// A run the claim holds on, for the contract test every registered assertion goes through
// (tests/assertion_contract_test.cc): a spec whose one [[assert]] table gives "holds" or "holds
// (vacuous)" on its one judged run (or runs, across seeds or workers), every step recorded; and
// variants outside the claim's scope, where a positive verdict would be a false claim. An
// assertion no known run can satisfy says why in `never_positive` instead.
struct AssertionExample {
  std::string spec;
  std::vector<OutOfScope> out_of_scope = {};
  std::string_view never_positive = "";
};

struct AssertionInfo {
  std::string_view name;
  std::string_view summary;  // the claim, in words
  std::string_view source;   // "birder.txt Lemma 1, Eq. 16"
  // Probes whose series it reads, attached by the check; the first measures the claim's
  // quantity (a run that recorded it is judged by default), the others serve its premises.
  std::vector<std::string_view> probes;
  AssertionScope scope = AssertionScope::kRun;
  AssertionMaker make = nullptr;
  // The optimizers (registry names) the claim is about; empty: any. Every judged run must be one
  // (a premise the evidence rule adds).
  std::vector<std::string_view> algorithms = {};
  // Probes the premises of a theorem it cites read (rates cite their algorithm's theorem): attached
  // by the check like `probes`, without deciding which runs it judges.
  std::vector<std::string_view> premise_probes = {};
  // The claim is about divergence itself (an error that stays bounded, a run that ends near the
  // optimum): a non-finite value is evidence against it, judged as such, not a gap in the
  // evidence.
  bool judges_failure = false;
  AssertionExample example = {};
};

const Registry<AssertionInfo>& Assertions();

// The verdict as a check reports it: the judgement's, made inconclusive (naming the premise,
// its step and value) when a premise failed.
Verdict Settle(Verdict verdict);

}  // namespace lemmalab
