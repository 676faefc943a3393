// DIANA (Mishchenko, Gorbunov, Takac, Richtarik, "Distributed Learning with Compressed Gradient
// Differences", 2019, Algorithm 1) without the prox step and with momentum beta = 0: every worker
// keeps a shift h_i and sends the compressed difference between its gradient and the shift.
//
//   worker i:  Delta_i = g_i - h_i,  Delta_hat_i = C(Delta_i),  h_i <- h_i + a Delta_hat_i
//   server:    Delta_hat = (1/n) sum_i Delta_hat_i, sent back in full precision
//   replicas:  g_hat = h + Delta_hat,  h <- h + a Delta_hat,  x <- x - gamma g_hat
// with h = (1/n) sum_i h_i kept by every replica (the paper's master keeps h^k and forms
// g_hat^k = h^k + Delta_hat^k, then h^{k+1} = h^k + alpha Delta_hat^k; with beta = 0 its v^k is
// g_hat^k and x^{k+1} = x^k - gamma v^k without the prox). h_i^0 = 0. Lemmalab's step t consumes
// the gradients at the paper's x^k, k = t - 1 (docs/ef21-diana-marina.md). The worker learns
// Delta_hat_i by decoding its own message (CompressedExchange::DecodeOwn).
//
// Options:
//   a           the paper's alpha, in (0, 1]; default 1 / (omega + 1) with omega the compressor's
//               declared constant (E||C(x) - x||^2 <= omega ||x||^2, compressors/compressor.h),
//               the largest value the analysis takes. A compressor that declares no omega has no
//               default: `a` must then be given. Larger values than 1/(omega + 1) run (the
//               diana-nonconvex check flags them).
//   compressor  must be unbiased (E C(x) = x: the class U(omega) the analysis assumes); a biased
//               one is refused. Default random-k, fraction = 0.1, scaled by d/k (omega = d/k - 1):
//               lemmalab's choice, the same as marina's default so the two compare on one
//               compressor. The paper's experiments quantize instead (its p-norm dithering with
//               p = infinity is terngrad on one block); the fraction of its runs was not verified.
//
// Source: the update rule as docs/ef21-diana-marina.md §3 states it (the paper's Algorithm 1
// without prox or momentum); the algorithm box itself (its line numbers) was not reachable here
// and is not quoted.
//
// Layouts: flat chunked schemes run (per-coordinate state; each worker decodes its own whole
// message); hierarchical ones do not (the node compresses, so no worker knows its Delta_hat_i).
// Probes: Observe(kShift, i) is h_i after the step, (kShift, kServer) the replicas' h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

struct DianaOptions {
  double a = 1;  // alpha of Algorithm 1; DianaFromOptions defaults it to 1 / (omega + 1)
};

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDiana(const DianaOptions& options,
                                                   const ExchangeConfig<T>& exchange,
                                                   const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DianaFromOptions(OptionTable& options,
                                                          const OptimizerContext& context);

// For the methods whose analysis needs C in U(omega) (diana, marina): the compressor's name and
// the largest omega its instances for the workers of `context` declare (nullopt when one declares
// none), after refusing a biased compressor with an error on option `compressor` that names
// `method` and the rule.
struct UnbiasedCompressor {
  std::string name;
  std::optional<double> omega;
};
template <typename T>
UnbiasedCompressor RequireUnbiased(OptionTable& options, const CompressorMaker<T>& maker,
                                   const OptimizerContext& context, std::string_view method);

// Reads `key` in (0, 1] with default 1 / (omega + 1) of `compressor`; when it declares no omega
// the key must be given (an error naming the key, the compressor, `method` and `role`, what the
// key is). `rule` describes the default for the listing.
double DefaultFromOmega(OptionTable& options, std::string_view key,
                        const UnbiasedCompressor& compressor, std::string_view method,
                        std::string_view role, std::string_view rule);

// The options of diana from its table: `a`, by DefaultFromOmega with `compressor`, the workers'
// (RequireUnbiased). theory/ reads a run's recorded `a` through it, with a compressor that
// declares no omega: there is no default to fill in (theory/optimizer_options.h).
DianaOptions ReadDianaOptions(OptionTable& options, const UnbiasedCompressor& compressor);

}  // namespace lemmalab
