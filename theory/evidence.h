// What a finished run left in its results, in the form the assertions (theory/assertion.h) read:
// the metric and probe series, the problem's constants and the run's resolved options.
// cli/evidence_reader.cc fills it from results.sqlite, so an assertion judges a run the same way
// whether the check just ran it or reads it back with `lemmalab check --from DIR`.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperparameters.h"
#include "core/types.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {

// One recorded series, in the order it was recorded (ascending step; workers, then the server,
// within a step). `worker` is a worker index, kServer, or kRunWide.
struct Series {
  struct Point {
    std::int64_t step = 0;
    int worker = kRunWide;
    double value = 0;
  };
  std::vector<Point> points;

  bool empty() const { return points.empty(); }
  // The point with the largest (smallest) value; the first such point on ties. Empty series:
  // nullopt.
  std::optional<Point> Max() const;
  std::optional<Point> Min() const;
  // The values, in order.
  std::vector<double> Values() const;
};

// A run whose loss grows past BlowUpLimit(f(x_0)) = 1000 (1 + |f(x_0)|) has blown up, whether or
// not its numbers are still finite: the runner stops it as diverged (cli/experiment.cc), and the
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
  // The problem's constants, then what the run observed (G, certainty estimate).
  std::vector<Constant> constants;
  // Every option the run's optimizer, compressor and schedule read, defaults filled in
  // ("beta", "compressor.name", "schedule.lr"): the one way assertions read hyperparameters.
  Hyperparameters hyperparameters;

  bool completed() const { return status == "completed"; }
  const Series* Metric(std::string_view name) const;
  const Series* Probe(std::string_view probe, std::string_view series) const;
  // Whether `probe` recorded anything in this run.
  bool HasProbe(std::string_view probe) const;
  // The problem's constant `name` (exact or bound), else the run's estimate; nullptr if neither.
  const Constant* FindConstant(std::string_view name) const;
};

}  // namespace lemmalab
