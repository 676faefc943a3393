#include "batched/optimizers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "batched/kernels.h"
#include "batched/senders.h"
#include "optimizers/adam.h"
#include "optimizers/birder.h"
#include "optimizers/compressed_exchange.h"
#include "optimizers/ef21.h"
#include "optimizers/lamb.h"
#include "optimizers/one_bit_adam.h"
#include "optimizers/spams.h"
#include "optimizers/weight_decay.h"
#include "optimizers/zero_one_adam.h"

namespace lemmalab::batched {
namespace {

// The state's tags: names in checkpoints, and the quantities probes observe, as the CPU
// optimizers declare them (their sources are there).
constexpr StateTag kAdamMomentum = {{"m", "optimizers/adam.cc", ""}, Quantity::kMomentum};
constexpr StateTag kAdamVariance = {{"v", "optimizers/adam.cc", ""}, Quantity::kVariance};
constexpr StateTag kBirderMomentum = {{"m", "optimizers/birder.cc", ""}, Quantity::kMomentum};
constexpr StateTag kBirderBHat = {{"b_hat", "optimizers/birder.cc", ""}};
constexpr StateTag kBirderB = {{"b", "optimizers/birder.cc", ""}, Quantity::kRawDenominator};
constexpr StateTag kOneBitAdamWorkerMomentum = {{"m_i", "optimizers/one_bit_adam.cc", ""},
                                                Quantity::kMomentum};
constexpr StateTag kOneBitAdamMomentum = {{"m", "optimizers/one_bit_adam.cc", ""},
                                          Quantity::kMomentum};
constexpr StateTag kOneBitAdamVariance = {{"v", "optimizers/one_bit_adam.cc", ""},
                                          Quantity::kVariance};
constexpr StateTag kSpamsMomentum = {{"m", "optimizers/spams.cc", ""}, Quantity::kMomentum};
constexpr StateTag kSpamsVariance = {{"v", "optimizers/spams.cc", ""}, Quantity::kVariance};
constexpr StateTag kSpamsMaxVariance = {{"v_hat", "optimizers/spams.cc", ""},
                                        Quantity::kMaxVariance};
constexpr StateTag kSpamsDenominator = {{"sqrt(v_hat+eps)", "optimizers/spams.cc", ""},
                                        Quantity::kDenominator};
constexpr StateTag kEf21Shift = {{"g_i", "optimizers/ef21.cc", ""}, Quantity::kShift};
constexpr StateTag kEf21MeanShift = {{"g", "optimizers/ef21.cc", ""}, Quantity::kShift};
constexpr StateTag kEf21Momentum = {{"v_i", "optimizers/ef21.cc", ""}, Quantity::kMomentum};
constexpr StateTag kLambMomentum = {{"m", "optimizers/lamb.cc", ""}, Quantity::kMomentum};
constexpr StateTag kLambVariance = {{"v", "optimizers/lamb.cc", ""}, Quantity::kVariance};
constexpr StateTag kLambScale = {{"c^(l)", "optimizers/lamb.cc", ""}, Quantity::kLayerScale};
constexpr StateTag kOneBitLambWorkerMomentum = {{"m^(i)", "optimizers/lamb.cc", ""},
                                                Quantity::kMomentum};
constexpr StateTag kOneBitLambFrozenVariance = {{"v_Tw", "optimizers/lamb.cc", ""},
                                                Quantity::kFrozenVariance};
constexpr StateTag kOneBitLambFrozenDenominator = {
    {"frozen_denominator", "optimizers/lamb.cc", ""}};
constexpr StateTag kOneBitLambRatio = {{"r^(l)", "optimizers/lamb.cc", ""}, Quantity::kLayerRatio};
constexpr StateTag kOneBitLambTarget = {{"r_target^(l)", "optimizers/lamb.cc", ""},
                                        Quantity::kLayerTarget};
constexpr StateTag kZeroOneAdamWorkerMomentum = {{"m^(i)", "optimizers/zero_one_adam.cc", ""},
                                                 Quantity::kMomentum};
constexpr StateTag kZeroOneAdamLocalModel = {{"x_i", "optimizers/zero_one_adam.cc", ""}};
constexpr StateTag kZeroOneAdamBuffer = {{"u", "optimizers/zero_one_adam.cc", ""}};
constexpr StateTag kZeroOneAdamMomentum = {{"m", "optimizers/zero_one_adam.cc", ""},
                                           Quantity::kMomentum};
constexpr StateTag kZeroOneAdamVariance = {{"v", "optimizers/zero_one_adam.cc", ""},
                                           Quantity::kVariance};
constexpr StateTag kZeroOneAdamDenominator = {{"denominator", "optimizers/zero_one_adam.cc", ""}};
constexpr StateTag kPreconditioner = {{"denominator", "optimizers/one_bit_adam.cc", ""}};

// The mean of the workers' gradients, as the averaged-gradient baselines' server computes it.
template <typename T>
class AveragedGradient : public BatchedOptimizer<T> {
 public:
  explicit AveragedGradient(const BatchedContext& context)
      : context_(context), mean_(OneVector<T>(context)) {}

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) final {
    ForEach(context_.backend, context_.dimension,
            MeanOfRows<T>{gradients.data(), context_.workers, context_.dimension, mean_.data()});
    ApplyMean(ctx, x);
  }
  // The gradients and their mean in full precision.
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t /*t*/) const final {
    return {RawBytes<T>(context_), RawBytes<T>(context_)};
  }

 protected:
  virtual void ApplyMean(const StepContext& ctx, Buffer<T>& x) = 0;

  BatchedContext context_;
  Buffer<T> mean_;
};

template <typename T>
class Sgd final : public AveragedGradient<T> {
 public:
  using AveragedGradient<T>::AveragedGradient;

  void DeclareState(DeviceState<T>& /*state*/) override {}  // x is all SGD carries

 private:
  void ApplyMean(const StepContext& ctx, Buffer<T>& x) override {
    ForEach(this->context_.backend, this->context_.dimension,
            SgdStep<T>{x.data(), this->mean_.data(), static_cast<T>(ctx.lr)});
  }
};

// Adam on the averaged gradient (optimizers/adam.cc); AMSGrad has no batched form yet.
template <typename T>
class Adam final : public AveragedGradient<T> {
 public:
  Adam(const AdamOptions& options, const BatchedContext& context)
      : AveragedGradient<T>(context),
        options_(options),
        m_(OneVector<T>(context)),
        v_(OneVector<T>(context)) {}

  void DeclareState(DeviceState<T>& state) override {
    state.Replicated(kAdamMomentum, m_);
    state.Replicated(kAdamVariance, v_);
  }

 private:
  void ApplyMean(const StepContext& ctx, Buffer<T>& x) override {
    const Backend backend = this->context_.backend;
    const std::int64_t d = this->context_.dimension;
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    ForEach(backend, d,
            AdamMoments<T>{this->mean_.data(), m_.data(), v_.data(), beta1, T(1) - beta1, beta2,
                           T(1) - beta2});
    // AdamUpdate's constants, computed as it computes them.
    double c1 = 1.0, c2 = 1.0;
    if (options_.bias_correction) {
      const auto t = static_cast<double>(ctx.t);
      c1 = 1.0 - std::pow(options_.beta1, t);
      c2 = 1.0 - std::pow(options_.beta2, t);
    }
    const bool inside = options_.eps_placement == EpsPlacement::kInside;
    ForEach(backend, d,
            AdamUpdate<T>{x.data(), m_.data(), v_.data(), static_cast<T>(ctx.lr / c1),
                          static_cast<T>(options_.eps),
                          inside ? static_cast<T>(c2) : static_cast<T>(std::sqrt(c2)), inside});
  }

  AdamOptions options_;
  Buffer<T> m_, v_;
};

// denominator = sqrt(v) + eps, or sqrt(v + eps) with eps inside: the preconditioner of 1-bit Adam
// and 0/1 Adam, recomputed when v changes.
template <typename T>
void Preconditioner(const BatchedContext& context, const Buffer<T>& v, Buffer<T>& denominator,
                    double eps, EpsPlacement placement) {
  ForEach(context.backend, context.dimension,
          RootDenominator<T>{v.data(), denominator.data(), static_cast<T>(eps),
                             placement == EpsPlacement::kInside});
}

// What every optimizer with a compressed exchange shares: the workers' senders and, where the
// server compresses what it sends back, the server's; their error feedback, statistics, message
// sizes and compression records.
template <typename T>
class ExchangeOptimizer : public BatchedOptimizer<T> {
 protected:
  ExchangeOptimizer(std::unique_ptr<Senders<T>> workers, std::unique_ptr<Senders<T>> server)
      : workers_(std::move(workers)), server_(std::move(server)) {}

  // The last compressed message's statistics of `worker`, or of kServer.
  EncodeStats Sent(int worker) const {
    return worker == kServer ? server_->Stats(0) : workers_->Stats(worker);
  }
  // The compressed messages' sizes, each way.
  typename BatchedOptimizer<T>::WireBytes CompressedWire() const {
    return {workers_->message_bytes(), server_->message_bytes()};
  }
  void DeclareErrors(DeviceState<T>& state) {
    workers_->DeclareErrors(state);
    if (server_ != nullptr) server_->DeclareErrors(state);
  }
  std::vector<Senders<T>*> ExchangeSenders() const override {
    if (server_ == nullptr) return {workers_.get()};
    return {workers_.get(), server_.get()};
  }

  std::unique_ptr<Senders<T>> workers_;
  std::unique_ptr<Senders<T>> server_;  // null: the server sends back raw values
};

// Birder (optimizers/birder.cc), its exchange compressing on both sides.
template <typename T>
class Birder final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  Birder(const BirderOptions& options, std::unique_ptr<Senders<T>> workers,
         std::unique_ptr<Senders<T>> server, const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), std::move(server)),
        options_(options),
        context_(context),
        m_(WorkerRows<T>(context)),
        b_hat_(WorkerRows<T>(context)),
        b_(WorkerRows<T>(context)),
        denominator_(WorkerRows<T>(context)),
        update_(WorkerRows<T>(context)),
        mean_(OneVector<T>(context)) {}

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    const T beta = static_cast<T>(options_.beta);
    ForEach(backend, n * d,  // lines 5-8 up to the quantizer's input
            BirderMoments<T>{gradients.data(), m_.data(), b_hat_.data(), b_.data(),
                             denominator_.data(), update_.data(), beta, T(1) - beta,
                             static_cast<T>(options_.eps), options_.t0 && ctx.t > *options_.t0});
    workers_->Encode(ctx, update_.data());  // lines 8-9
    workers_->MeanOfRows(mean_.data());
    server_->Encode(ctx, mean_.data());  // lines 12-13
    server_->Decode(mean_.data());       // line 16: x <- x - lr C(...)
    ForEach(backend, d, SgdStep<T>{x.data(), mean_.data(), static_cast<T>(ctx.lr)});
  }

  void DeclareState(DeviceState<T>& state) override {
    const std::int64_t d = context_.dimension;
    state.PerWorker(kBirderMomentum, m_, d);
    state.PerWorker(kBirderBHat, b_hat_, d);
    state.PerWorker(kBirderB, b_, d);
    state.PerWorkerShows(Quantity::kDenominator, denominator_, d);
    this->DeclareErrors(state);
  }

  std::optional<EncodeStats> LastEncode(int worker) const override { return this->Sent(worker); }

  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t /*t*/) const override {
    return this->CompressedWire();
  }

 private:
  BirderOptions options_;
  BatchedContext context_;
  Buffer<T> m_, b_hat_, b_, denominator_, update_;  // n x d
  Buffer<T> mean_;                                  // d: the mean of the workers' Q(u)
};

// 1-bit Adam (optimizers/one_bit_adam.cc): Adam on the mean gradient, sent as it is, for the
// warmup's T_w steps; then every worker's momentum through the compressed exchange, and the
// replicas' step preconditioned by the frozen v.
template <typename T>
class OneBitAdam final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  OneBitAdam(const OneBitAdamOptions& options, std::unique_ptr<Senders<T>> workers,
             std::unique_ptr<Senders<T>> server, const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), std::move(server)),
        options_(options),
        context_(context),
        m_(OneVector<T>(context)),
        v_(OneVector<T>(context)),
        denominator_(OneVector<T>(context)),
        mean_(OneVector<T>(context)),
        worker_m_(WorkerRows<T>(context)),
        warmup_sends_(context) {
    // The denominator of v = 0, as the CPU's preconditioner starts.
    Precondition();
  }

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    t_ = ctx.t;
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    if (Warmup(ctx.t)) {  // line 2: Adam (Eq. 1, no bias correction) on the mean gradient
      ForEach(backend, d, MeanOfRows<T>{gradients.data(), n, d, mean_.data()});
      warmup_sends_.Count(gradients.data(), mean_.data());
      ForEach(backend, d,
              AdamMoments<T>{mean_.data(), m_.data(), v_.data(), beta1, T(1) - beta1, beta2,
                             T(1) - beta2});
      Precondition();
    } else {
      const bool own =
          options_.local_momentum == LocalMomentum::kOwn && ctx.t > options_.warmup_steps + 1;
      ForEach(backend, n * d,  // line 6
              OneBitAdamMomentum<T>{gradients.data(), worker_m_.data(), m_.data(), d, own, beta1,
                                    T(1) - beta1});
      workers_->Encode(ctx, worker_m_.data());  // lines 7-8
      workers_->MeanOfRows(mean_.data());
      server_->Encode(ctx, mean_.data());  // line 10
      server_->Decode(m_.data());          // 13
    }
    ForEach(
        backend, d,  // line 13
        PreconditionedStep<T>{x.data(), m_.data(), denominator_.data(), static_cast<T>(ctx.lr)});
  }

  void DeclareState(DeviceState<T>& state) override {
    const std::int64_t d = context_.dimension;
    state.Replicated(kPreconditioner, denominator_);
    this->DeclareErrors(state);
    // During warmup every worker holds the synchronised m; after it, its own m^(i).
    state.PerWorker(kOneBitAdamWorkerMomentum, worker_m_, d, !Warmup(t_));
    if (Warmup(t_)) {
      state.Replicated(kOneBitAdamMomentum, m_);
    } else {
      state.Server(kOneBitAdamMomentum, m_);
    }
    state.Replicated(kOneBitAdamVariance, v_);
    state.Shows(Quantity::kFrozenVariance, v_, t_ >= options_.warmup_steps);
    state.Value("t", t_);
  }

  // The warmup sends the gradients and their mean as they are (the identity compressor).
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t t) const override {
    if (Warmup(t)) return {RawBytes<T>(context_), RawBytes<T>(context_)};
    return this->CompressedWire();
  }

  std::optional<EncodeStats> LastEncode(int worker) const override {
    if (Warmup(t_)) return warmup_sends_.Stats(worker);
    return this->Sent(worker);
  }

 private:
  bool Warmup(std::int64_t t) const { return t <= options_.warmup_steps; }
  void Precondition() {
    Preconditioner(context_, v_, denominator_, options_.eps, options_.eps_placement);
  }

  OneBitAdamOptions options_;
  BatchedContext context_;
  Buffer<T> m_, v_;        // the synchronised m; v, frozen (v_Tw) after step T_w
  Buffer<T> denominator_;  // sqrt(v) + eta
  Buffer<T> mean_;         // the mean gradient (warmup), the mean of the decoded messages (after)
  Buffer<T> worker_m_;     // n x d: m^(i) of line 6
  RawSendCounts<T> warmup_sends_;  // the warmup's gradients and their mean
  std::int64_t t_ = 0;             // the last step
};

// The problem's layers as the batched kernels read them (BlockEnds), with the per-layer partial
// sums of squares that LAMB's layer norms are combined from, in one_bit_element.h's fixed order
// (the CPU's LayerNorm in optimizers/lamb.cc).
class Layers {
 public:
  explicit Layers(const BatchedContext& context)
      : backend_(context.backend),
        d_(context.dimension),
        ranges_(context.shape().LayerRanges()),
        ends_(context.backend, ranges_.size()) {
    std::vector<std::int64_t> ends;
    for (const auto& [begin, end] : ranges_) ends.push_back(end);
    ends_.Upload(ends);
  }

  std::int64_t count() const { return static_cast<std::int64_t>(ranges_.size()); }
  BlockEnds ends() const { return {ends_.data(), count()}; }
  const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges() const { return ranges_; }

  // partials (count() x kPartials) <- the partial sums of v_j^2 of every layer.
  template <typename T>
  void SumSquares(const T* v, Buffer<double>& partials) const {
    ForEach(backend_, count() * one_bit::kPartials,
            OneBitPartialSums<T>{RowInput<T>{v, nullptr, T(1)}, d_, ends(), true, partials.data()});
  }
  Buffer<double> PartialSums() const {
    return Buffer<double>(backend_, static_cast<std::size_t>(count() * one_bit::kPartials));
  }

 private:
  Backend backend_;
  std::int64_t d_;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;
  Buffer<std::int64_t> ends_;
};

// Eq. (1) of onebit-lamb.txt on the replicas' state, per layer (optimizers/lamb.cc's LambState):
// the whole of lamb, and 1-bit LAMB's warmup.
template <typename T>
class LambState {
 public:
  LambState(const LambOptions& options, const BatchedContext& context)
      : options_(options),
        context_(context),
        layers_(context),
        m_(OneVector<T>(context)),
        v_(OneVector<T>(context)),
        u_(OneVector<T>(context)),
        c_(context.backend, static_cast<std::size_t>(layers_.count())),
        c_step_(context.backend, static_cast<std::size_t>(layers_.count())),
        x_partials_(layers_.PartialSums()),
        u_partials_(layers_.PartialSums()) {}

  // One step of Eq. (1) with the mean gradient g; with c_avg (1-bit LAMB's warmup), line 2 too.
  void Step(const StepContext& ctx, const T* g, Buffer<T>& x, double* c_avg = nullptr,
            double beta3 = 0) {
    const Backend backend = context_.backend;
    const std::int64_t d = context_.dimension;
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    ForEach(backend, d,
            AdamMoments<T>{g, m_.data(), v_.data(), beta1, T(1) - beta1, beta2, T(1) - beta2});
    double m_scale = 1.0, v_scale = 1.0;
    if (options_.bias_correction) {  // You et al.'s LAMB, as lamb.cc computes it
      const auto t = static_cast<double>(ctx.t);
      m_scale = 1.0 / (1.0 - std::pow(options_.beta1, t));
      v_scale = 1.0 / (1.0 - std::pow(options_.beta2, t));
    }
    ForEach(backend, d,
            LambDirection<T>{m_.data(), v_.data(), u_.data(), static_cast<T>(m_scale),
                             static_cast<T>(v_scale), static_cast<T>(options_.eps)});
    layers_.SumSquares(x.data(), x_partials_);
    layers_.SumSquares(u_.data(), u_partials_);
    ForEach(backend, layers_.count(),
            LambLayerScales<T>{x_partials_.data(), u_partials_.data(), options_.c_min,
                               options_.c_max, options_.zero_norm == LambZeroNorm::kOne,
                               c_step_.data(), c_.data(), c_avg, beta3});
    ForEach(backend, d,
            LayerStep<T>{x.data(), u_.data(), nullptr, c_step_.data(), layers_.ends(), ctx.lr});
  }

  void DeclareState(DeviceState<T>& state) {
    state.Replicated(kLambMomentum, m_);
    state.Replicated(kLambVariance, v_);
    state.Replicated(kLambScale, c_);
  }

  const Layers& layers() const { return layers_; }
  Buffer<T>& m() { return m_; }
  Buffer<T>& v() { return v_; }
  Buffer<T>& c() { return c_; }
  Buffer<double>& c_step() { return c_step_; }

 private:
  LambOptions options_;
  BatchedContext context_;
  Layers layers_;
  Buffer<T> m_, v_, u_;
  Buffer<T> c_;                             // c^(l) as the state keeps it
  Buffer<double> c_step_;                   // c^(l) as the step multiplies by it
  Buffer<double> x_partials_, u_partials_;  // the layer norms' partial sums
};

// LAMB on the averaged gradient (optimizers/lamb.cc): every replica holds the same state.
template <typename T>
class Lamb final : public AveragedGradient<T> {
 public:
  Lamb(const LambOptions& options, const BatchedContext& context)
      : AveragedGradient<T>(context), state_(options, context) {}

  void DeclareState(DeviceState<T>& state) override { state_.DeclareState(state); }

 private:
  void ApplyMean(const StepContext& ctx, Buffer<T>& x) override {
    state_.Step(ctx, this->mean_.data(), x);
  }

  LambState<T> state_;
};

// 1-bit LAMB (optimizers/lamb.cc, onebit-lamb.txt Alg. 1): LAMB on the mean gradient, sent as it
// is, for the warmup's T_w steps, tracking c_avg; at T_w the variance freezes; then every
// worker's momentum (scaled per layer by k_l, App. A.5.2) through the compressed exchange, the
// fresh variance from the reconstructed gradient, the per-layer ratio r and the step on the frozen
// v.
template <typename T>
class OneBitLamb final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  OneBitLamb(const OneBitLambOptions& options, std::unique_ptr<Senders<T>> workers,
             std::unique_ptr<Senders<T>> server, const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), std::move(server)),
        options_(options),
        context_(context),
        lamb_(options.lamb, context),
        mean_(OneVector<T>(context)),
        v_frozen_(OneVector<T>(context)),
        frozen_denominator_(OneVector<T>(context)),
        worker_m_(WorkerRows<T>(context)),
        scaled_(options.momentum_scaling ? WorkerRows<T>(context) : Buffer<T>()),
        c_avg_(PerLayer<double>(0.0)),  // line 1
        r_(PerLayer<T>(T(1))),          // line 1: r^(l) = 1
        target_(PerLayer<T>(T(1))),
        k_(PerLayer<double>(1.0)),
        ratio_partials_(context.backend,
                        static_cast<std::size_t>(layers().count() * one_bit::kPartials)),
        warmup_sends_(context) {
    if (options_.warmup_steps == 0) Freeze();
  }

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    t_ = ctx.t;
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    if (Warmup(ctx.t)) {  // line 2: LAMB on the mean gradient, and c_avg
      ForEach(backend, d, MeanOfRows<T>{gradients.data(), n, d, mean_.data()});
      warmup_sends_.Count(gradients.data(), mean_.data());
      lamb_.Step(ctx, mean_.data(), x, c_avg_.data(), options_.beta3);
      if (ctx.t == options_.warmup_steps) Freeze();  // line 3
      return;
    }
    const T beta1 = static_cast<T>(options_.lamb.beta1),
            beta2 = static_cast<T>(options_.lamb.beta2);
    ForEach(
        backend, n * d,  // line 5 (Freeze gave "own" momenta m_Tw)
        OneBitAdamMomentum<T>{gradients.data(), worker_m_.data(), lamb_.m().data(), d,
                              options_.local_momentum == LocalMomentum::kOwn, beta1, T(1) - beta1});
    const T* sent = worker_m_.data();
    if (options_.momentum_scaling) {  // App. A.5.2: k_l m^(i)
      ForEach(
          backend, n * d,
          LayerFactors<T>{worker_m_.data(), scaled_.data(), k_.data(), layers().ends(), d, false});
      sent = scaled_.data();
    }
    workers_->Encode(ctx, sent);  // lines 6-8
    workers_->MeanOfRows(mean_.data());
    server_->Encode(ctx, mean_.data());  // line 10
    server_->Decode(mean_.data());       // 11
    if (options_.momentum_scaling) {     // undo k_l on m_bar
      ForEach(backend, d,
              LayerFactors<T>{mean_.data(), mean_.data(), k_.data(), layers().ends(), d, true});
    }
    ForEach(backend, d,  // lines 15-16
            ReconstructedVariance<T>{mean_.data(), lamb_.m().data(), lamb_.v().data(), beta1,
                                     T(1) - beta1, beta2, T(1) - beta2});
    ForEach(backend, layers().count() * one_bit::kPartials,  // line 17
            RatioPartials<T>{v_frozen_.data(), lamb_.v().data(), layers().ends(),
                             options_.ratio == OneBitLambRatio::kDenominator, options_.lamb.eps,
                             ratio_partials_.data()});
    ForEach(backend, layers().count(),  // lines 17-20
            LayerRatios<T>{ratio_partials_.data(), target_.data(), r_.data(), c_avg_.data(),
                           options_.r_threshold, options_.r_min, options_.r_max,
                           lamb_.c_step().data(), lamb_.c().data()});
    ForEach(backend, d,  // line 21 on the frozen v (lamb.cc says why)
            LayerStep<T>{x.data(), mean_.data(), frozen_denominator_.data(), lamb_.c_step().data(),
                         layers().ends(), ctx.lr});
    ForEach(backend, d, Copy<T>{mean_.data(), lamb_.m().data()});  // line 13
  }

  void DeclareState(DeviceState<T>& state) override {
    const std::int64_t d = context_.dimension;
    // Workers hold their m^(i) of line 5 once compression starts; before, the synchronised m.
    state.PerWorker(kOneBitLambWorkerMomentum, worker_m_, d, frozen_);
    lamb_.DeclareState(state);
    this->DeclareErrors(state);
    state.Replicated(kOneBitLambFrozenVariance, v_frozen_);
    state.Replicated(kOneBitLambFrozenDenominator, frozen_denominator_);
    state.Value("c_avg", c_avg_);
    state.Replicated(kOneBitLambRatio, r_);
    state.Replicated(kOneBitLambTarget, target_);
    state.Value("k", k_);
    state.Value("frozen", frozen_);
    state.Value("t", t_);
  }

  // The warmup sends the gradients and their mean as they are.
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t t) const override {
    if (Warmup(t)) return {RawBytes<T>(context_), RawBytes<T>(context_)};
    return this->CompressedWire();
  }

  std::optional<EncodeStats> LastEncode(int worker) const override {
    if (Warmup(t_)) return warmup_sends_.Stats(worker);
    return this->Sent(worker);
  }

 private:
  bool Warmup(std::int64_t t) const { return t <= options_.warmup_steps; }
  const Layers& layers() const { return lamb_.layers(); }
  template <typename U>
  Buffer<U> PerLayer(U value) const {
    Buffer<U> buffer(context_.backend, static_cast<std::size_t>(layers().count()));
    buffer.Upload(std::vector<U>(buffer.size(), value));
    return buffer;
  }

  // Line 3 at the end of step T_w: v_Tw and its denominator sqrt(v_Tw) + eta, every worker's m^(i)
  // from m_Tw, and App. A.5.2's k_l from m_Tw's layer norms (the CPU's Freeze).
  void Freeze() {
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    ForEach(backend, d, Copy<T>{lamb_.v().data(), v_frozen_.data()});
    ForEach(backend, d,
            RootDenominator<T>{v_frozen_.data(), frozen_denominator_.data(),
                               static_cast<T>(options_.lamb.eps), /*eta_inside=*/false});
    ForEach(backend, n * d, BroadcastRow<T>{lamb_.m().data(), d, worker_m_.data()});
    if (options_.momentum_scaling) {
      Buffer<double> partials = layers().PartialSums();
      layers().SumSquares(lamb_.m().data(), partials);
      const std::vector<double> sums = partials.ToHost();
      std::vector<double> s(static_cast<std::size_t>(layers().count()));
      for (std::size_t l = 0; l < s.size(); ++l) {
        const auto [begin, end] = layers().ranges()[l];
        s[l] = std::sqrt(one_bit::CombinePartials(sums.data() + l * one_bit::kPartials)) /
               std::sqrt(static_cast<double>(end - begin));
      }
      k_.Upload(MomentumScaleFactors(s));
    }
    frozen_ = true;
  }

  OneBitLambOptions options_;
  BatchedContext context_;
  LambState<T> lamb_;  // m (synchronised), v (fresh after T_w), c per layer
  Buffer<T> mean_;     // warmup: the mean gradient; compression: m_bar
  Buffer<T> v_frozen_, frozen_denominator_;
  Buffer<T> worker_m_, scaled_;  // n x d: m^(i) of line 5; k_l m^(i)
  Buffer<double> c_avg_;         // per layer
  Buffer<T> r_, target_;         // per layer: r_t^(l); line 17's before the clips
  Buffer<double> k_;             // per layer: App. A.5.2's k_l (1 without momentum scaling)
  Buffer<RatioPartial> ratio_partials_;
  RawSendCounts<T> warmup_sends_;  // the warmup's gradients and their mean
  bool frozen_ = false;            // step T_w is over
  std::int64_t t_ = 0;             // the last step
};

// 0/1 Adam (optimizers/zero_one_adam.cc): every worker's own momentum, model and buffer
// u^(i); on the steps of T_v the mean gradient in full precision into v (and, with
// variance_sync "full-precision", Adam's step from it); on the steps of T_u the compressed exchange
// of the buffers, after which every replica holds the synchronised m and x; local steps between.
template <typename T>
class ZeroOneAdam final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  ZeroOneAdam(const ZeroOneAdamOptions& options, std::unique_ptr<Senders<T>> workers,
              std::unique_ptr<Senders<T>> server, const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), std::move(server)),
        options_(options),
        context_(context),
        v_(OneVector<T>(context)),
        m_(OneVector<T>(context)),
        denominator_(OneVector<T>(context)),
        g_bar_(OneVector<T>(context)),
        u_bar_(OneVector<T>(context)),
        worker_m_(WorkerRows<T>(context)),
        worker_x_(WorkerRows<T>(context)),
        worker_u_(WorkerRows<T>(context)),
        raw_sends_(context) {
    SetDenominator();
  }

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    t_ = ctx.t;
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, ctx.t);
    const T lr = static_cast<T>(ctx.lr);
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    if (!started_) {  // the first step: every replica starts at x_0
      ForEach(backend, n * d, BroadcastRow<T>{x.data(), d, worker_x_.data()});
      started_ = true;
    }
    ForEach(backend, n * d,  // m_{t+1/2}^(i)
            OneBitAdamMomentum<T>{gradients.data(), worker_m_.data(), nullptr, d, /*own=*/true,
                                  beta1, T(1) - beta1});
    if (kind.full_precision) {  // t in T_v: g_bar_t, in full precision
      ForEach(backend, d, MeanOfRows<T>{gradients.data(), n, d, g_bar_.data()});
      raw_sends_.Count(gradients.data(), g_bar_.data());
    }
    if (FullPrecisionSync(kind)) {  // Adam's step from g_bar (zoadam.py), then the sync
      ForEach(backend, d,
              AdamMoments<T>{g_bar_.data(), m_.data(), v_.data(), beta1, T(1) - beta1, beta2,
                             T(1) - beta2});
      SetDenominator();
      ForEach(backend, d, PreconditionedStep<T>{x.data(), m_.data(), denominator_.data(), lr});
      Synchronised(x);
      return;
    }
    ForEach(backend, n * d,  // x_{t+1/2}^(i), u_{t+1/2}^(i), by the v before this step's
            ZeroOneAdamLocalStep<T>{worker_x_.data(), worker_u_.data(), worker_m_.data(),
                                    denominator_.data(), d, lr});
    if (kind.full_precision) {  // variance_sync "one-bit": T_v feeds v only
      ForEach(backend, d, SecondMoment<T>{g_bar_.data(), v_.data(), beta2, T(1) - beta2});
      SetDenominator();
    }
    lr_sum_ += ctx.lr;                        // sum_{h=t'}^{t} gamma_h
    if (!kind.one_bit) return;                // a local step: x stays x_{t'}
    workers_->Encode(ctx, worker_u_.data());  // C(u^(i) + delta^(i))
    workers_->MeanOfRows(u_bar_.data());
    server_->Encode(ctx, u_bar_.data());  // C(mean + delta_bar)
    server_->Decode(u_bar_.data());
    ForEach(backend, d,
            ZeroOneAdamSync<T>{u_bar_.data(), denominator_.data(), m_.data(), x.data(),
                               static_cast<T>(lr_sum_)});
    Synchronised(x);
  }

  // Each step's message is what its kind needs: the raw gradient (T_v), the 1-bit u (T_u,
  // unless a full-precision sync replaces it), both, or nothing (a local step).
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t t) const override {
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, t);
    const std::size_t raw = kind.full_precision ? RawBytes<T>(context_) : 0;
    if (!kind.one_bit) return {raw, raw};
    return {raw + workers_->message_bytes(), raw + server_->message_bytes()};
  }

  // The step's parts' statistics, summed (zero on a local step), as the CPU counts them.
  std::optional<EncodeStats> LastEncode(int worker) const override {
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, t_);
    EncodeStats stats;
    if (kind.full_precision) stats += raw_sends_.Stats(worker);
    if (kind.one_bit) stats += this->Sent(worker);
    return stats;
  }

  const Buffer<T>* LocalParameters() const override { return started_ ? &worker_x_ : nullptr; }

  void DeclareState(DeviceState<T>& state) override {
    const std::int64_t d = context_.dimension;
    this->DeclareErrors(state);
    state.PerWorker(kZeroOneAdamWorkerMomentum, worker_m_, d);
    state.PerWorker(kZeroOneAdamLocalModel, worker_x_, d);
    state.PerWorker(kZeroOneAdamBuffer, worker_u_, d);
    state.Server(kZeroOneAdamMomentum, m_);
    state.Replicated(kZeroOneAdamVariance, v_);
    state.Shows(Quantity::kFrozenVariance, v_, t_ >= options_.var_freeze_step);
    state.Replicated(kZeroOneAdamDenominator, denominator_);
    state.Value("lr_sum", lr_sum_);
    state.Value("started", started_);
    state.Value("t", t_);
  }

 private:
  bool FullPrecisionSync(const ZeroOneAdamStep& kind) const {
    return kind.full_precision && options_.variance_sync == VarianceSync::kFullPrecision;
  }
  void SetDenominator() {
    Preconditioner(context_, v_, denominator_, options_.eps, options_.eps_placement);
  }
  // Every replica takes the synchronised m and x, and its buffer u restarts (t' = t + 1).
  void Synchronised(const Buffer<T>& x) {
    const std::int64_t n = context_.workers, d = context_.dimension;
    lr_sum_ = 0;
    ForEach(context_.backend, n * d, BroadcastRow<T>{m_.data(), d, worker_m_.data()});
    ForEach(context_.backend, n * d, BroadcastRow<T>{x.data(), d, worker_x_.data()});
    worker_u_.SetZero();
  }

  ZeroOneAdamOptions options_;
  BatchedContext context_;
  Buffer<T> v_, m_, denominator_;  // every replica's v, the synchronised m, sqrt(v) + eps
  Buffer<T> g_bar_, u_bar_;        // the step's mean gradient; the decoded u_bar
  Buffer<T> worker_m_, worker_x_, worker_u_;  // n x d: m^(i), x^(i), u^(i)
  RawSendCounts<T> raw_sends_;                // the gradients of T_v and their mean
  double lr_sum_ = 0;                         // sum of gamma_h since the last sync
  bool started_ = false;  // the workers' x^(i) hold their models (after the first step)
  std::int64_t t_ = 0;    // the last step
};

// dist-SPAMS (optimizers/spams.cc): each worker's gradient through its compressor with error
// feedback, the mean of the decoded messages into the server's AMSGrad, and the replicas' step
// by the direction it sends back in full precision.
template <typename T>
class DistSpams final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  DistSpams(const SpamsOptions& options, std::unique_ptr<Senders<T>> workers,
            const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), nullptr),
        options_(options),
        context_(context),
        m_(OneVector<T>(context)),
        v_(OneVector<T>(context)),
        v_hat_(OneVector<T>(context)),
        denominator_(OneVector<T>(context)),
        mean_(OneVector<T>(context)) {
    // sqrt(eps) before step 1 (v_hat_0 = 0), in the run's precision as the CPU's.
    const T eps = static_cast<T>(options.eps);
    denominator_.Upload(
        std::vector<T>(static_cast<std::size_t>(context.dimension), std::sqrt(eps)));
  }

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    const Backend backend = context_.backend;
    const std::int64_t d = context_.dimension;
    workers_->Encode(ctx, gradients.data());  // lines 7-9
    workers_->MeanOfRows(mean_.data());       // line 12
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    ForEach(backend, d,  // lines 13-16
            AmsGradStep<T>{mean_.data(), m_.data(), v_.data(), v_hat_.data(), denominator_.data(),
                           x.data(), beta1, T(1) - beta1, beta2, T(1) - beta2,
                           static_cast<T>(options_.eps), static_cast<T>(ctx.lr)});
  }

  // The server sends the direction m / sqrt(v_hat + eps) in full precision.
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t /*t*/) const override {
    return {workers_->message_bytes(), RawBytes<T>(context_)};
  }

  std::optional<EncodeStats> LastEncode(int worker) const override {
    if (worker == kServer) return std::nullopt;  // the server sends raw values
    return workers_->Stats(worker);
  }

  void DeclareState(DeviceState<T>& state) override {
    state.Server(kSpamsMomentum, m_);
    state.Server(kSpamsVariance, v_);
    state.Server(kSpamsMaxVariance, v_hat_);
    state.Server(kSpamsDenominator, denominator_);
    this->DeclareErrors(state);
  }

 private:
  SpamsOptions options_;
  BatchedContext context_;
  Buffer<T> m_, v_, v_hat_, denominator_;  // the server's AMSGrad state
  Buffer<T> mean_;                         // the mean of the decoded messages (line 12)
};

// EF21 and EF21-SGDM (optimizers/ef21.cc): every worker's correction C(y - g_i) of its estimate
// g_i (y its gradient, or its momentum v_i), g_i moved by its own decoded message, the
// corrections' mean sent back as it is (the exchange's identity server compressor) and added to
// the replicas' g. With init = "full", step 1 sends y itself over the full-precision wire.
template <typename T>
class Ef21 final : public ExchangeOptimizer<T> {
  using ExchangeOptimizer<T>::workers_;
  using ExchangeOptimizer<T>::server_;

 public:
  Ef21(const Ef21Options& options, std::unique_ptr<Senders<T>> workers,
       std::unique_ptr<Senders<T>> server, const BatchedContext& context)
      : ExchangeOptimizer<T>(std::move(workers), std::move(server)),
        options_(options),
        context_(context),
        g_i_(WorkerRows<T>(context)),
        v_(options.eta ? WorkerRows<T>(context) : Buffer<T>()),
        difference_(WorkerRows<T>(context)),
        g_(OneVector<T>(context)),
        mean_(OneVector<T>(context)),
        raw_sends_(context) {}

  void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) override {
    t_ = ctx.t;
    const Backend backend = context_.backend;
    const std::int64_t n = context_.workers, d = context_.dimension;
    const T* y = gradients.data();
    if (options_.eta) {  // EF21-SGDM: y is the worker's momentum v_i
      const T eta = static_cast<T>(*options_.eta);
      ForEach(backend, n * d,
              Ef21Momentum<T>{gradients.data(), v_.data(), ctx.t == 1, T(1) - eta, eta});
      y = v_.data();
    }
    const bool full = FullPrecisionAt(ctx.t);
    if (full) {  // g_i^0 = y, sent as it is
      ForEach(backend, n * d, Copy<T>{y, g_i_.data()});
      ForEach(backend, d, MeanOfRows<T>{y, n, d, mean_.data()});
    } else {
      ForEach(backend, n * d, Difference<T>{y, g_i_.data(), difference_.data()});
      workers_->Encode(ctx, difference_.data());  // c_i = C(y - g_i)
      workers_->DecodeAddRows(g_i_.data());       // g_i <- g_i + c_i
      workers_->MeanOfRows(mean_.data());
      server_->Encode(ctx, mean_.data());  // the mean as it is: the replicas add mean_ itself
    }
    if (full) raw_sends_.Count(y, mean_.data());
    ForEach(backend, d,
            Ef21Step<T>{mean_.data(), g_.data(), x.data(), full, static_cast<T>(ctx.lr)});
  }

  // The server sends the mean correction (or, at a full first step, the mean of the y).
  typename BatchedOptimizer<T>::WireBytes Wire(std::int64_t t) const override {
    if (FullPrecisionAt(t)) return {RawBytes<T>(context_), RawBytes<T>(context_)};
    return this->CompressedWire();
  }

  std::optional<EncodeStats> LastEncode(int worker) const override {
    if (FullPrecisionAt(t_)) return raw_sends_.Stats(worker);
    return this->Sent(worker);
  }

  void DeclareState(DeviceState<T>& state) override {
    const std::int64_t d = context_.dimension;
    state.PerWorker(kEf21Shift, g_i_, d);
    if (options_.eta) state.PerWorker(kEf21Momentum, v_, d);
    state.Server(kEf21MeanShift, g_);
  }

 private:
  bool FullPrecisionAt(std::int64_t t) const { return options_.init == Ef21Init::kFull && t == 1; }

  Ef21Options options_;
  BatchedContext context_;
  Buffer<T> g_i_, v_, difference_;  // n x d: the estimates g_i, EF21-SGDM's v_i, y - g_i
  Buffer<T> g_, mean_;              // the replicas' g; the step's mean (correction)
  RawSendCounts<T> raw_sends_;      // a full step's y and their mean
  std::int64_t t_ = 0;
};

// The compressors with a batched form, by registry name: the 1-bit formats (each in its default
// configuration) and those of kSentRowsCompressors.
const std::string& BatchedCompressorNames() {
  static const std::string names = [] {
    std::vector<std::string_view> found;
    for (const CompressorInfo& info : Compressors().entries()) {
      OptionTable table(fmt::format("compressor '{}'", info.name), "");
      table.Set("name", {std::string(info.name), ""});
      try {
        if (info.make_f32(table)(CompressorShape::Flat(64))->one_bit_format() != nullptr) {
          found.push_back(info.name);
        }
      } catch (const UserError&) {
        // A compressor without defaults for every option is not one of them by default.
      }
    }
    found.insert(found.end(), kSentRowsCompressors.begin(), kSentRowsCompressors.end());
    return fmt::format("{}", fmt::join(found, ", "));
  }();
  return names;
}

// The senders of one side of the exchange (`rows` of them), when its compressor has a batched
// form; with error feedback of `feedback`, read at `feedback_key`.
template <typename T>
std::unique_ptr<Senders<T>> BatchedSenders(const OptionTable& options,
                                           const CompressorMaker<T>& maker,
                                           const BatchedContext& context, bool server,
                                           FeedbackKind feedback, std::string_view feedback_key) {
  const SenderFormat<T> format{maker, context.shape()};
  bool with_feedback = false;
  if (feedback == FeedbackKind::kClassic) {
    with_feedback = true;
  } else if (feedback != FeedbackKind::kNone) {
    options.Fail(feedback_key, fmt::format("{} = \"{}\" has no batched (GPU) form yet; those that "
                                           "have: \"none\", \"classic\"",
                                           feedback_key, FeedbackName(feedback)));
  }
  std::unique_ptr<Senders<T>> senders =
      server ? MakeSenders<T>(format, with_feedback, 1, context, Purpose::kServerCompression,
                              kServerStream)
             : MakeSenders<T>(format, with_feedback, context.workers, context,
                              Purpose::kWorkerCompression, 0);
  if (senders == nullptr) {
    options.Fail(server ? "server_compressor" : "compressor",
                 fmt::format("the {} compressor '{}' has no batched (GPU) form yet; those "
                             "that have: {}",
                             server ? "server" : "worker", maker(context.shape())->name(),
                             BatchedCompressorNames()));
  }
  return senders;
}

// An optimizer whose exchange compresses on both sides (Birder, 1-bit Adam, 1-bit LAMB, 0/1
// Adam), built from the exchange's options.
template <typename T, typename Optimizer, typename Options>
std::unique_ptr<BatchedOptimizer<T>> WithTwoSidedExchange(OptionTable& options,
                                                          const Options& optimizer_options,
                                                          const ExchangeDefaults& defaults,
                                                          const BatchedContext& context) {
  const ExchangeConfig<T> exchange = ExchangeFromOptions<T>(options, defaults);
  return std::make_unique<Optimizer>(
      optimizer_options,
      BatchedSenders<T>(options, exchange.worker_compressor, context, false,
                        exchange.worker_feedback, "worker_feedback"),
      BatchedSenders<T>(options, exchange.server_compressor, context, true,
                        exchange.server_feedback, "server_feedback"),
      context);
}

template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeBirder(OptionTable& options,
                                                const BatchedContext& context) {
  const BirderOptions o = ReadBirderOptions(options, /*read_t0=*/true);
  return WithTwoSidedExchange<T, Birder<T>>(options, o, kBirderDefaults, context);
}

template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeDistSpams(OptionTable& options,
                                                   const BatchedContext& context) {
  const SpamsOptions o = ReadSpamsOptions(options);
  const ExchangeConfig<T> exchange = ExchangeFromOptions<T>(options, kDistSpamsDefaults);
  return std::make_unique<DistSpams<T>>(
      o,
      BatchedSenders<T>(options, exchange.worker_compressor, context, false,
                        exchange.worker_feedback, "worker_feedback"),
      context);
}

template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeEf21(OptionTable& options, std::string_view name,
                                              const BatchedContext& context) {
  const bool momentum = name == "ef21-sgdm";
  const ExchangeConfig<T> exchange = Ef21ExchangeFromOptions<T>(options, name);
  const Ef21Options o = ReadEf21Options(options, momentum);
  return std::make_unique<Ef21<T>>(
      o,
      BatchedSenders<T>(options, exchange.worker_compressor, context, false,
                        exchange.worker_feedback, "worker_feedback"),
      BatchedSenders<T>(options, exchange.server_compressor, context, true,
                        exchange.server_feedback, "server_feedback"),
      context);
}

template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeOneBitAdam(OptionTable& options,
                                                    const BatchedContext& context) {
  const OneBitAdamOptions o = ReadOneBitAdamOptions(options, /*read_local_momentum=*/true);
  // Read as the CPU optimizer reads it (its options validated alike).
  const std::string warmup(MakeCompressorMaker<T>(*options.GetComponent(
      "warmup_compressor", "identity"))(context.shape())
                               ->name());
  if (warmup != "identity") {
    options.Fail("warmup_compressor",
                 fmt::format("warmup_compressor '{}' has no batched (GPU) form yet; the "
                             "warmup sends the gradients as they are (\"identity\")",
                             warmup));
  }
  return WithTwoSidedExchange<T, OneBitAdam<T>>(options, o, kOneBitAdamDefaults, context);
}

// The optimizers with a batched form, each with its factory (which reads the options as the CPU
// optimizer's does): the one list both the names and MakeBatchedOptimizer come from.
template <typename T>
struct BatchedEntry {
  std::string_view name;
  std::unique_ptr<BatchedOptimizer<T>> (*make)(OptionTable& options, std::string_view name,
                                               const BatchedContext& context);
};

template <typename T>
std::span<const BatchedEntry<T>> BatchedEntries() {
  using Made = std::unique_ptr<BatchedOptimizer<T>>;
  static const BatchedEntry<T> entries[] = {
      {"sgd",
       [](OptionTable&, std::string_view, const BatchedContext& context) -> Made {
         return std::make_unique<Sgd<T>>(context);
       }},
      {"adam",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return std::make_unique<Adam<T>>(ReadAdamOptions(options, AdamOptions{}), context);
       }},
      {"birder",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return MakeBirder<T>(options, context);
       }},
      {"onebit-adam",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return MakeOneBitAdam<T>(options, context);
       }},
      {"lamb",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return std::make_unique<Lamb<T>>(ReadLambOptions(options, /*read_bias_correction=*/true),
                                          context);
       }},
      {"onebit-lamb",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return WithTwoSidedExchange<T, OneBitLamb<T>>(options, ReadOneBitLambOptions(options),
                                                       kOneBitLambDefaults, context);
       }},
      {"zero-one-adam",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return WithTwoSidedExchange<T, ZeroOneAdam<T>>(options, ReadZeroOneAdamOptions(options),
                                                        kOneBitAdamDefaults, context);
       }},
      {"dist-spams",
       [](OptionTable& options, std::string_view, const BatchedContext& context) -> Made {
         return MakeDistSpams<T>(options, context);
       }},
      {"ef21", &MakeEf21<T>},
      {"ef21-sgdm", &MakeEf21<T>},
  };
  return entries;
}

}  // namespace

template <typename T>
bool BatchedOptimizer<T>::CanKeepCompressionRecords() const {
  return !ExchangeSenders().empty();
}

template <typename T>
void BatchedOptimizer<T>::KeepCompressionRecords() {
  for (Senders<T>* senders : ExchangeSenders()) senders->KeepRecords();
}

template <typename T>
bool BatchedOptimizer<T>::LastCompression(int worker, std::int64_t t,
                                          CompressionRecord<T>& record) const {
  const std::vector<Senders<T>*> senders = ExchangeSenders();
  const std::size_t side = worker == kServer ? 1 : 0;
  if (side >= senders.size() || !senders[side]->CompressedAt(t)) return false;
  senders[side]->Record(worker == kServer ? 0 : worker, record);
  return true;
}

template class BatchedOptimizer<float>;
template class BatchedOptimizer<double>;

std::span<const std::string_view> BatchedOptimizerNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> found;
    for (const BatchedEntry<float>& entry : BatchedEntries<float>()) found.push_back(entry.name);
    return found;
  }();
  return names;
}

template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeBatchedOptimizer(OptionTable& options,
                                                          const BatchedContext& context) {
  const std::string_view name = Optimizers().Get(options).name;  // unknown names as in a run
  const auto entries = BatchedEntries<T>();
  const auto entry = std::find_if(entries.begin(), entries.end(),
                                  [&](const BatchedEntry<T>& e) { return e.name == name; });
  if (entry == entries.end()) {
    options.Fail("name",
                 fmt::format("optimizer '{}' has no batched (GPU) form yet; those that have: {}",
                             name, fmt::join(BatchedOptimizerNames(), ", ")));
  }
  std::unique_ptr<BatchedOptimizer<T>> optimizer = entry->make(options, name, context);
  if (WeightDecayFromOptions(options, 0.0).lambda != 0) {
    options.Fail("weight_decay", "weight_decay has no batched (GPU) form yet; set it to 0");
  }
  options.RejectUnknownKeys();
  return optimizer;
}

template std::unique_ptr<BatchedOptimizer<float>> MakeBatchedOptimizer(OptionTable&,
                                                                       const BatchedContext&);
template std::unique_ptr<BatchedOptimizer<double>> MakeBatchedOptimizer(OptionTable&,
                                                                        const BatchedContext&);

}  // namespace lemmalab::batched
