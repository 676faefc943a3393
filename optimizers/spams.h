// SPAMS (spams.txt): error-feedback compression of the gradient with an AMSGrad server.
//
// dist-spams, Algorithm 2 (lines 1-17): worker i sends g~ = C(g + e) and keeps
//   e <- e + g - g~ (lines 7-9); the server averages g_bar = (1/n) sum g~ (line 12) and runs
//   AMSGrad: m = beta1 m + (1 - beta1) g_bar, v = beta2 v + (1 - beta2) g_bar^2,
//   v_hat = max(v, v_hat), theta <- theta - eta_t m / sqrt(v_hat + eps) (lines 13-16).
//   Only the server holds m, v and v_hat; it sends back the step direction
//   m / sqrt(v_hat + eps) in full precision (d values, what the new theta of line 5 costs).
// spams, Algorithm 3 (lines 1-11), the single-machine form: the compression with error feedback
//   acts on the one gradient g_t. With n workers lemmalab takes g_t to be the averaged
//   full-precision gradient (workers send g, the server compresses the mean with its own error
//   feedback, then the same AMSGrad step), so with n = 1 it is Algorithm 3 exactly and equals
//   dist-spams.
//
// docs/conventions.md §6: Algorithms 2 and 3 govern (zero initial m, v, v_hat; eps inside the
// root), not the AMSGrad box of Algorithm 1 (v_0 = eps). The compressor defaults to Block-Sign
// over the problem's layers (Definition 2), which needs no size parameter; Top-k is
// `compressor = { name = "top-k", fraction = 0.01 }`.
#pragma once

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

struct SpamsOptions {
  // Adam's customary values: spams.txt leaves beta1, beta2 and eps unspecified.
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double eps = 1e-8;     // > 0; inside the root, line 16 (Alg. 3 line 10)
};

// dist-SPAMS's exchange: the workers' Block-Sign with classic error feedback; the server does not
// re-compress (it runs AMSGrad on the mean, spams.txt Alg. 2), so it has no server_* options.
inline constexpr ExchangeDefaults kDistSpamsDefaults = {
    .compressor = "block-sign", .worker_feedback = FeedbackKind::kClassic, .server_options = false};

// The options of spams and dist-spams from their table, with the defaults above (theory/ reads a
// run's options through it too).
SpamsOptions ReadSpamsOptions(OptionTable& options);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DistSpamsFromOptions(OptionTable& options,
                                                              const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SpamsFromOptions(OptionTable& options,
                                                          const OptimizerContext& context);

}  // namespace lemmalab
