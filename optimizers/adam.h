// The Adam family on the averaged gradient, as data-parallel Adam runs: every replica keeps the
// same m and v. Adam (Kingma & Ba, ICLR 2015, Algorithm 1), AMSGrad (Reddi, Kale & Kumar, ICLR
// 2018, Algorithm 2) and the Adam step of AdamW (Loshchilov & Hutter, ICLR 2019; the decoupled
// weight decay is added to every optimizer by MakeOptimizer), in the arithmetic of PyTorch's
// torch.optim.Adam documentation and implementation:
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2,
//   c1 = 1 - beta1^t, c2 = 1 - beta2^t       (both 1 when bias_correction is off)
//   v_max <- max(v_max, v)                    (AMSGrad; the max is over the raw v; Adam: v_max = v)
//   x <- x - (alpha_t / c1) m / (sqrt(v_max) / sqrt(c2) + eps)    eps_placement "outside"
//   x <- x - (alpha_t / c1) m / sqrt(v_max / c2 + eps)             eps_placement "inside"
// "outside" is PyTorch's; "inside" is onebit-adam.txt Eq. 1's sqrt(v + eta) (docs/conventions.md
// §2). Bias correction off gives onebit-adam Eq. 1 and Alg. 1's warmup Adam.
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

// Where the constant of an Adam-type denominator goes: m / (sqrt(v) + eps) or m / sqrt(v + eps).
enum class EpsPlacement { kOutside, kInside };

// Reads option `eps_placement` ("outside" | "inside").
EpsPlacement EpsPlacementFromOptions(OptionTable& options, EpsPlacement fallback);

struct AdamOptions {
  double beta1 = 0.9;           // in [0, 1); Kingma & Ba Sec. 2 (and PyTorch)
  double beta2 = 0.999;         // in [0, 1); Kingma & Ba Sec. 2 (and PyTorch)
  double eps = 1e-8;            // > 0; Kingma & Ba Sec. 2 (and PyTorch)
  bool bias_correction = true;  // Kingma & Ba Algorithm 1
  EpsPlacement eps_placement = EpsPlacement::kOutside;  // PyTorch's
  bool amsgrad = false;  // not an option: the `amsgrad` registry entry sets it
};

// The update of x from m and v above (v: AMSGrad's v_max where it applies), with alpha_t =
// ctx.lr and t = ctx.t, in PyTorch's arithmetic; shared by adam, amsgrad and adam-1bit-naive.
// options.amsgrad plays no part here.
template <typename T>
void AdamUpdate(const AdamOptions& options, const StepContext& ctx, const Vector<T>& m,
                const Vector<T>& v, VectorRef<T> x);

// Reads beta1, beta2, eps, bias_correction and eps_placement, with `defaults` as defaults.
AdamOptions ReadAdamOptions(OptionTable& options, const AdamOptions& defaults);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions& options,
                                                  const OptimizerContext& context);

// `adam` and `adamw` (the same step; MakeOptimizer adds adamw's decoupled weight decay).
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable& options,
                                                         const OptimizerContext& context);

// `amsgrad`: Adam's options, with the max rule on.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AmsgradFromOptions(OptionTable& options,
                                                            const OptimizerContext& context);

}  // namespace lemmalab
