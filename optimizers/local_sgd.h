// Local SGD (Stich, ICLR 2019, "Local SGD converges fast and communicates little"; Lin et al.,
// ICLR 2020, "Don't use large mini-batches, use local SGD"): the replicas drift apart between
// synchronisations.
//
//   worker i, every step:  x^(i) <- x^(i) - alpha_t g^(i)(x^(i))
//            local-sgdm:   m^(i) <- beta m^(i) + (1 - beta) g^(i),  x^(i) <- x^(i) - alpha_t m^(i)
//   every tau steps (t % tau == 0): worker i sends x^(i) in full precision (the run's scalar
//            type, optimizers/full_precision_wire.h), the server averages, and
//            x <- mean_i x^(i), x^(i) <- x.
//   other steps: the messages are empty (0 bytes cross the network) and x is unchanged.
//
// x is the synchronised model the runner evaluates; LocalParameters(i) returns x^(i), where the
// runner takes worker i's gradient. The optimizer does not know x_0 when it is built, so x^(i)
// is copied from x at worker i's first WorkerStep (LocalParameters returns nullptr until then,
// and the runner uses x). With tau = 1 local SGD is SGD up to the rounding of mean_i(x - a g_i)
// against x - a mean_i g_i.
//
// local-sgdm's momentum is the papers' (1 - beta) form (onebit-adam-icml-with-appendix.txt App.
// 10 item 5; Lin et al. use PyTorch's m = beta m + g). Whether m^(i) is averaged at a
// synchronisation is the option average_momentum: true (default) sends m^(i) along with x^(i)
// (2d values per message) and sets every m^(i) to the mean, as the onebit-adam-icml App. 10
// baseline ("both model and momentum would be averaged"); false keeps each worker's momentum
// local, as in Lin et al.'s local momentum.
//
// Decoupled weight decay (optimizers/weight_decay.h) acts on the synchronised x at Apply and so
// does not reach the replicas x^(i); weight_decay_mode = "l2" acts on each replica's gradient.
#pragma once

#include <cstdint>
#include <optional>

#include "optimizers/optimizer.h"

namespace lemmalab {

struct LocalSgdOptions {
  std::int64_t tau = 4;          // >= 1: steps between averagings; onebit-adam-icml App. 10
  std::optional<double> beta;    // local-sgdm: the momentum, in [0, 1) (default 0.9, ibid.);
                                 // absent: local SGD without momentum
  bool average_momentum = true;  // local-sgdm: average m^(i) at synchronisations too
};

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeLocalSgd(const LocalSgdOptions& options,
                                                      const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LocalSgdFromOptions(OptionTable& options,
                                                             const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LocalSgdmFromOptions(OptionTable& options,
                                                              const OptimizerContext& context);

}  // namespace lemmalab
