#include "tests/optimizer_test_util.h"

#include <algorithm>

#include "cli/spec.h"

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

}  // namespace lemmalab::testing
