#include "tests/optimizer_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/spec.h"
#include "tests/test_util.h"

namespace lemmalab::testing {

Eigen::VectorXd Vec(std::initializer_list<double> values) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(values.size()));
  std::copy(values.begin(), values.end(), out.data());
  return out;
}

OptionValue Str(std::string_view s) { return {std::string(s), ""}; }

OptionValue Int(std::int64_t i) { return {i, ""}; }

OptionValue Real(double x) { return {x, ""}; }

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

void StepChunked(DistributedOptimizer<double>& opt, int chunks, std::int64_t t, double lr,
                 const std::vector<Eigen::VectorXd>& g, Eigen::VectorXd& x) {
  const StepContext ctx{t, lr, kStepSeed};
  std::vector<std::vector<Message>> parts(g.size());
  Eigen::VectorXd decayed;
  for (std::size_t i = 0; i < g.size(); ++i) {
    Message whole;
    const auto worker = static_cast<int>(i);
    opt.WorkerStep(ctx, worker, x,
                   ConsumedGradient<double>(opt.weight_decay(), ctx, worker, g[i], x, decayed),
                   whole);
    opt.Split(ctx, static_cast<int>(i), whole, parts[i]);
    ASSERT_EQ(parts[i].size(), static_cast<std::size_t>(chunks));
  }
  std::vector<Message> replies(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    std::vector<Message> received;
    for (const auto& p : parts) received.push_back(p[static_cast<std::size_t>(c)]);
    opt.ServerStep(ctx, c, received, replies[static_cast<std::size_t>(c)]);
  }
  DecayBeforeApply<double>(opt.weight_decay(), ctx, x);
  opt.Apply(ctx, replies, x);
}

std::vector<Eigen::VectorXd> SmoothGradients(std::int64_t t, int workers, Eigen::Index d) {
  std::vector<Eigen::VectorXd> g;
  for (int i = 0; i < workers; ++i) {
    Eigen::VectorXd gi(d);
    for (Eigen::Index j = 0; j < d; ++j) {
      gi[j] = (1.0 + 0.5 * i) * std::sin(1.0 + 0.7 * static_cast<double>(t) + 1.3 * i + 0.9 * j);
    }
    g.push_back(gi);
  }
  return g;
}

double RelativeDistance(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / b.norm();
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
