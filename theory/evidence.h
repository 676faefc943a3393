// What a finished run left in its results, in the form the assertions (theory/assertion.h) read:
// the metric and probe series, the problem's constants and the run's resolved options.
// cli/evidence_reader.cc fills it from results.sqlite, so an assertion judges a run the same way
// whether the check just ran it or reads it back with `lemmalab check --from DIR`.
//
// A series holds two kinds of evidence. Its points are what probe_every, metrics_every and
// eval_every let through to the results. Its extents are exact statistics of every value it took
// (per worker: count, sum, smallest and largest with their steps, non-finite values), kept by the
// run loop at every step whatever was recorded. A claim about every step or call is judged from
// the extents; the points serve claims that need the values in order, and samples.
//
// How a judgement reads a series is part of what it claims (docs/evidence.md): points() reads
// the points as every value the series took, sample() as a sample of them, the extents as what
// they are. theory/evidence_rule.h watches every read and lets no verdict claim more than its
// evidence covers.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperparameters.h"
#include "core/state.h"
#include "core/types.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {

// Exact statistics of the values one series took at every step of a run (of one worker, or
// merged over the workers), recorded or not. Non-finite values are counted apart: min, max and
// sum are of the finite ones, so a NaN can never hide behind a comparison.
struct Extent {
  std::int64_t count = 0;  // values observed, finite or not
  std::int64_t first_step = 0, last_step = 0;
  double sum = 0, sum_squares = 0;  // of the finite values
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::int64_t min_step = 0, max_step = 0;
  int min_worker = kRunWide, max_worker = kRunWide;
  std::int64_t non_finite = 0;  // NaN and +-inf values
  std::int64_t first_non_finite_step = 0;
  int first_non_finite_worker = kRunWide;
  double first_non_finite = 0;  // NaN, +inf or -inf

  bool empty() const { return count == 0; }
  bool finite() const { return non_finite == 0; }
  std::int64_t finite_count() const { return count - non_finite; }
  // The values' mean and sample variance (NaN when any value is not finite, or there are too few).
  double mean() const;
  double variance() const;

  void Add(std::int64_t step, int worker, double value);
  // The extent of both series of values (another worker's, say).
  void Merge(const Extent& other);
  void Persist(StateArchive& archive);
};

// The extents of many series by name and worker: what the run loop keeps of every value its
// metrics and probes take, at every step, whatever is recorded.
class ExtentBook {
 public:
  using Key = std::pair<std::string, int>;  // the series' name, the worker
  void Add(std::string_view name, int worker, std::int64_t step, double value);
  const auto& entries() const { return extents_; }
  void Persist(StateArchive& archive);

 private:
  // Looked up by (string_view, int) without building a string per value.
  struct Less {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::pair<std::string_view, int>(a.first, a.second) <
             std::pair<std::string_view, int>(b.first, b.second);
    }
  };
  std::map<Key, Extent, Less> extents_;
};

// How a judgement read a series (theory/evidence_rule.h).
enum class Reading {
  kEveryPoint,  // the recorded points, as if they were every value
  kSample,      // the recorded points as a sample of the values (a mean, a fit, one step's value)
  kExtent,      // the exact statistics of every value
};

// What one judgement read of a run: the series, by "metric <name>" or "probe <probe>/<series>"
// (MetricReadName, ProbeReadName), with the ways they were read, and the constants, by name.
struct EvidenceReads {
  std::map<std::string, std::set<Reading>, std::less<>> series;
  std::set<std::string, std::less<>> constants;
};

// One recorded series, in the order it was recorded (ascending step; workers, then the server,
// within a step). `worker` is a worker index, kServer, or kRunWide.
class Series {
 public:
  struct Point {
    std::int64_t step = 0;
    int worker = kRunWide;
    double value = 0;
  };

  // Building from results: a recorded point, and the extent of every value of one worker.
  void Add(Point point) { points_.push_back(point); }
  void SetExtent(int worker, const Extent& extent) {
    every_value_ = false;
    extents_[worker] = extent;
  }
  // Building a series whose points are every value it took (hand-made evidence): a value, and
  // the points to change in place. The extents are then the points'.
  void Record(Point point) { EditPoints().push_back(point); }
  std::vector<Point>& EditPoints() {
    every_value_ = true;
    extents_.clear();
    return points_;
  }

  // Reading. The recorded points as every value the series took: a verdict that says "holds"
  // from them must have them all (Complete()).
  std::span<const Point> points() const;
  // The recorded points as a sample of the values (for a mean, a fit, or the value at one step):
  // any subset of the values is evidence for what it estimates.
  std::span<const Point> sample() const;
  // The recorded value of `worker` at `step`, if any (a read of one sample).
  std::optional<double> At(std::int64_t step, int worker = kRunWide) const;

  // The exact statistics of every value, merged over the workers; without extents (results of
  // an older lemmalab, hand-made evidence), those of the recorded points, read as every value.
  Extent extent() const;
  // The same for one worker (an empty extent when it has none).
  Extent extent(int worker) const;
  // The workers (kServer, kRunWide included) the series has values for.
  std::vector<int> workers() const;
  // The point with the largest (smallest) value over every value the series took (extent());
  // a NaN or infinite value, if any, is the result: the first one seen. Empty series: nullopt.
  std::optional<Point> Max() const;
  std::optional<Point> Min() const;

  // Not reads: what the series holds.
  bool empty() const { return points_.empty() && extents_.empty(); }
  std::size_t recorded() const { return points_.size(); }
  // Whether every value is accounted for: by extents, or by points that are every value.
  bool has_extents() const { return every_value_ || !extents_.empty(); }
  // Values observed (from the extents; the recorded points without them).
  std::int64_t observed() const;
  // Whether the recorded points are every value the series took: its extents exist and count
  // exactly the recorded points of each worker.
  bool Complete() const;
  // The first non-finite value among the extents and the points, if any.
  std::optional<Point> FirstNonFinite() const;

  // The name reads are logged under ("probe q-deviate/ratio"), while a judgement runs.
  const std::string& name() const { return name_; }
  // Where reads are logged while a judgement runs (theory/evidence_rule.cc sets and clears it).
  void Watch(EvidenceReads* reads, std::string name) const {
    reads_ = reads;
    name_ = std::move(name);
  }

 private:
  void Log(Reading reading) const;

  // The extents of every value, per worker, or their absence: then either the points are every
  // value (every_value_: hand-made evidence) or nothing says what lies between them (results of
  // an older lemmalab).
  const std::map<int, Extent>& extents() const;
  std::vector<Point> points_;
  std::map<int, Extent> extents_;
  bool every_value_ = false;
  mutable std::map<int, Extent> derived_;  // the points' extents, when they are every value
  mutable EvidenceReads* reads_ = nullptr;
  mutable std::string name_;
};

// A run whose loss grows past BlowUpLimit(f(x_0)) = 1000 (1 + |f(x_0)|) has blown up, whether or
// not its numbers are still finite: the runner stops it as diverged (engine/experiment.cc), and the
// RunCompleted premise reads it off the recorded series of older results.
inline double BlowUpLimit(double initial_loss) { return 1e3 * (1 + std::abs(initial_loss)); }

struct RunEvidence {
  std::string label;      // the [[optimizer]] label
  std::string optimizer;  // its registry name
  std::string status;     // "completed" or "diverged at step ...: ..."
  std::int64_t steps_done = 0;
  double final_loss = 0;  // the full-batch training loss at the last evaluation
  std::uint64_t seed = 0;
  int workers = 1;
  std::int64_t dimension = 0;
  Precision precision = Precision::kFp32;
  std::map<std::string, Series, std::less<>> metrics;  // by metric name
  std::map<std::string, Series, std::less<>> probes;   // by "probe/series"
  // The problem's constants (with the regions where they hold), then what the run observed
  // (G, certainty estimate).
  std::vector<Constant> constants;
  // Every option the run's optimizer, compressor and schedule read, defaults filled in
  // ("beta", "compressor.name", "schedule.lr"): the one way assertions read hyperparameters (the
  // optimizer's own through its reader: theory/optimizer_options.h).
  Hyperparameters hyperparameters;

  bool completed() const { return status == "completed"; }
  // The series, or nullptr; reading it is logged (see Series).
  const Series* Metric(std::string_view name) const;
  const Series* Probe(std::string_view probe, std::string_view series) const;
  // Whether `probe` recorded anything in this run.
  bool HasProbe(std::string_view probe) const;
  // The problem's constant `name` (exact or bound), else the run's estimate; nullptr if neither.
  // Reading a constant is logged: the verdict then rests on the region where it holds.
  const Constant* FindConstant(std::string_view name) const;

  // Logs every read of this run's evidence into `reads` (nullptr: stop logging).
  void Watch(EvidenceReads* reads) const;

 private:
  mutable EvidenceReads* reads_ = nullptr;
};

// The name a read of a metric or a probe series is logged under.
std::string MetricReadName(std::string_view metric);
std::string ProbeReadName(std::string_view probe_series);

}  // namespace lemmalab
