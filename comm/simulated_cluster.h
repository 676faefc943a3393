// n workers simulated in one process, stepping a DistributedOptimizer in the parameter-server
// scheme of the papers' analysis: every worker computes its stochastic gradient and its message
// (in parallel, one OpenMP iteration per worker), the aggregation point runs the server phase on
// the n messages in worker order, and the replica applies the broadcast.
//
// All replicas apply the same message to the same parameters, so one copy of x stands for all
// of them; an algorithm whose replicas drift apart between synchronisations (local SGD) keeps
// them itself, and each worker's gradient is taken at its own replica
// (DistributedOptimizer::LocalParameters). Traffic is counted from the messages themselves.
#pragma once

#include <cstdint>
#include <vector>

#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {

// Bytes that crossed the network in one step, per worker, in the parameter-server scheme.
struct StepTraffic {
  std::vector<std::int64_t> sent;      // worker i -> server
  std::vector<std::int64_t> received;  // server -> worker i
};

struct StepResult {
  std::vector<double> minibatch_loss;  // per worker
  std::vector<double> gradient_norm;   // ||g|| of each worker's stochastic gradient
  StepTraffic traffic;
};

template <typename T>
class SimulatedCluster {
 public:
  // `threads` = 0 chooses: one thread when a step is too small to pay for a parallel region
  // (dimension x workers below kParallelWork), else OpenMP's default. Results are the same
  // either way; only the time differs.
  SimulatedCluster(const Problem<T>& problem, DistributedOptimizer<T>& optimizer, int threads = 0);

  static constexpr std::int64_t kParallelWork = 1 << 15;

  // Threads the worker phase runs on, and the largest team OpenMP actually gave it.
  int threads() const { return threads_; }
  int largest_team() const { return largest_team_; }

  // One synchronous step t (ctx.t) from parameters x, which are updated in place.
  const StepResult& Step(const StepContext& ctx, VectorRef<T> x);

 private:
  const Problem<T>& problem_;
  DistributedOptimizer<T>& optimizer_;
  int workers_;
  int threads_;
  int largest_team_ = 0;
  std::vector<Vector<T>> gradients_;
  std::vector<Message> uplink_;
  Message downlink_;
  StepResult result_;
};

}  // namespace lemmalab
