// Adam (Kingma & Ba, ICLR 2015, Algorithm 1) on the averaged gradient, as data-parallel Adam
// runs: every replica keeps the same m and v.
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2,
//   x <- x - alpha_t m_hat / (sqrt(v_hat) + eps),
// with m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t) when bias_correction is on (the
// default), and m_hat = m, v_hat = v when off (onebit-adam Eq. 1 and Alg. 1 omit it).
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

struct AdamOptions {
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double eps = 1e-8;     // > 0, added outside the square root
  bool bias_correction = true;
};

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions& options,
                                                  const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable& options,
                                                         const OptimizerContext& context);

}  // namespace lemmalab
