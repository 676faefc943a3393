#include "comm/simulated_cluster.h"

#include <omp.h>

#include <algorithm>

#include "core/parallel.h"

namespace lemmalab {

template <typename T>
SimulatedCluster<T>::SimulatedCluster(const Problem<T>& problem, DistributedOptimizer<T>& optimizer,
                                      int threads)
    : problem_(problem),
      optimizer_(optimizer),
      workers_(problem.num_workers()),
      threads_(threads > 0                                      ? threads
               : problem.dimension() * workers_ < kParallelWork ? 1
                                                                : omp_get_max_threads()),
      gradients_(static_cast<std::size_t>(workers_), Vector<T>(problem.dimension())),
      uplink_(static_cast<std::size_t>(workers_)) {
  const auto n = static_cast<std::size_t>(workers_);
  result_.minibatch_loss.resize(n);
  result_.gradient_norm.resize(n);
  result_.traffic.sent.resize(n);
  result_.traffic.received.resize(n);
}

template <typename T>
const StepResult& SimulatedCluster<T>::Step(const StepContext& ctx, VectorRef<T> x) {
  const int team = ParallelFor(workers_, threads_, [&](int i) {
    const auto w = static_cast<std::size_t>(i);
    const Vector<T>* local = optimizer_.LocalParameters(i);
    const ConstVectorRef<T> x_i =
        local != nullptr ? ConstVectorRef<T>(*local) : ConstVectorRef<T>(x);
    PhiloxStream batch = ctx.Stream(Purpose::kMinibatch, static_cast<std::uint32_t>(i));
    result_.minibatch_loss[w] = problem_.StochasticGradient(i, x_i, batch, gradients_[w]);
    result_.gradient_norm[w] = static_cast<double>(gradients_[w].norm());
    optimizer_.WorkerStep(ctx, i, x_i, gradients_[w], uplink_[w]);
  });
  largest_team_ = std::max(largest_team_, team);
  optimizer_.ServerStep(ctx, uplink_, downlink_);
  optimizer_.Apply(ctx, downlink_, x);
  for (std::size_t w = 0; w < uplink_.size(); ++w) {
    result_.traffic.sent[w] = static_cast<std::int64_t>(uplink_[w].bytes.size());
    result_.traffic.received[w] = static_cast<std::int64_t>(downlink_.bytes.size());
  }
  return result_;
}

template class SimulatedCluster<float>;
template class SimulatedCluster<double>;

}  // namespace lemmalab
