// The interface every problem implements, and the registry of problems.
//
// A problem is the objective f(x) = (1/n) sum_i f_i(x) of n workers, with a stochastic oracle
// per worker. When shards are uneven, f is still the mean of the n shard objectives: every
// worker weighs equally, as the (1/n) sum_i f_i form of the papers says.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/options.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/types.h"
#include "problems/dataset.h"

namespace lemmalab {

// Full-batch quantities at one point, in double.
struct Evaluation {
  double loss = 0;          // f(x)
  double accuracy = 0;      // fraction of training samples classified correctly
  double grad_sq_norm = 0;  // ||grad f(x)||^2
};

template <typename T>
class Problem {
 public:
  virtual ~Problem() = default;

  virtual std::int64_t dimension() const = 0;
  virtual int num_workers() const = 0;
  virtual Vector<T> InitialPoint() const = 0;

  // Stochastic gradient g of f_worker at x on a minibatch drawn from `stream` (the worker's
  // kMinibatch stream of the step); returns the minibatch loss. Safe to call concurrently for
  // different workers.
  virtual double StochasticGradient(int worker, ConstVectorRef<T> x, PhiloxStream& stream,
                                    VectorRef<T> g) const = 0;

  // f(x), and its gradient into `gradient` when that is not null.
  virtual double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const = 0;

  virtual Evaluation Evaluate(ConstVectorRef<T> x) const = 0;

  // One line for reports: data, dimension, shards, batch size.
  virtual std::string Describe() const = 0;
};

struct ProblemContext {
  int workers = 1;
  std::uint64_t seed = 0;
  const Dataset* data = nullptr;  // from the spec's [data] table, when it has one
};

template <typename T>
using ProblemFactory = std::unique_ptr<Problem<T>> (*)(OptionTable& options,
                                                       const ProblemContext& context);

struct ProblemInfo {
  std::string_view name;
  std::string_view summary;
  bool needs_data;
  ProblemFactory<float> make_f32;
  ProblemFactory<double> make_f64;
};

const Registry<ProblemInfo>& Problems();

// Builds the problem a [problem] table names and rejects unknown keys.
template <typename T>
std::unique_ptr<Problem<T>> MakeProblem(OptionTable& options, const ProblemContext& context);

}  // namespace lemmalab
