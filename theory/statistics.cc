#include "theory/statistics.h"

#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace lemmalab {

double NormalQuantile(double p) { return boost::math::quantile(boost::math::normal(), p); }

MeanEstimate BatchMeans(std::span<const double> values, int batches) {
  MeanEstimate out;
  out.samples = static_cast<std::int64_t>(values.size());
  double sum = 0;
  for (const double v : values) sum += v;
  out.mean = values.empty() ? 0.0 : sum / static_cast<double>(values.size());
  const auto length = static_cast<std::int64_t>(values.size()) / batches;
  if (batches < 2 || length < 2) {
    out.standard_error = std::numeric_limits<double>::infinity();
    return out;
  }
  const std::size_t skip = values.size() - static_cast<std::size_t>(length * batches);
  double mean_of_means = 0, sq = 0;
  std::vector<double> means(static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    double s = 0;
    for (std::int64_t k = 0; k < length; ++k) {
      s += values[skip + static_cast<std::size_t>(b * length + k)];
    }
    means[static_cast<std::size_t>(b)] = s / static_cast<double>(length);
    mean_of_means += means[static_cast<std::size_t>(b)];
  }
  mean_of_means /= batches;
  for (const double m : means) sq += (m - mean_of_means) * (m - mean_of_means);
  out.standard_error = std::sqrt(sq / (batches - 1) / batches);
  out.dof = batches - 1;
  return out;
}

MeanEstimate IndependentMean(std::span<const double> values) {
  MeanEstimate out;
  out.samples = static_cast<std::int64_t>(values.size());
  if (values.empty()) {
    out.standard_error = std::numeric_limits<double>::infinity();
    return out;
  }
  double sum = 0;
  for (const double v : values) sum += v;
  const double n = static_cast<double>(values.size());
  out.mean = sum / n;
  if (values.size() < 2) {
    out.standard_error = std::numeric_limits<double>::infinity();
    return out;
  }
  double sq = 0;
  for (const double v : values) sq += (v - out.mean) * (v - out.mean);
  out.standard_error = std::sqrt(sq / (n - 1) / n);
  out.dof = n - 1;
  return out;
}

}  // namespace lemmalab
