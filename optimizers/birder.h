// Birder (Peng et al., NeurIPS 2023; birder.txt Algorithm 1), in the parameter-server form of
// the paper's analysis.
//
//   worker i:  m = beta m + (1 - beta) g                          (line 5)
//              b_hat = beta b_hat + (1 - beta) |g|                (line 6)
//              b = max(b_prev, b_hat) if t > T0 else b_hat        (line 7)
//              u = Q(m / (b + eps) + e),  e <- e + m / (b + eps) - u   (lines 8-9)
//   server:    u_bar = Q(mean_i u^(i) + e_bar),  e_bar <- e_bar + mean_i u^(i) - u_bar
//                                                                 (lines 12-13)
//   replicas:  x <- x - alpha_t u_bar                             (line 16)
//
// One beta for m and b and no bias correction (Eq. 4). The constant eps is footnote 5's "small
// constant added to b_t": added in the denominator (docs/conventions.md §7), it keeps
// |m / (b + eps)| <= 1 and makes the denominator >= eps = rho of Theorem 1. Q is the
// `compressor` option (default Birder's stochastic binary quantizer, compressors/
// stochastic_binary.h); the same compressor configuration serves workers and server.
#pragma once

#include <optional>

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

struct BirderOptions {
  double beta = 0.95;  // in [0, 1); 0.95 in the paper's ResNet and ViT runs, 0.9 for BERT
  double eps = 1e-8;   // >= 0; the constant added to b (footnote 5). 0 is Eq. 4 exactly, which is
                       // 0/0 where b_j = 0: the run then stops, reported as diverged
  std::optional<std::int64_t> t0;  // line 7's T0; absent: b = b_hat at every step (the paper
                                   // notes the max rule is not used in practice, footnote 5)
};

// Birder's exchange: Birder's Q with classic error feedback on both sides, the server
// re-compressing the mean (birder.txt Alg. 1 lines 9-14). The batched form reads it too.
inline constexpr ExchangeDefaults kBirderDefaults = {.compressor = "stochastic-binary",
                                                     .worker_feedback = FeedbackKind::kClassic,
                                                     .server_recompresses = true,
                                                     .server_feedback = FeedbackKind::kClassic};

// beta and eps from a [[optimizer]] table of birder or softsign-sgd, with the defaults above, and
// with `read_t0` (birder's: softsign-sgd has no max rule) t0. The probes and assertions of
// theory/ read a run's options through it too (theory/optimizer_options.h).
BirderOptions ReadBirderOptions(OptionTable& options, bool read_t0);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeBirder(const BirderOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> BirderFromOptions(OptionTable& options,
                                                           const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SoftSignSgdFromOptions(OptionTable& options,
                                                                const OptimizerContext& context);

}  // namespace lemmalab
