#include "theory/evidence_rule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>

#include "core/error.h"
#include "theory/premises.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// One run whose evidence the judgement may read, with what it read.
struct Watched {
  const RunEvidence* run = nullptr;
  EvidenceReads reads;
};

// The series a logged read names.
const Series* Lookup(const RunEvidence& run, std::string_view read) {
  const std::string_view metric = "metric ", probe = "probe ";
  if (read.starts_with(metric)) return run.Metric(read.substr(metric.size()));
  if (read.starts_with(probe)) {
    const auto it = run.probes.find(read.substr(probe.size()));
    return it == run.probes.end() ? nullptr : &it->second;
  }
  return nullptr;
}

std::string Where(std::int64_t step, int worker) {
  const std::string sender = SenderName(worker);
  return sender.empty() ? fmt::format("step {}", step) : fmt::format("step {}, {}", step, sender);
}

// "probe q-deviate/ratio: the extremes of every value, 6000 (600 recorded)".
std::string DescribeRead(std::string_view name, const Series& s, const std::set<Reading>& how) {
  std::vector<std::string> parts;
  const std::int64_t observed = s.observed();
  const auto recorded = static_cast<std::int64_t>(s.recorded());
  if (how.contains(Reading::kExtent)) {
    parts.push_back(
        fmt::format("the exact extremes of all {} values ({} recorded)", observed, recorded));
  }
  if (how.contains(Reading::kEveryPoint)) {
    parts.push_back(
        s.Complete() ? fmt::format("all {} values, recorded", recorded)
        : s.has_extents()
            ? fmt::format("{} recorded of {} values, read as if they were all", recorded, observed)
            : fmt::format("{} recorded values, read as if they were all (no record of the "
                          "values between them)",
                          recorded));
  }
  if (how.contains(Reading::kSample)) {
    parts.push_back(s.has_extents() && !s.Complete()
                        ? fmt::format("a sample of {} recorded of {} values", recorded, observed)
                        : fmt::format("{} recorded values as a sample", recorded));
  }
  return fmt::format("{}: {}", name, fmt::join(parts, "; "));
}

// The premise that every judged run is one of the claim's algorithms: the first run that is not,
// else one met premise for all.
Premise ScopePremise(const AssertionInfo& info, std::span<const RunEvidence> runs) {
  const std::string statement = fmt::format("{} ({})", fmt::join(info.algorithms, " or "),
                                            "the algorithms the claim is about");
  std::vector<std::string> seen;
  for (const RunEvidence& run : runs) {
    Premise p = AlgorithmIs(run, info.algorithms, statement);
    if (p.failed()) return p;
    if (std::find(seen.begin(), seen.end(), run.optimizer) == seen.end()) {
      seen.push_back(run.optimizer);
    }
  }
  return Premise::Met(fmt::format("the algorithm is {}", statement),
                      fmt::format("optimizer {}", fmt::join(seen, ", ")));
}

// The region premises of the constants the judgement read: per constant and region, the first
// run whose iterates left it, else one met premise.
std::vector<Premise> RegionPremises(const std::deque<Watched>& watched) {
  std::vector<Premise> premises;
  std::vector<std::string> done;
  for (const Watched& w : watched) {
    for (const std::string& name : w.reads.constants) {
      const Constant* c = w.run->FindConstant(name);
      if (c == nullptr || !c->region) continue;
      Premise p = WithinRegion(*w.run, *c);
      const auto same = std::find(done.begin(), done.end(), p.name);
      if (same == done.end()) {
        done.push_back(p.name);
        premises.push_back(std::move(p));
      } else if (p.failed()) {
        Premise& earlier = premises[static_cast<std::size_t>(same - done.begin())];
        if (!earlier.failed()) earlier = std::move(p);
      }
    }
  }
  return premises;
}

// Holds the settled verdict to what its judgement read (the rule in the header).
void ApplyEvidenceRule(const AssertionInfo& info, std::span<const RunEvidence> judged,
                       const std::deque<Watched>& watched, Verdict& v) {
  const bool holds = v.kind == VerdictKind::kHolds || v.kind == VerdictKind::kVacuous;
  std::vector<std::string> gaps;
  if (holds) {
    for (const RunEvidence& run : judged) {
      if (!run.completed()) {
        gaps.push_back(fmt::format(
            "run '{}' (seed {}, n = {}) {}: a claim about the whole run cannot hold on part of it",
            run.label, run.seed, run.workers, run.status));
      }
    }
  }
  std::optional<Series::Point> non_finite;
  std::string non_finite_series;
  for (const Watched& w : watched) {
    for (const auto& [name, how] : w.reads.series) {
      const Series* s = Lookup(*w.run, name);
      if (s == nullptr) continue;
      const std::string label = watched.size() > 1
                                    ? fmt::format("{} (run '{}', seed {}, n = {})", name,
                                                  w.run->label, w.run->seed, w.run->workers)
                                    : name;
      v.evidence.push_back(DescribeRead(label, *s, how));
      if (holds && how.contains(Reading::kEveryPoint) && !s->Complete()) {
        gaps.push_back(fmt::format(
            "judged on the recorded points of {}, {} of {} values{}: a claim about every value "
            "needs them all (record every step, or a judgement from the exact extremes)",
            label, s->recorded(), s->observed(),
            s->has_extents() ? "" : " (the results keep no record of the others)"));
      }
      if (const std::optional<Series::Point> first = s->FirstNonFinite();
          first && (!non_finite || first->step < non_finite->step)) {
        non_finite = first;
        non_finite_series = label;
      }
    }
  }
  if (non_finite && info.judges_failure && holds) {
    // A claim about divergence (an error that stays bounded, a run that ends near the optimum)
    // is broken by a value that is not finite.
    v.kind = VerdictKind::kViolated;
    v.worst_step = non_finite->step;
    v.detail = fmt::format("{} is {} at {}: not finite; {}", non_finite_series, non_finite->value,
                           Where(non_finite->step, non_finite->worker), v.detail);
  } else if (non_finite && !info.judges_failure && v.kind != VerdictKind::kInconclusive) {
    // A violation seen at finite values before anything went non-finite stands.
    const bool earlier_violation = v.kind == VerdictKind::kViolated && v.worst_step &&
                                   *v.worst_step < non_finite->step &&
                                   std::isfinite(v.measured_value);
    if (!earlier_violation) {
      gaps.push_back(fmt::format("non-finite evidence: {} is {} at {}", non_finite_series,
                                 non_finite->value, Where(non_finite->step, non_finite->worker)));
    }
  }
  if (gaps.empty()) return;
  const std::string alone =
      v.kind == VerdictKind::kInconclusive
          ? std::string()
          : fmt::format("; the judgement alone would say {}", VerdictName(v.kind));
  v.kind = VerdictKind::kInconclusive;
  const std::string why = fmt::format("{}{}", fmt::join(gaps, "; "), alone);
  v.detail = v.detail.empty() ? why : fmt::format("{}; {}", why, v.detail);
}

}  // namespace

Premise WithinRegion(const RunEvidence& run, const Constant& constant) {
  const std::string name =
      constant.region ? fmt::format("the iterates stay in {}, where {} = {:.6g} holds",
                                    constant.region->description, constant.name, constant.value)
                      : fmt::format("{} holds everywhere", constant.name);
  if (!constant.region) return Premise::Met(name, constant.basis);
  const Region& region = *constant.region;
  const Series* position = run.Metric(region.position);
  if (position == nullptr || position->empty()) {
    return Premise::Failed(name, fmt::format("the run recorded no {} (the position the region is "
                                             "measured in)",
                                             region.position));
  }
  const Extent e = position->extent();
  if (!e.finite()) {
    return Premise::Failed(name,
                           fmt::format("{} = {} at step {}", region.position, e.first_non_finite,
                                       e.first_non_finite_step),
                           e.first_non_finite_step);
  }
  // x_0 is inside by construction (the problem refuses a region without it); the run's
  // iterates are stored in its precision, so a point on the boundary may sit a rounding above.
  if (e.max > region.radius * (1 + 1e-9)) {
    return Premise::Failed(
        name,
        fmt::format("{} reached {:.6g} > {:.6g} at step {}: outside the region the constant is "
                    "certified on, where it may not hold",
                    region.position, e.max, region.radius, e.max_step),
        e.max_step);
  }
  return Premise::Met(name, fmt::format("largest {} {:.6g} <= {:.6g} over all {} iterates",
                                        region.position, e.max, region.radius, e.count));
}

Verdict JudgeClaim(const AssertionInfo& info, const Judgement& judge, const AssertionInput& input,
                   RunReads* reads) {
  // A deque: the logs' addresses are handed to the runs and must not move.
  std::deque<Watched> watched;
  const auto watch = [&](std::span<const RunEvidence> runs) {
    for (const RunEvidence& run : runs) {
      if (std::none_of(watched.begin(), watched.end(),
                       [&](const Watched& w) { return w.run == &run; })) {
        watched.push_back({&run, {}});
      }
    }
  };
  watch(input.runs);
  watch(input.experiment);
  for (Watched& w : watched) w.run->Watch(&w.reads);
  Verdict v;
  try {
    v = judge(input);
  } catch (const UserError& e) {
    v = Verdict::Inconclusive(
        fmt::format("the bound cannot be evaluated on this run's values: {}", e.what()));
  } catch (...) {
    for (Watched& w : watched) w.run->Watch(nullptr);
    throw;
  }
  for (Watched& w : watched) w.run->Watch(nullptr);

  std::vector<Premise> premises;
  if (!info.algorithms.empty()) premises.push_back(ScopePremise(info, input.runs));
  for (Premise& p : v.premises) premises.push_back(std::move(p));
  for (Premise& p : RegionPremises(watched)) premises.push_back(std::move(p));
  v.premises = std::move(premises);
  v = Settle(std::move(v));
  ApplyEvidenceRule(info, input.runs, watched, v);
  if (reads != nullptr) {
    for (Watched& w : watched) reads->emplace_back(w.run, std::move(w.reads));
  }
  return v;
}

}  // namespace lemmalab
