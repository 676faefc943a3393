// n workers simulated in one process, stepping a DistributedOptimizer in the parameter-server
// scheme of the papers' analysis: every worker computes its stochastic gradient and its message
// (in parallel, one OpenMP iteration per worker), the aggregation point runs the server phase on
// the n messages in worker order, and the replica applies the broadcast.
//
// All replicas apply the same message to the same parameters, so one copy of x stands for all
// of them. Traffic is counted from the messages themselves.
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
  StepTraffic traffic;
};

template <typename T>
class SimulatedCluster {
 public:
  SimulatedCluster(const Problem<T>& problem, DistributedOptimizer<T>& optimizer);

  int workers() const { return workers_; }

  // One synchronous step t (ctx.t) from parameters x, which are updated in place.
  const StepResult& Step(const StepContext& ctx, VectorRef<T> x);

 private:
  const Problem<T>& problem_;
  DistributedOptimizer<T>& optimizer_;
  int workers_;
  std::vector<Vector<T>> gradients_;
  std::vector<Message> uplink_;
  Message downlink_;
  StepResult result_;
};

}  // namespace lemmalab
