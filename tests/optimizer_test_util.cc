#include "tests/optimizer_test_util.h"

#include <algorithm>

#include "cli/spec.h"
#include "tests/test_util.h"

namespace lemmalab::testing {

Eigen::VectorXd Vec(std::initializer_list<double> values) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(values.size()));
  std::copy(values.begin(), values.end(), out.data());
  return out;
}

OptionValue Str(std::string_view s) { return {std::string(s), ""}; }

OptionValue Int(std::int64_t i) { return {i, ""}; }

std::unique_ptr<DistributedOptimizer<double>> MakeFromToml(const std::string& toml,
                                                           std::int64_t dimension, int workers) {
  auto table = ParseOptionTable(toml, "optimizer", "test.toml");
  return MakeOptimizer<double>(*table, OptimizerContext{dimension, workers});
}

Hyperparameters MakeFromTomlHyperparameters(const std::string& toml, std::int64_t dimension,
                                            int workers) {
  auto table = ParseOptionTable(toml, "optimizer", "test.toml");
  MakeOptimizer<double>(*table, OptimizerContext{dimension, workers});
  return table->Resolved();
}

StepGradients GaussianGradients(int workers, int steps, Eigen::Index d) {
  StepGradients g(static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < workers; ++i) {
      g[static_cast<std::size_t>(s)].push_back(
          GaussianVector(d, static_cast<std::uint64_t>(1000 * s + i)));
    }
  }
  return g;
}

StepGradients DyadicGradients(int workers, int steps, Eigen::Index d) {
  StepGradients g(static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < workers; ++i) {
      Eigen::VectorXd v(d);
      for (Eigen::Index j = 0; j < d; ++j) {
        v[j] = static_cast<double>(((s + 3) * 37 + i * 11 + j * 7 + s * i * j) % 129 - 64) / 8;
      }
      g[static_cast<std::size_t>(s)].push_back(v);
    }
  }
  return g;
}

}  // namespace lemmalab::testing
