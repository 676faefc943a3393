// The contract every registered assertion keeps, checked on the example its registry row carries
// (theory/assertion.h AssertionExample) and on generic perturbations of that example's evidence:
// a verdict that says "holds" (or "holds (vacuous)") rests on complete, finite evidence, in the
// claim's scope, with constants valid where the iterates went. None of these tests knows an
// assertion by name: a new assertion is covered by registering it with its example.
//
//   - the example holds (or, where no known run can satisfy the claim, does not);
//   - each of the example's out-of-scope variants never holds;
//   - a NaN in any series the verdict read never holds;
//   - recording every 10th step never turns a verdict into "holds": a value planted between the
//     recorded steps (far up, far down, or 0) that makes the fully recorded run anything but
//     "holds" keeps the subsampled run from "holds" too;
//   - a constant the verdict read, certified only on a region the iterates left, never holds;
//   - a run of an algorithm the claim is not about never holds.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/check.h"
#include "cli/evidence_reader.h"
#include "core/registry.h"
#include "engine/spec.h"
#include "tests/test_util.h"
#include "theory/assertion.h"
#include "theory/evidence_rule.h"

namespace lemmalab {
namespace {

bool Positive(VerdictKind kind) {
  return kind == VerdictKind::kHolds || kind == VerdictKind::kVacuous;
}

// The example of one assertion, run once: its check's verdicts, and what it needs to judge
// changed evidence the way the check judged the real one.
struct Example {
  const AssertionInfo* info = nullptr;
  CheckReport report;
  std::vector<std::vector<RunEvidence>> experiments;  // per results folder
  Judgement judge;
  std::string label;  // the run judged
};

// Writes `text` with `extra` appended (keys of its last table, the [[assert]]) into `dir` and
// checks it with the --set arguments `settings`.
CheckReport CheckText(const std::string& text, const std::filesystem::path& dir,
                      const std::vector<std::string>& settings, std::string_view extra = "") {
  const std::filesystem::path spec = dir / "spec.toml";
  testing::WriteFile(spec, text + std::string(extra));
  CheckOptions options;
  options.out_dir = dir / "out";
  options.progress = false;
  return RunCheck(LoadSpec(spec, settings), options);
}

// Every registered assertion's example, run once for all the tests below.
class AssertionContract : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    examples_ = new std::map<std::string, Example, std::less<>>();
    for (const AssertionInfo& info : Assertions().entries()) {
      const std::string_view name = info.name;
      Example e;
      e.info = &info;
      const std::filesystem::path dir = dir_->path() / std::string(name);
      std::filesystem::create_directories(dir);
      e.report = CheckText(info.example.spec, dir, {});
      for (const std::string& folder : e.report.folders)
        e.experiments.push_back(ReadEvidence(folder));
      // The judgement, made from the example's [[assert]] table as the check made it.
      const RunSpec spec = LoadSpec(dir / "spec.toml");
      OptionTable& table = *spec.asserts.front();
      AssertionContext context;
      for (const OptimizerSpec& o : spec.optimizers) context.labels.push_back(o.label);
      e.judge = info.make(table, context);
      const std::vector<std::string> runs = table.GetStringList("runs");
      e.label = runs.empty() ? context.labels.front() : runs.front();
      examples_->emplace(std::string(name), std::move(e));
    }
  }
  static void TearDownTestSuite() {
    delete examples_;
    delete dir_;
  }

  static testing::TempDir* dir_;
  static std::map<std::string, Example, std::less<>>* examples_;
};

testing::TempDir* AssertionContract::dir_ = nullptr;
std::map<std::string, Example, std::less<>>* AssertionContract::examples_ = nullptr;

// The runs one judgement of `e` reads: the judged label in the first experiment (per-run
// claims) or in every experiment (across seeds and workers).
std::vector<RunEvidence> JudgedRuns(const Example& e,
                                    const std::vector<std::vector<RunEvidence>>& experiments) {
  std::vector<RunEvidence> runs;
  for (const std::vector<RunEvidence>& experiment : experiments) {
    for (const RunEvidence& run : experiment) {
      if (run.label == e.label) runs.push_back(run);
    }
    if (e.info->scope == AssertionScope::kRun) break;
  }
  return runs;
}

// The names, as the runs' maps key them, of the series and constants a judgement read of the
// judged run.
struct ReadSeries {
  std::vector<std::string> metrics, probes, constants;
};

// The verdict on `runs` (the first of which may have been changed), and in `read` what it read
// of the first.
Verdict JudgeRuns(const Example& e, std::vector<RunEvidence>& runs, ReadSeries* read = nullptr) {
  // The experiment of the first run: the run itself, and its siblings unchanged.
  std::vector<RunEvidence> experiment;
  for (const RunEvidence& run : e.experiments.front()) {
    experiment.push_back(run.label == runs.front().label ? runs.front() : run);
  }
  RunReads reads;
  Verdict v;
  const RunEvidence* first = &runs.front();
  if (e.info->scope == AssertionScope::kRun) {
    // Per-run claims read the judged run through its experiment (a reference run beside it).
    for (RunEvidence& run : experiment) {
      if (run.label != e.label) continue;
      first = &run;
      v = JudgeClaim(*e.info, e.judge, {std::span(&run, 1), experiment, 0.99}, &reads);
    }
  } else {
    v = JudgeClaim(*e.info, e.judge, {runs, experiment, 0.99}, &reads);
  }
  for (const auto& [run, what] : reads) {
    if (read == nullptr || run != first) continue;
    for (const auto& [name, how] : what.series) {
      if (name.starts_with("metric ")) read->metrics.push_back(name.substr(7));
      if (name.starts_with("probe ")) read->probes.push_back(name.substr(6));
    }
    read->constants.assign(what.constants.begin(), what.constants.end());
  }
  return v;
}

ReadSeries SeriesRead(const Example& e) {
  std::vector<RunEvidence> runs = JudgedRuns(e, e.experiments);
  ReadSeries read;
  JudgeRuns(e, runs, &read);
  return read;
}

// The series `name` of `run` (a metric or a probe series).
Series& SeriesOf(RunEvidence& run, const std::string& name, bool metric) {
  return metric ? run.metrics.at(name) : run.probes.at(name);
}

// What `lemmalab run` records of `run` with probe_every = k (and metrics_every = k for the
// per-step values lr and the positions), every value still counted in the extents: each series
// keeps its first point of each worker, the points at multiples of k and at the last step.
RunEvidence Subsampled(const RunEvidence& run, std::int64_t k) {
  RunEvidence out = run;
  const auto thin = [&](Series& series) {
    std::vector<Series::Point> all(series.points().begin(), series.points().end());
    Series kept;
    std::map<int, Extent> extents;
    std::set<int> seen;
    for (const Series::Point& p : all) {
      extents[p.worker].Add(p.step, p.worker, p.value);
      const bool first = seen.insert(p.worker).second;
      if (first || p.step % k == 0 || p.step == run.steps_done) kept.Add(p);
    }
    for (const auto& [worker, extent] : extents) kept.SetExtent(worker, extent);
    series = std::move(kept);
  };
  for (auto& [name, series] : out.probes) thin(series);
  for (auto& [name, series] : out.metrics) {
    if (name == "lr" || name.starts_with("x_")) thin(series);
  }
  return out;
}

TEST_F(AssertionContract, EveryExampleHolds) {
  for (const auto& [name, e] : *examples_) {
    ASSERT_FALSE(e.report.rows.empty()) << name;
    for (const CheckRow& row : e.report.rows) {
      if (e.info->example.never_positive.empty()) {
        EXPECT_TRUE(Positive(row.verdict.kind))
            << name << " (" << row.runs << "): " << VerdictName(row.verdict.kind) << ": "
            << row.verdict.detail;
      } else {
        EXPECT_FALSE(Positive(row.verdict.kind)) << name << ": take out never_positive";
      }
    }
  }
}

TEST_F(AssertionContract, OutOfScopeNeverHolds) {
  for (const auto& [name, e] : *examples_) {
    for (std::size_t k = 0; k < e.info->example.out_of_scope.size(); ++k) {
      const OutOfScope& variant = e.info->example.out_of_scope[k];
      const std::filesystem::path dir = dir_->path() / fmt::format("{}-scope-{}", name, k);
      std::filesystem::create_directories(dir);
      const CheckReport report = CheckText(
          e.info->example.spec, dir,
          std::vector<std::string>(variant.set.begin(), variant.set.end()), variant.assert_keys);
      ASSERT_FALSE(report.rows.empty()) << name << " with " << variant.why;
      for (const CheckRow& row : report.rows) {
        EXPECT_FALSE(Positive(row.verdict.kind))
            << name << " with " << variant.why << ": " << VerdictName(row.verdict.kind) << ", "
            << row.verdict.measured << " | " << row.verdict.detail;
      }
    }
  }
}

TEST_F(AssertionContract, NonFiniteEvidenceNeverHolds) {
  for (const auto& [name, e] : *examples_) {
    const ReadSeries read = SeriesRead(e);
    for (const bool metric : {true, false}) {
      for (const std::string& series : metric ? read.metrics : read.probes) {
        std::vector<RunEvidence> runs = JudgedRuns(e, e.experiments);
        std::vector<Series::Point>& points = SeriesOf(runs.front(), series, metric).EditPoints();
        ASSERT_FALSE(points.empty()) << name << ": " << series;
        points[points.size() / 2].value = std::numeric_limits<double>::quiet_NaN();
        const Verdict v = JudgeRuns(e, runs);
        EXPECT_FALSE(Positive(v.kind)) << name << " with a NaN in " << series << ": " << v.detail;
      }
    }
  }
}

TEST_F(AssertionContract, SkippedStepsNeverHideWhatEveryStepShows) {
  constexpr std::int64_t k = 10;
  for (const auto& [name, e] : *examples_) {
    const ReadSeries read = SeriesRead(e);
    for (const bool metric : {true, false}) {
      for (const std::string& series : metric ? read.metrics : read.probes) {
        for (const double planted : {1e6, -1e6, 0.0}) {
          std::vector<RunEvidence> full = JudgedRuns(e, e.experiments);
          std::vector<Series::Point>& points = SeriesOf(full.front(), series, metric).EditPoints();
          // A value between recorded steps, in the middle of the run.
          const auto it =
              std::find_if(points.begin() + static_cast<std::ptrdiff_t>(points.size() / 2),
                           points.end(), [&](const Series::Point& p) {
                             return p.step % k != 0 && p.step != full.front().steps_done;
                           });
          if (points.size() < 2 * k || it == points.end()) continue;
          it->value = planted == 0 ? 0 : planted * (1 + std::abs(it->value));
          const Verdict every = JudgeRuns(e, full);
          std::vector<RunEvidence> thinned = full;
          thinned.front() = Subsampled(full.front(), k);
          const Verdict some = JudgeRuns(e, thinned);
          EXPECT_FALSE(Positive(some.kind) && !Positive(every.kind))
              << name << ": " << series << " = " << it->value << " at step " << it->step
              << ": every step recorded gives " << VerdictName(every.kind) << ", every " << k
              << "th gives " << VerdictName(some.kind) << " (" << some.measured << " | "
              << some.detail << ")";
        }
      }
    }
  }
}

TEST_F(AssertionContract, ConstantsOutsideTheirRegionNeverHold) {
  for (const auto& [name, e] : *examples_) {
    const ReadSeries read = SeriesRead(e);
    for (const std::string& constant : read.constants) {
      std::vector<RunEvidence> runs = JudgedRuns(e, e.experiments);
      RunEvidence& run = runs.front();
      // The constant holds only where the position is at most 1, and the iterates reached 2.
      for (Constant& c : run.constants) {
        if (c.name == constant) c.region = Region{"x_contract", 1.0, "the contract's region"};
      }
      for (std::int64_t t = 0; t <= run.steps_done; ++t) {
        run.metrics["x_contract"].Record({t, kRunWide, t == run.steps_done / 2 ? 2.0 : 0.5});
      }
      const Verdict v = JudgeRuns(e, runs);
      EXPECT_FALSE(Positive(v.kind))
          << name << " with " << constant << " outside its region: " << v.detail;
    }
  }
}

TEST_F(AssertionContract, OtherAlgorithmsNeverHold) {
  for (const auto& [name, e] : *examples_) {
    if (e.info->algorithms.empty()) continue;
    std::vector<RunEvidence> runs = JudgedRuns(e, e.experiments);
    runs.front().optimizer = "sgd";
    const Verdict v = JudgeRuns(e, runs);
    EXPECT_FALSE(Positive(v.kind)) << name << " on sgd: " << v.detail;
  }
}

}  // namespace
}  // namespace lemmalab
