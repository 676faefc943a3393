// Distributed SGD: workers send g^(i) uncompressed, the server averages, every replica applies
// x <- x - alpha_t * mean_i g^(i). No options.
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdFromOptions(OptionTable& options,
                                                        const OptimizerContext& context);

}  // namespace lemmalab
