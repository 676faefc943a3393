// SGD and the two momentum SGDs on the averaged gradient: workers send g^(i) uncompressed, the
// server averages, and every replica applies the same rule to g = mean_i g^(i), so one copy of
// the momentum stands for all replicas (AveragedGradientOptimizer).
//
//   sgd         x <- x - alpha_t g                                         (Robbins & Monro 1951)
//   sgdm        m <- beta m + (1 - beta) g,  x <- x - alpha_t m
//               the papers' momentum SGD (onebit-adam-icml-with-appendix.txt App. 10, item 2),
//               m_0 = 0
//   sgdm-torch  PyTorch's torch.optim.SGD with momentum:
//               buf <- g at the first step, else buf <- mu buf + (1 - dampening) g;
//               d = g + mu buf if nesterov, else buf;  x <- x - alpha_t d
//               (mu = 0: d = g, as PyTorch skips the buffer)
//
// sgdm and sgdm-torch are different algorithms (docs/conventions.md §9): with dampening 0 the
// torch buffer is 1/(1 - beta) times larger in steady state, and its first step is a full
// alpha g where sgdm's is (1 - beta) alpha g, so no rescaling of alpha maps one onto the other.
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

struct SgdmOptions {
  double beta = 0.9;  // in [0, 1); onebit-adam-icml App. 10 (birder.txt App. B's SGDM runs too)
};

struct SgdmTorchOptions {
  double momentum = 0.9;   // mu, in [0, 1); PyTorch's default is 0, 0.9 is the usual setting
  double dampening = 0.0;  // in [0, 1]; PyTorch's default
  bool nesterov = false;   // PyTorch's default; needs momentum > 0 and dampening = 0
};

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdFromOptions(OptionTable& options,
                                                        const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSgdm(const SgdmOptions& options,
                                                  const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdmFromOptions(OptionTable& options,
                                                         const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSgdmTorch(const SgdmTorchOptions& options,
                                                       const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdmTorchFromOptions(OptionTable& options,
                                                              const OptimizerContext& context);

}  // namespace lemmalab
