// EF21 and EF21-SGDM: every worker keeps an estimate g_i of its gradient (or momentum) and sends
// the compressed correction C(y_i - g_i); every replica keeps g = (1/n) sum_i g_i. Unlike classic
// error feedback (optimizers/ef_sgd.h) nothing is added back into the next message: g_i itself is
// the feedback, so there is no worker_feedback option. What could be checked against the sources,
// and the authors' experiment code behind the defaults: docs/optimizers.md#ef21-ef21-sgdm.
//
// Step mapping: lemmalab's step t = 1, 2, ... hands worker i the gradient at the current x, the
// paper's x^k with k = t - 1 (docs/ef21-diana-marina.md, "Notation"); the step's update makes
// x^{k+1}.
//
//   ef21  (Richtarik, Sokolov, Fatkhullin, "EF21: A New, Simpler, Theoretically Better, and
//         Practically Faster Error Feedback", NeurIPS 2021, Algorithm 1):
//           worker i:  c_i = C(grad f_i(x^k) - g_i),  g_i <- g_i + c_i    (g_i^k to g_i^{k+1})
//           server:    (1/n) sum_i c_i, sent back in full precision
//           replicas:  g <- g + (1/n) sum_i c_i,  x <- x - gamma g
//         The worker learns c_i by decoding its own message (with the instance that encoded it,
//         CompressedExchange::DecodeOwn), so g_i is exactly what the server added to g (up to the
//         order of the additions). Start (option `init`):
//           "compressed" (default): g_i = 0 before step 1, so step 1 sends C(grad f_i(x^0)) and
//                        g_i^0 = C(grad f_i(x^0)), the initialisation of docs/ef21-diana-marina.md
//                        §1; then x^1 = x^0 - gamma g^0.
//           "full":      step 1 sends grad f_i(x^0) itself in full precision (raw T, whose bytes
//                        count: optimizers/full_precision_wire.h), so g_i^0 = grad f_i(x^0) and
//                        G^0 = 0, as the authors' experiment code starts.
//         Default compressor: top-k with k = 1 (the authors' logistic-regression setting). Any
//         compressor runs; EF21's theory assumes C in C(alpha) (compressors/compressor.h
//         alpha()), which biased compressors such as top-k declare; unbiased ones with
//         omega >= 1 (scaled random-k with d/k >= 2) are not contractive.
//   ef21-sgdm  (Fatkhullin, Tyurin, Richtarik, "Momentum Provably Improves Error Feedback!",
//         NeurIPS 2023, Algorithm 1 "EF21-SGDM"): EF21 run on each worker's momentum
//           v_i <- (1 - eta) v_i + eta g_i(stochastic),  c_i = C(v_i - g_i),  g_i <- g_i + c_i
//         with v_i^0 = the first stochastic gradient (step 1 sets v_i = g_i(stochastic)) and
//         g_i^0 = v_i^0 sent uncompressed (`init` = "full", ef21-sgdm's default) or C(v_i^0)
//         ("compressed"); replicas as ef21. With eta = 1, v_i is the gradient and ef21-sgdm is
//         ef21 (the same `init`), operation for operation. Option `eta` in (0, 1]; default 0.1.
//         The default init and eta are lemmalab's reading and choice, not quoted from the paper.
//
// Layouts: flat chunked schemes run (each worker compresses its whole vector and decodes its own
// whole message; the chunk servers average their parts; g is per coordinate). Hierarchical ones do
// not: there a node compresses the mean of its workers' vectors, so no worker could know the c_i
// that its g_i must add.
//
// Probes: Observe(kShift, i) is g_i after the step, (kShift, kServer) the replicas' g;
// ef21-sgdm's Observe(kMomentum, i) is v_i. Compression records are those of the exchange; on
// init = "full"'s first step nothing is compressed and LastCompression is nullptr.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

enum class Ef21Init {
  kCompressed,  // g_i^0 = C(grad f_i(x^0)): g_i starts at 0
  kFull,        // g_i^0 = grad f_i(x^0), sent in full precision at step 1
};

struct Ef21Options {
  Ef21Init init = Ef21Init::kCompressed;
  // EF21-SGDM's momentum parameter eta in (0, 1]; nullopt: plain EF21 (no momentum state).
  std::optional<double> eta;
};

// The options of ef21 from its table (`init`, default "compressed") or, with `momentum`, of
// ef21-sgdm (`eta`, default 0.1, and `init`, default "full"). theory/ reads a run's options
// through it too (theory/optimizer_options.h).
Ef21Options ReadEf21Options(OptionTable& options, bool momentum);

// The exchange of the methods whose workers send compressed corrections to an estimate they keep
// (ef21, ef21-sgdm, diana, marina): the `compressor` option only (defaulting to `fallback`, a
// component table's entries beside its name), no error feedback (the kept estimate is the
// method's feedback) and the mean sent back as is. The options of classic error feedback and of a
// re-compressing server (worker_feedback, server_compressor, server_feedback) are refused with a
// message naming the method.
struct DefaultCompressor {
  std::string_view name;
  std::vector<std::pair<std::string, OptionValue>> options;
  std::string_view description;  // for the listing: what the default is and why
};

template <typename T>
ExchangeConfig<T> CorrectionExchangeFromOptions(OptionTable& options, std::string_view method,
                                                const DefaultCompressor& fallback);

// The exchange of ef21 or ef21-sgdm (`method`) from its table: `compressor`, default top-k with
// k = 1, the corrections sent without error feedback and averaged in full precision.
template <typename T>
ExchangeConfig<T> Ef21ExchangeFromOptions(OptionTable& options, std::string_view method);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEf21(const Ef21Options& options,
                                                  const ExchangeConfig<T>& exchange,
                                                  const OptimizerContext& context);

// ef21: `compressor` (default top-k, k = 1), `init` ("compressed" or "full"; default
// "compressed").
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Ef21FromOptions(OptionTable& options,
                                                         const OptimizerContext& context);
// ef21-sgdm: the same, with `eta` (in (0, 1]; default 0.1) and `init` defaulting to "full".
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Ef21SgdmFromOptions(OptionTable& options,
                                                             const OptimizerContext& context);

}  // namespace lemmalab
