// Weight decay for any optimizer, in the two forms the literature uses:
//   decoupled (Loshchilov & Hutter, ICLR 2019, AdamW): every replica shrinks x <- (1 - alpha_t
//     lambda) x before applying the algorithm's update, as PyTorch's AdamW does;
//   l2: each worker adds lambda x to its stochastic gradient before its worker phase, i.e. the
//     objective gains (lambda/2)||x||^2 (PyTorch's `weight_decay` of SGD and Adam).
// With l2 the decay goes through the algorithm (and its compressor); decoupled never touches
// the wire. For algorithms whose replicas drift (local SGD), decoupled decay acts on the
// synchronised parameters at Apply; l2 on each worker's own replica.
#pragma once

#include <memory>

#include "optimizers/optimizer.h"

namespace lemmalab {

enum class WeightDecayMode { kDecoupled, kL2 };

struct WeightDecay {
  double lambda = 0;  // >= 0; 0 turns weight decay off
  WeightDecayMode mode = WeightDecayMode::kDecoupled;
};

// Reads `weight_decay` (default `fallback`) and `weight_decay_mode` ("decoupled" or "l2").
WeightDecay WeightDecayFromOptions(OptionTable& options, double fallback);

// `inner` with weight decay; `inner` itself when lambda = 0.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> WithWeightDecay(
    std::unique_ptr<DistributedOptimizer<T>> inner, const WeightDecay& decay,
    const OptimizerContext& context);

}  // namespace lemmalab
