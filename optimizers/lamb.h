// LAMB and 1-bit LAMB (Li et al., "1-bit LAMB", onebit-lamb.txt), per layer.
//
// lamb: Eq. (1) of onebit-lamb.txt on the averaged full-precision gradient, per layer l (the
// problem's layers; a vector without layers is one layer):
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2,
//   u^(l) = m^(l) / (sqrt(v^(l)) + eta),
//   c^(l) = clip(||x_{t-1}^(l)|| / ||u^(l)||, c_min, c_max),   x^(l) -= alpha_t c^(l) u^(l).
// Eq. (1) has no bias correction and clips the whole ratio (footnote 3). You et al.'s original
// LAMB (ICLR 2020, Algorithm 2) bias-corrects m and v; that is the bias_correction option.
//
// onebit-lamb: Algorithm 1 of onebit-lamb.txt with the momentum scaling of App. A.5.2. Steps
// 1..T_w run LAMB as above on the averaged gradient (line 2) and track c_avg^(l); step T_w
// freezes v_Tw (line 3); every later step sends the momentum through a CompressedExchange
// (lines 5-13) and rescales the frozen update per layer by r^(l) c_avg^(l) (lines 14-22).
//
// Neither implements weight decay (Eq. 1 omits it, footnote 2); MakeOptimizer adds it.
#pragma once

#include <cstdint>
#include <vector>

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// What c^(l) is when ||x^(l)|| = 0 or ||u^(l)|| = 0 (docs/conventions.md §8).
enum class LambZeroNorm {
  // Eq. (1) as written: ||x|| = 0 makes the ratio 0, so c = c_min (also when ||u|| = 0 too);
  // ||u|| = 0 < ||x|| makes it +infinity, so c = c_max (u = 0: x does not move either way).
  kClip,
  // apex FusedLAMB and DeepSpeed's Lamb / OnebitLamb: c = 1, unclipped, when either norm is 0.
  kOne,
};

struct LambOptions {
  double beta1 = 0.9;    // in [0, 1); onebit-lamb.txt line 157
  double beta2 = 0.999;  // in [0, 1); line 157
  double eps = 1e-6;     // eta of Eq. (1), > 0, outside the root. The paper gives no value; 1e-6
                         // is apex FusedLAMB's default (DeepSpeed's Lamb uses 1e-8)
  double c_min = 0.01;   // >= 0; line 157 (BERT). App. A.1 and A.7 use 0.1 for batch 16K and 4K
  double c_max = 0.3;    // >= c_min; line 157 (App. A.1, A.7: 1)
  LambZeroNorm zero_norm = LambZeroNorm::kClip;
  bool bias_correction = false;  // Eq. (1): off; You et al.'s LAMB: on. lamb only
};

// The options of lamb from its table, with the defaults above; without `read_bias_correction`
// those of 1-bit LAMB's warmup LAMB, which has no bias correction (Eq. 1). theory/ reads a run's
// options through these readers too (theory/optimizer_options.h).
LambOptions ReadLambOptions(OptionTable& options, bool read_bias_correction);

// How line 17's ratio compares the frozen and the fresh variance.
enum class OneBitLambRatio {
  // Line 17 and Sec. 4: r = max_j v_Tw,j / v_fresh,j ("the max element among frozen variance /
  // fresh variance"), over the coordinates with v_fresh,j > 0.
  kVariance,
  // DeepSpeed's OnebitLamb: r = max_j (sqrt(v_Tw,j) + eta) / (sqrt(v_fresh,j) + eta), the ratio
  // of the update denominators (the square root of the paper's ratio, softened by eta).
  kDenominator,
};

struct OneBitLambOptions {
  LambOptions lamb;    // warmup LAMB (line 2); bias_correction must stay off (Eq. 1)
  double beta3 = 0.9;  // in [0, 1); c_avg's decay (line 2); line 157
  // T_w >= 0. The paper warms up for 1000 of 5993 steps (16.7%, Sec. 6) and 14-15% in App. A.7;
  // 100 suits lemmalab's short runs. T_w = 0 leaves c_avg = 0 (line 1), so x never moves.
  std::int64_t warmup_steps = 100;
  double r_min = 0.5;        // > 0 (r = 0 would stay 0 under line 18's relative clip); line 157
  double r_max = 4.0;        // >= r_min; line 157 (App. A.8's ResNet run: 2.0)
  double r_threshold = 0.1;  // in [0, 1); line 157
  // App. A.5.2: multiply layer l of every worker's momentum by k_l before compression and divide
  // the decoded mean by k_l (see lamb.cc for k_l).
  bool momentum_scaling = true;
  OneBitLambRatio ratio = OneBitLambRatio::kVariance;
  LocalMomentum local_momentum = LocalMomentum::kSync;
};

// The options of onebit-lamb from its table, with the defaults above (r_min <= r_max, c_min <=
// c_max).
OneBitLambOptions ReadOneBitLambOptions(OptionTable& options);

// 1-bit LAMB's exchange: scaled sign (one scale for the fused vector, line 1 and App. A.5.1) with
// classic worker and server feedback, the server re-compressing the mean (line 10). The batched
// form reads it too.
inline constexpr ExchangeDefaults kOneBitLambDefaults = {.compressor = "scaled-sign",
                                                         .worker_feedback = FeedbackKind::kClassic,
                                                         .server_recompresses = true,
                                                         .server_feedback = FeedbackKind::kClassic};

// App. A.5.2's momentum scale factors from s_l = ||m_Tw^(l)|| / sqrt(d_l), one per layer:
// k_l = s_avg / s_l with s_avg the mean of the s_l, and 1 where s_l = 0 (see lamb.cc).
std::vector<double> MomentumScaleFactors(const std::vector<double>& s);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeLamb(const LambOptions& options,
                                                  const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitLamb(const OneBitLambOptions& options,
                                                        const ExchangeConfig<T>& exchange,
                                                        const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LambFromOptions(OptionTable& options,
                                                         const OptimizerContext& context);

// Exchange options as ExchangeFromOptions with kOneBitLambDefaults.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitLambFromOptions(OptionTable& options,
                                                               const OptimizerContext& context);

}  // namespace lemmalab
