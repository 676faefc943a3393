// The probes of 1-bit Adam's and 1-bit LAMB's analyses:
//   onebit-error     ||delta_t^(i)|| per worker and ||delta_bar_t|| at the server
//                    (onebit-adam-icml-with-appendix.txt Assumption 1.3: both bounded by a
//                    constant for all t); recorded at every step, so the warmup's (zero, no
//                    feedback) values are there too and the assertion picks the compression phase
//   variance-norm    ||v_t||_1 and ||v_t||_2 of the second-moment estimate per step
//                    (onebit-adam-icml-with-appendix.txt Sec. 3.3 and Fig. 2, and the l1 ratio of
//                    Sec. 7.1 used to choose T_w); after 1-bit Adam's warmup v is frozen, so the
//                    series is flat there
//   lamb-ratios      r_t^(l) and c_t^(l) per layer (onebit-lamb.txt Alg. 1 lines 17-20, Fig. 6;
//                    c_t^(l) of Eq. (1) during warmup and for LAMB), and in 1-bit LAMB's
//                    compression phase `target`, line 17's ratio of frozen to fresh variance
//                    before the clips (what r follows: the layer's variance drift); and at every
//                    step how far each rule of Alg. 1 is broken (the `*_excess` series: 0 when
//                    it holds, else the relative slack that would be needed), so that a check
//                    of rules between consecutive steps sees every step
// Series (probe/series, worker):
//   onebit-error/worker_norm (i), onebit-error/server_norm (kServer),
//   variance-norm/l1 and variance-norm/l2 (kServer),
//   lamb-ratios/r, lamb-ratios/c, lamb-ratios/target and the excesses c_clip_excess,
//   r_clip_excess, r_step_excess, c_product_excess: the `worker` field holds the LAYER index l
//   (0-based, in the problem's layer order), not a worker: these are replica-wide per-layer
//   scalars.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "theory/probe.h"

namespace lemmalab {

// onebit-lamb.txt Algorithm 1's rules on a layer's scaling c_t and ratio r_t, step by step, from
// the run's options as lamb's and onebit-lamb's readers read them (warmup_steps, c_min, c_max,
// r_min, r_max, r_threshold, beta3, zero_norm; theory/optimizer_options.h): at each step, how far
// each rule that applies is broken, relative to the bound it passes (0 where it holds), handed to
// `excess` as (series, value):
//   t <= T_w (every step for LAMB)  c_clip_excess     c in [c_min, c_max] (Eq. 1)
//   t > T_w                          r_clip_excess     r in [r_min, r_max] (line 19)
//                                    r_step_excess     r within r_threshold of r_{t-1} (line 18;
//                                                      only where r_{t-1} is in [r_min, r_max])
//                                    c_product_excess  c = r c_avg (line 20), c_avg the
//                                                      beta3-average from 0 of the warmup's c
// The steps of each layer (of those SetLayers sized) must come in order, every one of them.
class LambRules {
 public:
  explicit LambRules(const Hyperparameters& options);
  // Sizes the per-layer state: before the first step, once the layers are known.
  void SetLayers(std::size_t layers);
  // Whether step t is in 1-bit LAMB's compression phase (t > T_w), where r and line 17's target
  // exist; never for LAMB.
  bool Compressing(std::int64_t t) const { return warmup_ && t > *warmup_; }
  void Step(std::int64_t t, std::size_t layer, double c, std::optional<double> r,
            const std::function<void(std::string_view, double)>& excess);
  void Persist(StateArchive& archive);

 private:
  std::optional<std::int64_t> warmup_;  // T_w; none for LAMB
  double c_min_, c_max_, r_min_, r_max_, r_threshold_, beta3_;
  bool zero_norm_one_;
  std::vector<double> r_previous_;  // r_{t-1} per layer
  std::vector<double> c_avg_;       // the beta3-average of the warmup's c (lines 1-3)
};

template <typename T>
std::unique_ptr<Probe<T>> MakeOneBitErrorProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeVarianceNormProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeLambRatiosProbe(const ProbeContext& context);

}  // namespace lemmalab
