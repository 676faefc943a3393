// The mean and largest value of a probe's series, with the step and sender of the largest: what a
// probe's Summary lines report.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/state.h"

namespace lemmalab {

struct Tally {
  double sum = 0;
  std::int64_t count = 0;
  double max = -std::numeric_limits<double>::infinity();
  std::int64_t max_step = 0;
  int max_worker = 0;

  void Add(double value, std::int64_t step, int worker) {
    sum += value;
    ++count;
    if (!std::isnan(max) && !(value <= max)) {  // a NaN, once seen, stays the largest
      max = value;
      max_step = step;
      max_worker = worker;
    }
  }
  double mean() const { return count == 0 ? 0.0 : sum / static_cast<double>(count); }

  void Persist(StateArchive& archive) {
    archive("sum", sum);
    archive("count", count);
    archive("max", max);
    archive("max_step", max_step);
    archive("max_worker", max_worker);
  }
};

}  // namespace lemmalab
