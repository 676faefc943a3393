// Helpers shared by the optimizer tests: one synchronous step of the three phases, short vector
// literals, and optimizers built through the registry from TOML text or key/value pairs.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/options.h"
#include "core/registry.h"
#include "optimizers/optimizer.h"
#include "optimizers/weight_decay.h"

namespace lemmalab::testing {

// The StepContext seed of Step unless a test gives its own. Tests that replay Step's random
// draws (the documented stream rule) key their streams with this same value.
inline constexpr std::uint64_t kStepSeed = 2024;

// What crossed the network in one step, in bytes.
struct Traffic {
  std::vector<std::size_t> up;  // bytes each worker sent, in worker order
  std::size_t down = 0;         // bytes the server sent back
};

// One synchronous step t of the three phases with the given per-worker gradients, as the cluster
// runs them: every worker's WorkerStep (at its own replica when the optimizer keeps one,
// LocalParameters, else at x; the gradients are given, not computed there; with the optimizer's
// weight decay), the ServerStep on the messages in worker order, and Apply of the reply to x.
// Returns the message sizes; `up_out` and `down_out`, when given, receive the messages themselves.
template <typename T>
Traffic Step(DistributedOptimizer<T>& opt, std::int64_t t, double lr,
             const std::vector<Vector<T>>& gradients, Vector<T>& x, std::uint64_t seed = kStepSeed,
             std::vector<Message>* up_out = nullptr, Message* down_out = nullptr) {
  const StepContext ctx{t, lr, seed};
  std::vector<Message> up(gradients.size());
  Message down;
  Vector<T> decayed;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const int worker = static_cast<int>(i);
    const Vector<T>* local = opt.LocalParameters(worker);
    const ConstVectorRef<T> at =
        local != nullptr ? ConstVectorRef<T>(*local) : ConstVectorRef<T>(x);
    opt.WorkerStep(ctx, worker, at,
                   ConsumedGradient<T>(opt.weight_decay(), ctx, worker, gradients[i], at, decayed),
                   up[i]);
  }
  opt.ServerStep(ctx, 0, up, down);
  DecayBeforeApply<T>(opt.weight_decay(), ctx, x);
  opt.Apply(ctx, std::span<const Message>(&down, 1), x);
  Traffic traffic{{}, down.bytes.size()};
  for (const Message& m : up) traffic.up.push_back(m.bytes.size());
  if (up_out != nullptr) *up_out = std::move(up);
  if (down_out != nullptr) *down_out = std::move(down);
  return traffic;
}

// A vector literal: Vec({1, -2, 0.5}).
Eigen::VectorXd Vec(std::initializer_list<double> values);

// One synchronous step under a flat chunked layout of `chunks` server chunks (optimizers/
// optimizer.h): every worker's message split by chunk, each chunk's server on its parts in worker
// order, Apply on the replies in chunk order.
void StepChunked(DistributedOptimizer<double>& opt, int chunks, std::int64_t t, double lr,
                 const std::vector<Eigen::VectorXd>& g, Eigen::VectorXd& x);

// Worker i's gradient at step t: smooth in t, of mixed signs, different on every worker,
// (1 + i/2) sin(1 + 0.7 t + 1.3 i + 0.9 j).
std::vector<Eigen::VectorXd> SmoothGradients(std::int64_t t, int workers, Eigen::Index d);

// ||a - b|| / ||b||.
double RelativeDistance(const Eigen::VectorXd& a, const Eigen::VectorXd& b);

// Fixed gradients for `steps` steps of `workers` workers, d coordinates each (g[s][i]):
// Gaussian (GaussianVector with seed 1000 s + i), or dyadic: multiples of 1/8 in [-8, 8], so that
// with a power-of-two worker count and rate every sum, difference, mean and update is exact in
// fp64, and an algorithm that is gradient descent in exact arithmetic equals it bit for bit.
using StepGradients = std::vector<std::vector<Eigen::VectorXd>>;
StepGradients GaussianGradients(int workers, int steps, Eigen::Index d = 5);
StepGradients DyadicGradients(int workers, int steps, Eigen::Index d = 5);

// Option values as a spec would give them, for MakeNamed's pairs.
OptionValue Str(std::string_view s);
OptionValue Int(std::int64_t i);
OptionValue Real(double x);

// Key/value options for MakeNamed; a braced list {{"beta1", {0.5, ""}}, ...} converts to it.
using OptionPairs = std::vector<std::pair<std::string, OptionValue>>;

// How MakeNamed builds an optimizer.
enum class Through {
  kMakeOptimizer,  // as a run does: with the generic weight decay of the entry (adamw: 0.01)
  kFactory,        // the entry's registered factory alone, without the generic weight decay
};

// The registered optimizer `name` built from `options` (a table named "optimizer '<name>'" that
// holds `name` under "name"); unknown keys are rejected as in a run.
template <typename T = double>
std::unique_ptr<DistributedOptimizer<T>> MakeNamed(std::string_view name,
                                                   const OptionPairs& options,
                                                   const OptimizerContext& context,
                                                   Through through = Through::kMakeOptimizer) {
  OptionTable table("optimizer '" + std::string(name) + "'", "");
  table.Set("name", {std::string(name), ""});
  for (const auto& [key, value] : options) table.Set(key, value);
  if (through == Through::kMakeOptimizer) return MakeOptimizer<T>(table, context);
  std::unique_ptr<DistributedOptimizer<T>> optimizer =
      FactoryFor<T>(Optimizers().Get(table))(table, context);
  table.RejectUnknownKeys();
  return optimizer;
}

// The optimizer an [[optimizer]] table written in TOML describes ("name = 'sgd'\nbeta = 0.5"),
// built by MakeOptimizer as a run builds it, for `workers` workers on `dimension` parameters.
std::unique_ptr<DistributedOptimizer<double>> MakeFromToml(const std::string& toml,
                                                           std::int64_t dimension, int workers = 2);

// The resolved options (core/hyperparameters.h) of the optimizer that table describes, as a run
// stores them with its results.
Hyperparameters MakeFromTomlHyperparameters(const std::string& toml, std::int64_t dimension = 8,
                                            int workers = 2);

}  // namespace lemmalab::testing
