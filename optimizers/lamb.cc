// LAMB and 1-bit LAMB. Paper lines cite onebit-lamb.txt: Eq. (1) for LAMB, Algorithm 1 for
// 1-bit LAMB ("line N" is the box's line), Sec. 4 and App. A.5 for what the box leaves out.
#include "optimizers/lamb.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compressors/one_bit.h"
#include "core/error.h"
#include "optimizers/averaged_gradient.h"
#include "optimizers/lamb_element.h"

namespace lemmalab {
namespace {

using LayerRanges = std::vector<std::pair<std::int64_t, std::int64_t>>;

// ||v^(l)|| over [begin, end), in double, summed in the fixed order of
// compressors/one_bit_element.h: the order the batched (GPU) LAMB sums in too, so both take the
// same c^(l) and k_l.
template <typename T>
double LayerNorm(const T* v, std::int64_t begin, std::int64_t end) {
  return std::sqrt(one_bit::SumSquares<T>({v, nullptr, T(1)}, begin, end));
}

// The trace's names (optimizers/trace.h) for onebit-lamb.txt Algorithm 1 and LAMB's Eq. (1).
constexpr StateTag kWorkerMomentum = {
    {"m", "onebit-lamb.txt Alg. 1 line 5", "m_t^(i) = beta1 m_{t-1}^(i) + (1 - beta1) g_t^(i)"},
    Quantity::kMomentum};
constexpr TraceSymbol kScaledMomentum = {"k m", "onebit-lamb.txt App. A.5.2",
                                         "k_l m_t^(i) per layer l: what is compressed"};
// LAMB's state (LambState), which every replica holds alike.
constexpr StateTag kLambMomentum = {
    {"m", "onebit-lamb.txt Eq. (1)", "m_t = beta1 m_{t-1} + (1 - beta1) g_t"}, Quantity::kMomentum};
constexpr StateTag kLambVariance = {
    {"v", "onebit-lamb.txt Eq. (1)", "v_t = beta2 v_{t-1} + (1 - beta2) g_t^2"},
    Quantity::kVariance};
constexpr StateTag kLambScale = {{"c^(l)", "onebit-lamb.txt Eq. (1)",
                                  "c_t^(l) = clip(||x^(l)|| / ||u^(l)||, c_min, c_max), per layer"},
                                 Quantity::kLayerScale};
constexpr TraceSymbol kAverageScale = {
    "c_avg^(l)", "onebit-lamb.txt Alg. 1 line 2",
    "c_avg^(l) = beta3 c_avg^(l) + (1 - beta3) c_t^(l), per layer"};
constexpr TraceSymbol kGradient = {"g", "onebit-lamb.txt Alg. 1 line 15",
                                   "g_t = (m_t - beta1 m_{t-1}) / (1 - beta1): reconstructed"};
constexpr TraceSymbol kVariance = {"v", "onebit-lamb.txt Alg. 1 line 16",
                                   "v_t = beta2 v_{t-1} + (1 - beta2) g_t^2: the fresh variance"};
// Zero until the end of step T_w.
constexpr StateTag kFrozenVariance = {
    {"v_Tw", "onebit-lamb.txt Alg. 1 line 3", "the variance stored at the end of warmup"},
    Quantity::kFrozenVariance};
constexpr StateTag kRatio = {
    {"r^(l)", "onebit-lamb.txt Alg. 1 lines 17-19",
     "r_t^(l): ||v_Tw / v_t||_-1 clipped to r_{t-1} (1 +- r_threshold) and [r_min, r_max], per "
     "layer"},
    Quantity::kLayerRatio};
constexpr StateTag kRatioTarget = {{"r_target^(l)", "onebit-lamb.txt Alg. 1 line 17",
                                    "||v_Tw / v_t||_-1 per layer, before the clips of lines 18-19"},
                                   Quantity::kLayerTarget};
constexpr TraceSymbol kScale = {"c^(l)", "onebit-lamb.txt Alg. 1 line 20",
                                "c_t^(l) = r_t^(l) c_avg^(l), per layer"};
constexpr TraceSymbol kMomentum = {"m", "onebit-lamb.txt Alg. 1 line 13", "m_t = m_bar_t"};
// With momentum_scaling (the default, App. A.5.2) the exchange carries k_l m per layer: its
// values are k-scaled until the replicas divide the mean by k_l into m (line 13).
const ExchangeSymbols kOneBitLambExchange = {
    .worker = {{"m+delta", "onebit-lamb.txt Alg. 1 line 6",
                "m_t^(i) + delta_{t-1}^(i) (k_l m with momentum_scaling)"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C(m+delta)", "onebit-lamb.txt Alg. 1 line 6",
                "m_hat_t^(i) = C[m_t^(i) + delta_{t-1}^(i)]: scale s times sign"},
               {"s", "onebit-lamb.txt Alg. 1 line 1", "||x|| / ||Sign(x)||, per block"},
               {"delta", "onebit-lamb.txt Alg. 1 line 7",
                "delta_t^(i) = m_t^(i) + delta_{t-1}^(i) - m_hat_t^(i)"}},
    .mean = {"mean m_hat", "onebit-lamb.txt Alg. 1 line 10", "(1/n) sum_i m_hat_t^(i)"},
    .server = {{"mean+delta_bar", "onebit-lamb.txt Alg. 1 line 10",
                "(1/n) sum_i m_hat_t^(i) + delta_bar_{t-1}"},
               {"r", "the compressor's draw rule", kServerWords},
               {"m_bar", "onebit-lamb.txt Alg. 1 line 10",
                "m_bar_t = C[mean + delta_bar_{t-1}] (k-scaled with momentum_scaling)"},
               {"s", "onebit-lamb.txt Alg. 1 line 1", "the scale of m_bar, per block"},
               {"delta_bar", "onebit-lamb.txt Alg. 1 line 10",
                "delta_bar_t = mean + delta_bar_{t-1} - m_bar_t"}},
};

// Per-layer values as doubles, for the trace.
template <typename T>
std::vector<double> PerLayer(const Vector<T>& values) {
  std::vector<double> out(static_cast<std::size_t>(values.size()));
  for (Eigen::Index l = 0; l < values.size(); ++l) out[static_cast<std::size_t>(l)] = values[l];
  return out;
}

// Eq. (1) on the replicas' state (m, v, and the last c per layer): the whole of `lamb` and the
// warmup stage of 1-bit LAMB (Alg. 1 line 2).
template <typename T>
class LambState {
 public:
  LambState(const LambOptions& options, const OptimizerContext& context)
      : options_(options),
        ranges_(context.shape().LayerRanges()),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)),
        c_(Vector<T>::Zero(static_cast<Eigen::Index>(ranges_.size()))),
        u_(context.dimension) {}

  // One step of Eq. (1) with the averaged gradient g.
  void Step(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) {
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    m_ = beta1 * m_ + (T(1) - beta1) * g;
    v_ = beta2 * v_ + (T(1) - beta2) * g.cwiseAbs2();
    double m_scale = 1.0, v_scale = 1.0;
    if (options_.bias_correction) {  // You et al.'s LAMB, not Eq. (1)
      const auto t = static_cast<double>(ctx.t);
      m_scale = 1.0 / (1.0 - std::pow(options_.beta1, t));
      v_scale = 1.0 / (1.0 - std::pow(options_.beta2, t));
    }
    u_.array() = static_cast<T>(m_scale) * m_.array() /
                 ((static_cast<T>(v_scale) * v_.array()).sqrt() + static_cast<T>(options_.eps));
    for (std::size_t l = 0; l < ranges_.size(); ++l) {
      const auto [begin, end] = ranges_[l];
      const double c = lamb::ScalingCoefficient(
          LayerNorm(x.data(), begin, end), LayerNorm(u_.data(), begin, end), options_.c_min,
          options_.c_max, options_.zero_norm == LambZeroNorm::kOne);
      c_[static_cast<Eigen::Index>(l)] = static_cast<T>(c);
      x.segment(begin, end - begin) -= static_cast<T>(ctx.lr * c) * u_.segment(begin, end - begin);
    }
  }

  void DeclareState(OptimizerState<T>& state) {
    state.Replicated(kLambMomentum, m_);
    state.Replicated(kLambVariance, v_);
    state.Replicated(kLambScale, c_);
  }

  const LayerRanges& ranges() const { return ranges_; }
  Vector<T>& m() { return m_; }
  const Vector<T>& m() const { return m_; }
  Vector<T>& v() { return v_; }
  const Vector<T>& v() const { return v_; }
  Vector<T>& c() { return c_; }
  const Vector<T>& c() const { return c_; }

 private:
  LambOptions options_;
  LayerRanges ranges_;
  Vector<T> m_, v_;
  Vector<T> c_;  // c_t^(l), one per layer
  Vector<T> u_;  // u_t of Eq. (1)
};

// LAMB on the averaged gradient: every replica holds the same state.
template <typename T>
class Lamb final : public AveragedGradientOptimizer<T> {
 public:
  Lamb(const LambOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context), state_(options, context) {}

  void DeclareState(OptimizerState<T>& state) override { state.Nested("lamb", state_); }

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g_mean, VectorRef<T> x) override {
    state_.Step(ctx, g_mean, x);
  }

 private:
  LambState<T> state_;
};

// 1-bit LAMB, Algorithm 1. Replica state (m_t, the fresh v, v_Tw, c_avg, r, c) is held once;
// workers hold their momentum m^(i) and their exchange sender.
//
// Momentum scaling (App. A.5.2, "an average momentum scale at the end of warmup ... a momentum
// scale coefficient for each layer"), in DeepSpeed's reading (OnebitLamb in
// deepspeed/runtime/fp16/onebit/lamb.py: momentum_scales, united_scale, scaling_coeff): at the
// end of step T_w, s_l = ||m_Tw^(l)|| / sqrt(d_l), s_avg = the mean of s_l over all layers, and
// k_l = s_avg / s_l. Workers send C(k m^(i) + delta^(i)) layer by layer; the replicas divide
// layer l of the decoded mean by k_l. A layer with s_l = 0 (zero momentum, or no elements) gets
// k_l = 1 where DeepSpeed would divide by zero; it still counts in s_avg, as in DeepSpeed.
template <typename T>
class OneBitLamb final : public PhasedExchangeOptimizer<T> {
 public:
  OneBitLamb(const OneBitLambOptions& options, const ExchangeConfig<T>& exchange,
             const OptimizerContext& context)
      : PhasedExchangeOptimizer<T>(exchange, context),
        options_(options),
        lamb_(options.lamb, context),
        mean_(context.dimension),
        v_frozen_(Vector<T>::Zero(context.dimension)),
        g_(context.dimension),
        layers_(static_cast<Eigen::Index>(lamb_.ranges().size())),
        c_avg_(static_cast<std::size_t>(layers_), 0.0),  // line 1
        r_(Vector<T>::Ones(layers_)),                    // line 1: r^(l) = 1
        target_(Vector<T>::Ones(layers_)),
        k_(static_cast<std::size_t>(layers_), 1.0) {
    LEMMALAB_CHECK(!options.lamb.bias_correction,
                   "1-bit LAMB runs Eq. (1), which has no bias correction");
    for (int i = 0; i < context.workers; ++i) {
      workers_.push_back(
          {Vector<T>::Zero(context.LocalDimension(i)), Vector<T>(context.LocalDimension(i))});
    }
    if (options_.warmup_steps == 0) Freeze();
    exchange_.set_symbols(kOneBitLambExchange);
  }

  StepSymbols step_symbols() const override {
    return {
        .gradient = {"g", "onebit-lamb.txt Alg. 1 line 5", "g_t^(i) = grad F_i(x_t^(i), xi_t^(i))"},
        .parameters = {"x", "onebit-lamb.txt Alg. 1 line 21",
                       "x_t^(l) = x_{t-1}^(l) - gamma c_t^(l) m_t^(l) / sqrt(v_Tw^(l)) "
                       "(the frozen v: see lamb.cc)"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    if (FullPrecisionAt(ctx)) {  // line 2: LAMB on the full-precision gradient
      full_precision_.Send(ctx, worker, g, out);
      return;
    }
    const T beta1 = static_cast<T>(options_.lamb.beta1);
    // line 5; m_{t-1} is the synchronised m of line 13 ("sync") or the worker's own ("own").
    if (options_.local_momentum == LocalMomentum::kSync) {
      w.m = beta1 * lamb_.m() + (T(1) - beta1) * g;
    } else {
      w.m = beta1 * w.m + (T(1) - beta1) * g;
    }
    const TraceScope trace = ctx.Trace(worker);
    if (trace) trace.Vector<T>(kWorkerMomentum.symbol, w.m);
    if (!options_.momentum_scaling) {
      exchange_.Send(ctx, worker, w.m, out);  // lines 6-8
      return;
    }
    const LayerRanges& ranges = lamb_.ranges();
    for (std::size_t l = 0; l < ranges.size(); ++l) {  // App. A.5.2: k_l m^(i)
      const auto [begin, end] = ranges[l];
      w.scaled.segment(begin, end - begin) =
          static_cast<T>(k_[l]) * w.m.segment(begin, end - begin);
    }
    if (trace) trace.Vector<T>(kScaledMomentum, w.scaled);
    exchange_.Send(ctx, worker, w.scaled, out);  // lines 6-8 on the scaled momentum
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    if (this->AppliesFullPrecision(ctx)) {  // the server averaged the gradients (line 2)
      full_precision_.Receive(reply, mean_);
      lamb_.Step(ctx, mean_, x);  // line 2: Eq. (1)
      const double beta3 = options_.beta3;
      for (Eigen::Index l = 0; l < layers_; ++l) {  // line 2
        const auto i = static_cast<std::size_t>(l);
        c_avg_[i] = beta3 * c_avg_[i] + (1 - beta3) * static_cast<double>(lamb_.c()[l]);
      }
      if (ctx.t == options_.warmup_steps) Freeze();  // line 3
      if (const TraceScope trace = ctx.Trace(kServer)) {
        trace.Vector<T>(kLambMomentum.symbol, lamb_.m());
        trace.Vector<T>(kLambVariance.symbol, lamb_.v());
        trace.Indexed(kLambScale.symbol, PerLayer(lamb_.c()));
        trace.Indexed(kAverageScale, c_avg_);
      }
      return;
    }

    exchange_.Receive(reply, mean_);  // m_bar_t (line 11)
    const LayerRanges& ranges = lamb_.ranges();
    if (options_.momentum_scaling) {  // App. A.5.2: undo k_l on the mean
      for (std::size_t l = 0; l < ranges.size(); ++l) {
        const auto [begin, end] = ranges[l];
        mean_.segment(begin, end - begin) /= static_cast<T>(k_[l]);
      }
    }
    // Line 13 sets m_t = m_bar_t; m_{t-1} stays in lamb_.m() until line 15 has used it.
    Vector<T>& m = lamb_.m();
    Vector<T>& v = lamb_.v();  // the fresh v: LAMB's v, still updated after T_w (line 3)
    const T beta1 = static_cast<T>(options_.lamb.beta1);
    const T beta2 = static_cast<T>(options_.lamb.beta2);
    g_ = (mean_ - beta1 * m) / (T(1) - beta1);        // line 15
    v = beta2 * v + (T(1) - beta2) * g_.cwiseAbs2();  // line 16
    const double threshold = options_.r_threshold;
    for (std::size_t l = 0; l < ranges.size(); ++l) {
      const auto [begin, end] = ranges[l];
      const Eigen::Index n = end - begin;
      const auto li = static_cast<Eigen::Index>(l);
      const double r_prev = r_[li];
      double r = Ratio(begin, n, r_prev);  // line 17
      target_[li] = static_cast<T>(r);
      r = lamb::ClippedRatio(r, r_prev, threshold, options_.r_min, options_.r_max);  // 18-19
      r_[li] = static_cast<T>(r);
      const double c = r * c_avg_[l];  // line 20
      lamb_.c()[li] = static_cast<T>(c);
      // Line 21 prints sqrt(v_{t-1}), but Sec. 4 freezes the variance for the update ("store the
      // frozen variance to be used during compression stage") and keeps the fresh v for the
      // ratio only; DeepSpeed divides by the frozen one too. So v_Tw.
      x.segment(begin, n).array() -= static_cast<T>(ctx.lr * c) * mean_.segment(begin, n).array() /
                                     frozen_denominator_.segment(begin, n).array();
    }
    m = mean_;  // line 13
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>(kMomentum, m);
      trace.Vector<T>(kGradient, g_);
      trace.Vector<T>(kVariance, v);
      trace.Vector<T>(kFrozenVariance.symbol, v_frozen_);
      trace.Indexed(kRatio.symbol, PerLayer(r_));
      trace.Indexed(kScale, PerLayer(lamb_.c()));
    }
  }

  void DeclareState(OptimizerState<T>& state) override {
    // Workers hold their m^(i) of line 5 once compression starts; before, the synchronised m.
    state.PerWorker(workers_, [&](Worker& w) { state.Own(kWorkerMomentum, w.m, frozen_); });
    state.Nested("lamb", lamb_);
    this->DeclareExchanges(state);
    state.Replicated(kFrozenVariance, v_frozen_);
    state.Later("frozen_denominator", frozen_denominator_, v_frozen_.size());  // at T_w
    state.Value("c_avg", c_avg_);
    state.Replicated(kRatio, r_);
    state.Replicated(kRatioTarget, target_);
    state.Value("k", k_);
    state.Value("frozen", frozen_);
  }

 private:
  // The warmup (line 2) goes over the full-precision wire; the compression stage after it.
  bool FullPrecisionAt(const StepContext& ctx) const override {
    return ctx.t <= options_.warmup_steps;
  }

  struct Worker {
    Vector<T> m;       // m^(i)_t of line 5
    Vector<T> scaled;  // k_l m^(i) per layer (App. A.5.2)
  };

  // Line 3 at the end of step T_w: store v_Tw (the fresh v goes on from it) and stop updating
  // c_avg (Apply no longer does); App. A.5.2's k_l from m_Tw.
  void Freeze() {
    v_frozen_ = lamb_.v();
    frozen_denominator_ = v_frozen_.array().sqrt() + static_cast<T>(options_.lamb.eps);
    for (Worker& w : workers_) {
      if (w.m.size() > 0) w.m = lamb_.m();  // "own" starts from m_Tw (workers run here)
    }
    if (options_.momentum_scaling) {
      const LayerRanges& ranges = lamb_.ranges();
      std::vector<double> s(ranges.size(), 0.0);
      for (std::size_t l = 0; l < ranges.size(); ++l) {
        const auto [begin, end] = ranges[l];
        if (end > begin) {
          s[l] =
              LayerNorm(lamb_.m().data(), begin, end) / std::sqrt(static_cast<double>(end - begin));
        }
      }
      k_ = MomentumScaleFactors(s);
    }
    frozen_ = true;
  }

  // Line 17's r for the layer [begin, begin + n), before the clips; r_prev when no coordinate
  // has a defined ratio.
  double Ratio(std::int64_t begin, Eigen::Index n, double r_prev) const {
    const auto frozen = v_frozen_.segment(begin, n);
    const auto fresh = lamb_.v().segment(begin, n);
    double r = -std::numeric_limits<double>::infinity();
    bool defined = false;
    for (Eigen::Index j = 0; j < n; ++j) {
      double term;
      if (lamb::RatioTerm(static_cast<double>(frozen[j]), static_cast<double>(fresh[j]),
                          options_.ratio == OneBitLambRatio::kDenominator, options_.lamb.eps,
                          term)) {
        r = lamb::Larger(r, term);
        defined = true;
      }
    }
    return defined ? r : r_prev;
  }

  OneBitLambOptions options_;
  LambState<T> lamb_;  // m_t (synchronised), v (fresh after T_w), c_t per layer
  std::vector<Worker> workers_;
  Vector<T> mean_;                // warmup: the mean gradient; compression: m_bar_t
  Vector<T> v_frozen_;            // v_Tw
  Vector<T> frozen_denominator_;  // sqrt(v_Tw) + eta, once, for every compressed step
  Vector<T> g_;                   // line 15's reconstructed gradient
  Eigen::Index layers_;
  std::vector<double> c_avg_;  // c_avg^(l)
  Vector<T> r_;                // r_t^(l)
  Vector<T> target_;           // line 17's r_t^(l) before the clips
  std::vector<double> k_;      // k_l of App. A.5.2 (1 without momentum scaling)
  bool frozen_ = false;        // step T_w is over
  using PhasedExchangeOptimizer<T>::exchange_;
  using PhasedExchangeOptimizer<T>::full_precision_;
};

const std::array<std::string, 2> kZeroNormChoices = {"clip", "one"};
const std::array<std::string, 2> kRatioChoices = {"variance", "denominator"};

// Fails unless lo <= hi, naming both options and their values; located at whichever of the two
// the table sets (the lower one when both).
void RequireOrdered(OptionTable& options, std::string_view lo_key, double lo,
                    std::string_view hi_key, double hi) {
  if (lo <= hi) return;
  options.Fail(options.Has(lo_key) ? lo_key : hi_key,
               fmt::format("{} must be <= {} ({}), got {}", lo_key, hi_key, hi, lo));
}

}  // namespace

std::vector<double> MomentumScaleFactors(const std::vector<double>& s) {
  double s_sum = 0;
  for (const double s_l : s) s_sum += s_l;
  const double s_avg = s_sum / static_cast<double>(s.size());
  std::vector<double> k(s.size());
  for (std::size_t l = 0; l < s.size(); ++l) k[l] = s[l] > 0 ? s_avg / s[l] : 1.0;
  return k;
}

LambOptions ReadLambOptions(OptionTable& options, bool read_bias_correction) {
  LambOptions o;
  o.beta1 = options.GetDouble("beta1", o.beta1, kMovingAverageFactor);
  o.beta2 = options.GetDouble("beta2", o.beta2, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  o.c_min = options.GetDouble("c_min", o.c_min, Interval::NonNegative());
  o.c_max = options.GetDouble("c_max", o.c_max, Interval::NonNegative());
  RequireOrdered(options, "c_min", o.c_min, "c_max", o.c_max);
  o.zero_norm = options.GetChoice("zero_norm", "clip", kZeroNormChoices) == "one"
                    ? LambZeroNorm::kOne
                    : LambZeroNorm::kClip;
  if (read_bias_correction) {
    o.bias_correction = options.GetBool("bias_correction", o.bias_correction);
  }
  return o;
}

OneBitLambOptions ReadOneBitLambOptions(OptionTable& options) {
  OneBitLambOptions o;
  o.lamb = ReadLambOptions(options, /*read_bias_correction=*/false);
  o.beta3 = options.GetDouble("beta3", o.beta3, kMovingAverageFactor);
  o.warmup_steps = options.GetInt("warmup_steps", o.warmup_steps, 0);
  o.r_min = options.GetDouble("r_min", o.r_min, Interval::Positive());
  o.r_max = options.GetDouble("r_max", o.r_max, Interval::NonNegative());
  RequireOrdered(options, "r_min", o.r_min, "r_max", o.r_max);
  o.r_threshold = options.GetDouble("r_threshold", o.r_threshold, Interval::ClosedOpen(0, 1));
  o.momentum_scaling = options.GetBool("momentum_scaling", o.momentum_scaling);
  o.ratio = options.GetChoice("ratio", "variance", kRatioChoices) == "denominator"
                ? OneBitLambRatio::kDenominator
                : OneBitLambRatio::kVariance;
  o.local_momentum = LocalMomentumFromOptions(options);
  return o;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeLamb(const LambOptions& options,
                                                  const OptimizerContext& context) {
  return std::make_unique<Lamb<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitLamb(const OneBitLambOptions& options,
                                                        const ExchangeConfig<T>& exchange,
                                                        const OptimizerContext& context) {
  return std::make_unique<OneBitLamb<T>>(options, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LambFromOptions(OptionTable& options,
                                                         const OptimizerContext& context) {
  return MakeLamb<T>(ReadLambOptions(options, /*read_bias_correction=*/true), context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitLambFromOptions(OptionTable& options,
                                                               const OptimizerContext& context) {
  const OneBitLambOptions o = ReadOneBitLambOptions(options);
  const ExchangeConfig<T> exchange = ExchangeFromOptions<T>(options, kOneBitLambDefaults);
  return MakeOneBitLamb<T>(o, exchange, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                               \
  template std::unique_ptr<DistributedOptimizer<T>> MakeLamb(const LambOptions&,              \
                                                             const OptimizerContext&);        \
  template std::unique_ptr<DistributedOptimizer<T>> MakeOneBitLamb(                           \
      const OneBitLambOptions&, const ExchangeConfig<T>&, const OptimizerContext&);           \
  template std::unique_ptr<DistributedOptimizer<T>> LambFromOptions(OptionTable&,             \
                                                                    const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> OneBitLambFromOptions(                    \
      OptionTable&, const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
