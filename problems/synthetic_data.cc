#include <fmt/format.h>

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "core/rng.h"
#include "problems/dataset.h"

namespace lemmalab {

Dataset MakeSyntheticLogistic(std::int64_t samples, std::int64_t features, double signal,
                              std::uint64_t seed) {
  // One stream, drawn in a fixed order: w*, then each sample's features and its label.
  PhiloxStream stream({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal(0.0, 1.0);

  Eigen::VectorXd w_star(features);
  const double scale = signal / std::sqrt(static_cast<double>(features));
  for (std::int64_t j = 0; j < features; ++j) w_star[j] = scale * normal(stream);

  Dataset data;
  Samples& train = data.train;
  train.features.resize(samples, features);
  train.labels.resize(samples);
  for (std::int64_t i = 0; i < samples; ++i) {
    for (std::int64_t j = 0; j < features; ++j) train.features(i, j) = normal(stream);
    const double logit = train.features.row(i).dot(w_star);
    const double p = 1.0 / (1.0 + std::exp(-logit));
    train.labels[i] = boost::random::bernoulli_distribution<double>(p)(stream) ? 1 : 0;
  }
  for (std::int64_t j = 0; j < features; ++j) data.feature_names.push_back(fmt::format("x{}", j));
  data.description =
      fmt::format("synthetic logistic ({} samples x {} features, signal {}, seed {})", samples,
                  features, signal, seed);
  return data;
}

}  // namespace lemmalab
