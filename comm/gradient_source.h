// Where a run's stochastic gradients come from when not from Problem::StochasticGradient, one
// worker at a time on the CPU: a GPU run computes every worker's at once on the device
// (batched/device_optimizer.h), and the cluster (comm/cluster.h) asks it instead.
#pragma once

#include <span>

#include "core/types.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// Every worker's stochastic gradient of a step computed at once, elsewhere than on the CPU (a GPU
// run's, batched/gradients.h), in place of Problem::StochasticGradient per worker: from the same
// minibatch streams, at each worker's parameters (x, or its own: LocalParameters).
template <typename T>
class GradientSource {
 public:
  virtual ~GradientSource() = default;
  // Step ctx's gradients at x, kept where the optimizer reads them; each worker's minibatch loss
  // and gradient norm into `losses` and `norms`.
  virtual void Compute(const StepContext& ctx, ConstVectorRef<T> x, std::span<double> losses,
                       std::span<double> norms) = 0;
  // Host copies of the last step's gradients (what probes replay), one per worker.
  virtual void CopyTo(std::span<Vector<T>> gradients) const = 0;
};

}  // namespace lemmalab
