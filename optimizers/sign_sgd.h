// signSGD (Bernstein et al., ICML 2018, "signSGD: compressed optimisation for non-convex
// problems"), the uncompressed reference: every worker sends the true sign of its gradient,
// sign(0) = 0 (docs/conventions.md §5), in the run's precision
// (optimizers/full_precision_wire.h), and every replica steps by
//   aggregate = "mean":      x <- x - alpha_t (1/n) sum_i sign(g^(i))
//   aggregate = "majority":  x <- x - alpha_t sign(sum_i sign(g^(i)))   (signSGD with majority
//                            vote; a tie gives 0, so that coordinate does not move)
// The 1-bit wire (zero sent as +1) is ef-signsgd with worker_feedback = "none", or ef-sgd with
// compressor = "sign" and worker_feedback = "none"; this one keeps the three-valued sign exact so
// the 1-bit versions can be compared with it. A NaN gradient coordinate stays NaN (Eigen's sign
// would map it to 0 and hide it), so the run's non-finite check sees it.
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

enum class SignAggregate { kMean, kMajority };

struct SignSgdOptions {
  SignAggregate aggregate = SignAggregate::kMean;  // "mean" (default) or "majority"
};

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSignSgd(const SignSgdOptions& options,
                                                     const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SignSgdFromOptions(OptionTable& options,
                                                            const OptimizerContext& context);

}  // namespace lemmalab
