#include "theory/evidence.h"

#include <fmt/format.h>

namespace lemmalab {

std::optional<Series::Point> Series::Max() const {
  std::optional<Point> best;
  for (const Point& p : points) {
    if (!best || p.value > best->value) best = p;
  }
  return best;
}

std::optional<Series::Point> Series::Min() const {
  std::optional<Point> best;
  for (const Point& p : points) {
    if (!best || p.value < best->value) best = p;
  }
  return best;
}

std::vector<double> Series::Values() const {
  std::vector<double> out;
  out.reserve(points.size());
  for (const Point& p : points) out.push_back(p.value);
  return out;
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
  for (const Constant& c : constants) {
    if (c.name != name) continue;
    if (c.certainty != Certainty::kEstimate) return &c;
    if (estimate == nullptr) estimate = &c;
  }
  return estimate;
}

}  // namespace lemmalab
