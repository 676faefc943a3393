// 1-bit Adam (Tang et al., ICML 2021; onebit-adam.txt Algorithm 1 lines 1-15 and Sec. 4.3, the
// ICML version's Algorithm 1) and the two variants its Sec. 7.2 compares it with. Line numbers
// in the .cc refer to onebit-adam.txt Algorithm 1.
//
// onebit-adam, for steps t = 1..T_w (line 2, Eq. 1 without bias correction): Adam on the
// averaged gradient, the gradients sent in full precision; at the end of step T_w, v is frozen
// (v_Tw). Steps t > T_w (lines 3-14, docs/conventions.md §3: step T_w is not repeated):
//   worker i:  m^(i) = beta1 m_prev + (1 - beta1) g^(i)                        (line 6)
//              sends C(m^(i) + delta^(i)), delta^(i) <- m^(i) + delta^(i) - C(...) (lines 7-8)
//   server:    m_bar = C(mean_i C(...) + delta_bar), delta_bar <- ... - m_bar   (line 10,
//              the error from the messages received: docs/conventions.md §4)
//   replicas:  m = m_bar,  x <- x - alpha_t m / (sqrt(v_Tw) + eta)             (line 13)
// m_prev is the last synchronised m (local_momentum "sync": line 6 has no worker index on
// m_{t-1}, and line 13 sets m = m_bar; DeepSpeed does this) or the worker's own m^(i), started
// from the synchronised m at the end of warmup ("own"); docs/conventions.md §1. eta goes outside
// the root by default, inside with eps_placement "inside" (§2). C is the `compressor`
// option, scaled sign by default (Sec. 4.3; one scale per vector, §5); the server
// re-compresses with the same configuration unless `server_compressor` says otherwise.
//
// onebit-adam-fp32 ("1-bit Adam (32-bits)", Sec. 7.2): the same schedule, but after warmup the
// workers send their gradient in full precision, and the replicas update
// m = beta1 m + (1 - beta1) mean_i g^(i), x <- x - alpha_t m / (sqrt(v_Tw) + eta). Written out
// on its own, so that onebit-adam's reduction to it with the identity compressor tests
// onebit-adam's exchange rather than a shared code path.
//
// adam-1bit-naive ("Adam (1-bit naive)", Sec. 3.2 and 7.2; Sec. 4.2 explains why it fails): the
// gradient goes through the error-compensated compression (the same exchange as onebit-adam),
// and the replicas run Adam, m and v both, on the decoded gradient. No warmup, no frozen v.
#pragma once

#include <cstdint>

#include "optimizers/adam.h"
#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// 1-bit Adam's exchange: scaled sign with classic error feedback on both sides, the server
// re-compressing the mean (onebit-adam.txt Alg. 1 lines 7 and 10). adam-1bit-naive sends through
// it, and 0/1 Adam synchronises u through it (optimizers/zero_one_adam.h).
inline constexpr ExchangeDefaults kOneBitAdamDefaults = {.compressor = "scaled-sign",
                                                         .worker_feedback = FeedbackKind::kClassic,
                                                         .server_recompresses = true,
                                                         .server_feedback = FeedbackKind::kClassic};

struct OneBitAdamOptions {
  double beta1 = 0.9;    // in [0, 1); onebit-adam.txt Sec. 7.1 (BERT)
  double beta2 = 0.999;  // in [0, 1); Sec. 7.1
  double eps = 1e-8;     // eta of Eq. 1, > 0; the box has none, PyTorch's and DeepSpeed's 1e-8
  EpsPlacement eps_placement = EpsPlacement::kOutside;  // docs/conventions.md §2
  // T_w >= 0, in steps. The paper chooses it per task (15-25% of training, Sec. 7.1, Table 2;
  // 13 of 200 epochs in Sec. 7.2); 100 is lemmalab's default for short synthetic runs, and a
  // run of T steps should set it. 0 starts compressing at once with v = 0 (diverges:
  // docs/conventions.md §3).
  std::int64_t warmup_steps = 100;
  LocalMomentum local_momentum = LocalMomentum::kSync;  // docs/conventions.md §1
};

// The options of onebit-adam (and, without local_momentum, onebit-adam-fp32) from their table, with
// the defaults above (theory/ reads the run's hyperparameters through it).
OneBitAdamOptions ReadOneBitAdamOptions(OptionTable& options, bool read_local_momentum);

// `warmup` encodes the warmup's gradients (option `warmup_compressor`): empty means the identity
// (the run's precision); "fp16" gives the fp16 warmup of onebit-adam.txt Sec. 6's volume count.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdam(const OneBitAdamOptions& options,
                                                        const ExchangeConfig<T>& exchange,
                                                        const OptimizerContext& context,
                                                        CompressorMaker<T> warmup = {});

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFromOptions(OptionTable& options,
                                                               const OptimizerContext& context);

// local_momentum plays no part (there are no local momenta).
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdamFp32(const OneBitAdamOptions& options,
                                                            const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFp32FromOptions(OptionTable& options,
                                                                   const OptimizerContext& context);

// The options of adam-1bit-naive from its table: Adam's (ReadAdamOptions), with bias_correction
// defaulting to false, as the paper's Adam (Eq. 1).
AdamOptions ReadAdamOneBitNaiveOptions(OptionTable& options);

// Adam's options; bias_correction defaults to false there, as the paper's Adam (Eq. 1).
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdamOneBitNaive(const AdamOptions& options,
                                                             const ExchangeConfig<T>& exchange,
                                                             const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamOneBitNaiveFromOptions(
    OptionTable& options, const OptimizerContext& context);

}  // namespace lemmalab
