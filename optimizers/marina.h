// MARINA (Gorbunov, Burlachenko, Li, Richtarik, "MARINA: Faster Non-Convex Distributed Learning
// with Compression", ICML 2021, Algorithm 1). Lemmalab's step t consumes the gradients at the
// paper's x^k, k = t - 1 (docs/ef21-diana-marina.md), and every worker keeps its previous
// gradient:
//   t = 1:       every worker sends g_i(x^0) in full precision; g = (1/n) sum_i g_i(x^0), the
//                paper's g^0 = grad f(x^0)
//   t > 1:       one coin c ~ Bernoulli(p), the same for every worker and replica:
//     c = 1:     every worker sends g_i(x^k) in full precision; g = (1/n) sum_i g_i(x^k)
//     c = 0:     every worker sends C_i(g_i(x^k) - g_i(x^{k-1})); g <- g + (1/n) sum_i of them
//   replicas:    x <- x - gamma g
// (the paper's loop draws c_k, broadcasts g^k, steps x^{k+1} = x^k - gamma g^k and forms g^{k+1}
// from the gradients at x^{k+1}; lemmalab's step t forms g from the gradients at x^{t-1} and steps
// with it: the same sequence). With stochastic gradients the difference is of two minibatches at
// two points: MARINA on stochastic gradients, not VR-MARINA's same-sample differences, so every
// compressed round adds both minibatches' noise (times the compressor's variance) to g until the
// next full round; the paper's guarantee (Theorem 2.1) is for full gradients.
//
// Both kinds of message are real: the full rounds send raw T (optimizers/full_precision_wire.h),
// the compressed ones the compressor's bytes; traffic counts either. The message carries no kind:
// the server and every replica draw the step's coin themselves (MarinaFullRound), so no header
// byte is sent. The coin is word 0 of Philox stream (seed, kSharedCompression, kMarinaCoinStream,
// t): c = 1 iff word < p 2^32 (probability ceil(p 2^32) / 2^32, within 2^-32 of p; p = 1 is
// always full). It is keyed apart from kGlobalStream, the shared stream PermK draws its
// permutation from, so that a compressed round's permutation does not depend on its coin (an
// unbiased C_i must stay unbiased given c = 0).
//
// Options:
//   p           the probability of a full round, in (0, 1]; default 1 / (omega + 1) with omega
//               the compressor's declared constant. The paper's experiments take p = zeta_Q / d
//               with zeta_Q the expected number of nonzeros of Q; the compressor interface
//               declares omega, not zeta_Q, and for the default random-k (scaled, k of d)
//               omega = d/k - 1 so 1 / (omega + 1) = k/d = zeta_Q / d exactly. A compressor that
//               declares no omega has no default: give p.
//   compressor  must be unbiased (Assumption 1.3, C_i in U(omega)); a biased one is refused.
//               Default random-k, fraction = 0.1, scaled by d/k (RandK, the compressor of the
//               paper's experiments; the paper's K was not verified here).
//
// Source: the algorithm as docs/ef21-diana-marina.md §2 states it (the paper's Algorithm 1); the
// algorithm box itself was not reachable here and is not quoted.
//
// Layouts: flat chunked schemes run (every phase is per coordinate, and a round's messages are
// all of one kind); hierarchical ones do not (the node would compress the node's mean). Probes:
// LastEncode is the round's kind's (raw or compressed); LastCompression is nullptr after a full
// round, which compresses nothing. MARINA keeps no per-worker estimate, so no kShift.
#pragma once

#include <cstdint>
#include <memory>

#include "optimizers/compressed_exchange.h"
#include "optimizers/diana.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// Worker field of the coin's stream (see above).
inline constexpr std::uint32_t kMarinaCoinStream = kGlobalStream - 1;

struct MarinaOptions {
  double p = 1;  // MarinaFromOptions defaults it to 1 / (omega + 1)
};

// The options of marina from its table: `p`, by DefaultFromOmega (optimizers/diana.h) with
// `compressor`, the workers' (RequireUnbiased). theory/ reads a run's recorded `p` through it,
// with a compressor that declares no omega: there is no default to fill in
// (theory/optimizer_options.h).
MarinaOptions ReadMarinaOptions(OptionTable& options, const UnbiasedCompressor& compressor);

// Whether step ctx.t is a full round: t = 1, or the step's shared coin with P(full) = p.
bool MarinaFullRound(const StepContext& ctx, double p);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeMarina(const MarinaOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MarinaFromOptions(OptionTable& options,
                                                           const OptimizerContext& context);

}  // namespace lemmalab
