#include "theory/evidence.h"

#include <fmt/format.h>

#include <algorithm>

namespace lemmalab {

double Extent::mean() const {
  if (non_finite > 0) return std::numeric_limits<double>::quiet_NaN();
  return count == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(count);
}

double Extent::variance() const {
  if (non_finite > 0 || count < 2) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(count);
  return std::max(0.0, (sum_squares - sum * sum / n) / (n - 1));
}

void Extent::Add(std::int64_t step, int worker, double value) {
  if (count == 0) first_step = step;
  ++count;
  last_step = std::max(last_step, step);
  first_step = std::min(first_step, step);
  if (!std::isfinite(value)) {
    if (non_finite++ == 0) {
      first_non_finite_step = step;
      first_non_finite_worker = worker;
      first_non_finite = value;
    }
    return;
  }
  sum += value;
  sum_squares += value * value;
  if (value < min) {
    min = value;
    min_step = step;
    min_worker = worker;
  }
  if (value > max) {
    max = value;
    max_step = step;
    max_worker = worker;
  }
}

void Extent::Merge(const Extent& other) {
  if (other.count == 0) return;
  if (count == 0) {
    *this = other;
    return;
  }
  count += other.count;
  first_step = std::min(first_step, other.first_step);
  last_step = std::max(last_step, other.last_step);
  sum += other.sum;
  sum_squares += other.sum_squares;
  // Ties go to the earlier step, then to the lower worker, whichever series they came from.
  const auto before = [](std::int64_t step_a, int worker_a, std::int64_t step_b, int worker_b) {
    return step_a < step_b || (step_a == step_b && worker_a < worker_b);
  };
  if (other.min < min ||
      (other.min == min && before(other.min_step, other.min_worker, min_step, min_worker))) {
    min = other.min;
    min_step = other.min_step;
    min_worker = other.min_worker;
  }
  if (other.max > max ||
      (other.max == max && before(other.max_step, other.max_worker, max_step, max_worker))) {
    max = other.max;
    max_step = other.max_step;
    max_worker = other.max_worker;
  }
  if (other.non_finite > 0 &&
      (non_finite == 0 || before(other.first_non_finite_step, other.first_non_finite_worker,
                                 first_non_finite_step, first_non_finite_worker))) {
    first_non_finite_step = other.first_non_finite_step;
    first_non_finite_worker = other.first_non_finite_worker;
    first_non_finite = other.first_non_finite;
  }
  non_finite += other.non_finite;
}

void Extent::Persist(StateArchive& archive) {
  archive("count", count);
  archive("first_step", first_step);
  archive("last_step", last_step);
  archive("sum", sum);
  archive("sum_squares", sum_squares);
  archive("min", min);
  archive("max", max);
  archive("min_step", min_step);
  archive("max_step", max_step);
  archive("min_worker", min_worker);
  archive("max_worker", max_worker);
  archive("non_finite", non_finite);
  archive("first_non_finite_step", first_non_finite_step);
  archive("first_non_finite_worker", first_non_finite_worker);
  archive("first_non_finite", first_non_finite);
}

void ExtentBook::Add(std::string_view name, int worker, std::int64_t step, double value) {
  auto it = extents_.find(std::pair<std::string_view, int>(name, worker));
  if (it == extents_.end()) it = extents_.emplace(Key(std::string(name), worker), Extent()).first;
  it->second.Add(step, worker, value);
}

void ExtentBook::Persist(StateArchive& archive) {
  std::vector<std::pair<Key, Extent>> list(extents_.begin(), extents_.end());
  archive.List("extents", list, [&](std::pair<Key, Extent>& entry) {
    archive("name", entry.first.first);
    archive("worker", entry.first.second);
    archive.Nested("extent", entry.second);
  });
  extents_ = {list.begin(), list.end()};
}

const std::map<int, Extent>& Series::extents() const {
  if (!every_value_) return extents_;
  derived_.clear();
  for (const Point& p : points_) derived_[p.worker].Add(p.step, p.worker, p.value);
  return derived_;
}

void Series::Log(Reading reading) const {
  if (reads_ != nullptr) reads_->series[name_].insert(reading);
}

std::span<const Series::Point> Series::points() const {
  Log(Reading::kEveryPoint);
  return points_;
}

std::span<const Series::Point> Series::sample() const {
  Log(Reading::kSample);
  return points_;
}

std::optional<double> Series::At(std::int64_t step, int worker) const {
  Log(Reading::kSample);
  for (const Point& p : points_) {
    if (p.step == step && p.worker == worker) return p.value;
  }
  return std::nullopt;
}

Extent Series::extent() const {
  Extent all;
  if (!has_extents()) {
    for (const Point& p : points()) all.Add(p.step, p.worker, p.value);
    return all;
  }
  Log(Reading::kExtent);
  for (const auto& [worker, e] : extents()) all.Merge(e);
  return all;
}

Extent Series::extent(int worker) const {
  Extent one;
  if (!has_extents()) {
    for (const Point& p : points()) {
      if (p.worker == worker) one.Add(p.step, p.worker, p.value);
    }
    return one;
  }
  Log(Reading::kExtent);
  const std::map<int, Extent>& all = extents();
  const auto it = all.find(worker);
  return it == all.end() ? one : it->second;
}

std::vector<int> Series::workers() const {
  std::set<int> all;
  for (const auto& [worker, e] : extents_) all.insert(worker);
  for (const Point& p : points_) all.insert(p.worker);
  return {all.begin(), all.end()};
}

namespace {

std::optional<Series::Point> Extreme(const Extent& e, bool largest) {
  if (e.empty()) return std::nullopt;
  if (!e.finite()) {
    return Series::Point{e.first_non_finite_step, e.first_non_finite_worker, e.first_non_finite};
  }
  return largest ? Series::Point{e.max_step, e.max_worker, e.max}
                 : Series::Point{e.min_step, e.min_worker, e.min};
}

}  // namespace

std::optional<Series::Point> Series::Max() const { return Extreme(extent(), true); }
std::optional<Series::Point> Series::Min() const { return Extreme(extent(), false); }

std::int64_t Series::observed() const {
  if (every_value_ || extents_.empty()) return static_cast<std::int64_t>(points_.size());
  std::int64_t n = 0;
  for (const auto& [worker, e] : extents_) n += e.count;
  return n;
}

bool Series::Complete() const {
  if (every_value_) return true;
  if (extents_.empty()) return false;
  std::map<int, std::int64_t> recorded;
  for (const Point& p : points_) ++recorded[p.worker];
  for (const auto& [worker, e] : extents_) {
    const auto it = recorded.find(worker);
    if (e.count != (it == recorded.end() ? 0 : it->second)) return false;
  }
  for (const auto& [worker, n] : recorded) {
    if (!extents_.contains(worker)) return false;
  }
  return true;
}

std::optional<Series::Point> Series::FirstNonFinite() const {
  std::optional<Point> first;
  const auto consider = [&](Point p) {
    if (!first || p.step < first->step || (p.step == first->step && p.worker < first->worker)) {
      first = p;
    }
  };
  for (const auto& [worker, e] : extents_) {
    if (!e.finite()) {
      consider({e.first_non_finite_step, e.first_non_finite_worker, e.first_non_finite});
    }
  }
  for (const Point& p : points_) {
    if (!std::isfinite(p.value)) consider(p);
  }
  return first;
}

std::string MetricReadName(std::string_view metric) { return fmt::format("metric {}", metric); }
std::string ProbeReadName(std::string_view probe_series) {
  return fmt::format("probe {}", probe_series);
}

const Series* RunEvidence::Metric(std::string_view name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? nullptr : &it->second;
}

const Series* RunEvidence::Probe(std::string_view probe, std::string_view series) const {
  const auto it = probes.find(fmt::format("{}/{}", probe, series));
  return it == probes.end() ? nullptr : &it->second;
}

bool RunEvidence::HasProbe(std::string_view probe) const {
  const std::string prefix = fmt::format("{}/", probe);
  const auto it = probes.lower_bound(prefix);
  return it != probes.end() && it->first.starts_with(prefix);
}

const Constant* RunEvidence::FindConstant(std::string_view name) const {
  const Constant* estimate = nullptr;
  const Constant* found = nullptr;
  for (const Constant& c : constants) {
    if (c.name != name) continue;
    if (c.certainty != Certainty::kEstimate) {
      found = &c;
      break;
    }
    if (estimate == nullptr) estimate = &c;
  }
  if (found == nullptr) found = estimate;
  if (found != nullptr && reads_ != nullptr) reads_->constants.emplace(name);
  return found;
}

void RunEvidence::Watch(EvidenceReads* reads) const {
  reads_ = reads;
  for (const auto& [name, series] : metrics) {
    series.Watch(reads, reads ? MetricReadName(name) : std::string());
  }
  for (const auto& [name, series] : probes) {
    series.Watch(reads, reads ? ProbeReadName(name) : std::string());
  }
}

}  // namespace lemmalab
