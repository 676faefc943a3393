#include "optimizers/zero_one_adam.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "optimizers/compressed_exchange.h"
#include "optimizers/full_precision_wire.h"
#include "optimizers/one_bit_adam.h"

namespace lemmalab {
namespace {

// Whether t is one of k_1 = start, k_{j+1} = k_j + min(2^floor(j / per_level), cap): per_level
// points one step apart (k_1..k_per_level), then per_level points 2 apart, then 4 apart, ...,
// the gap never above cap.
bool InGrowingSchedule(std::int64_t t, std::int64_t start, std::int64_t per_level,
                       std::int64_t cap) {
  if (t < start) return false;
  std::int64_t last = start + per_level - 1;  // k_per_level, the end of level 0 (gaps of 1)
  if (t <= last) return true;
  for (std::int64_t gap = 2;; gap *= 2) {
    if (gap >= cap) return (t - last) % cap == 0;  // every gap from here on is the cap
    const std::int64_t end = last + per_level * gap;
    if (t <= end) return (t - last) % gap == 0;
    last = end;
  }
}

constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max();

// The trace's names (optimizers/trace.h).
constexpr StateTag kWorkerMomentum = {
    {"m", "0/1 Adam Alg. 1 (m_{t+1/2})", "m^(i) = beta1 m^(i) + (1 - beta1) g_t^(i)"},
    Quantity::kMomentum};
constexpr StateTag kBuffer = {
    {"u", "0/1 Adam Alg. 1 (u_{t+1/2})", "u^(i) = u^(i) + gamma_t m^(i), since the last sync"}};
constexpr StateTag kLocalModel = {
    {"x_i", "0/1 Adam Alg. 1 (x_{t+1/2})", "x^(i) = x^(i) - gamma_t m^(i) / (sqrt(v) + eps)"}};
constexpr StateTag kSyncedMomentum = {
    {"m", "0/1 Adam Alg. 1 (m_{t+1})",
     "m = u_bar / sum of gamma since the last sync (variance_sync full-precision, t in T_v: "
     "beta1 m + (1 - beta1) g_bar)"},
    Quantity::kMomentum};
// Frozen after step var_freeze_step = max T_v (then also kFrozenVariance).
constexpr StateTag kVariance = {
    {"v", "0/1 Adam Alg. 1 (v_{t+1})", "v = beta2 v + (1 - beta2) g_bar^2 on T_v, else unchanged"},
    Quantity::kVariance};
const ExchangeSymbols kUExchange = {
    .worker = {{"u+delta", "0/1 Adam Alg. 1 (1-bit all-reduce of u)", "u^(i) + delta^(i)"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C(u+delta)", "0/1 Adam Alg. 1 (1-bit all-reduce of u)",
                "C[u^(i) + delta^(i)]: scale times sign"},
               {"s", "0/1 Adam Alg. 1; onebit-adam.txt Sec. 4", "the scale of C(u + delta)"},
               {"delta", "0/1 Adam Alg. 1 (error feedback)", "u^(i) + delta^(i) - C(...)"}},
    .mean = {"mean C(u)", "0/1 Adam Alg. 1 (1-bit all-reduce of u)", "(1/n) sum_i C(u^(i) + ...)"},
    .server = {{"mean+delta_bar", "0/1 Adam Alg. 1 (1-bit all-reduce of u)",
                "(1/n) sum_i C(...) + delta_bar"},
               {"r", "the compressor's draw rule", kServerWords},
               {"u_bar", "0/1 Adam Alg. 1 (u_bar_{t+1/2})", "C[mean + delta_bar]"},
               {"s", "0/1 Adam Alg. 1; onebit-adam.txt Sec. 4", "the scale of u_bar"},
               {"delta_bar", "0/1 Adam Alg. 1 (error feedback)", "mean + delta_bar - u_bar"}},
};

// Appends `part` to `whole`.
void Append(const Message& part, Message& whole) {
  whole.bytes.insert(whole.bytes.end(), part.bytes.begin(), part.bytes.end());
}

template <typename T>
class ZeroOneAdam final : public DistributedOptimizer<T> {
 public:
  ZeroOneAdam(const ZeroOneAdamOptions& options, const ExchangeConfig<T>& exchange,
              const OptimizerContext& context)
      : options_(options),
        beta1_(static_cast<T>(options.beta1)),
        beta2_(static_cast<T>(options.beta2)),
        eps_(static_cast<T>(options.eps)),
        d_(context.dimension),
        wire_(Flat(context)),
        exchange_(exchange, Flat(context)),
        v_(Vector<T>::Zero(context.dimension)),
        m_(Vector<T>::Zero(context.dimension)),
        g_bar_(Vector<T>::Zero(context.dimension)),
        u_bar_(Vector<T>::Zero(context.dimension)),
        workers_(static_cast<std::size_t>(context.workers)),
        stats_(static_cast<std::size_t>(context.workers)) {
    for (int i = 0; i < context.workers; ++i) {
      if (!context.Runs(i)) continue;  // a worker another process runs: no state here
      Worker& w = workers_[static_cast<std::size_t>(i)];
      w.local = true;
      w.m = Vector<T>::Zero(d_);
      w.u = Vector<T>::Zero(d_);
    }
    SetDenominator();
    exchange_.set_symbols(kUExchange);
  }

  StepSymbols step_symbols() const override {
    return {.gradient = {"g", "0/1 Adam Alg. 1", "g_t^(i) at the worker's own x^(i)"},
            .parameters = {"x", "0/1 Adam Alg. 1 (x_{t+1})",
                           "the synchronised model x_{t'}: x_{t'} - u_bar / (sqrt(v) + eps) at a "
                           "sync, unchanged on local steps"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> x, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    if (w.x.size() == 0) w.x = x;  // the first step: every replica starts at x_0
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, ctx.t);
    const T lr = static_cast<T>(ctx.lr);
    w.m = beta1_ * w.m + (T(1) - beta1_) * g;  // m_{t+1/2}^(i)
    EncodeStats& stats = stats_[static_cast<std::size_t>(worker)];
    stats = {};
    out.bytes.clear();
    if (kind.full_precision) stats += wire_.Send(g, out);  // t in T_v: g_t^(i) for g_bar_t
    if (FullPrecisionSync(kind)) return;  // Apply takes Adam's step from g_bar (zoadam.py)
    w.x.array() -= lr * (w.m.array() / denominator_.array());  // x_{t+1/2}^(i)
    w.u += lr * w.m;                                           // u_{t+1/2}^(i)
    if (const TraceScope trace = ctx.Trace(worker)) {
      trace.Vector<T>(kWorkerMomentum.symbol, w.m);
      trace.Vector<T>(kBuffer.symbol, w.u);
      trace.Vector<T>(kLocalModel.symbol, w.x);
    }
    if (!kind.one_bit) return;  // a local step: nothing crosses the network
    // t in T_u: C(u^(i) + delta^(i)), after the raw g_t^(i) when t is in T_v too
    exchange_.Send(ctx, worker, w.u, kind.full_precision ? w.part : out);
    stats += *exchange_.LastEncode(worker);
    if (kind.full_precision) Append(w.part, out);
  }

  void ServerStep(const StepContext& ctx, int /*chunk*/, std::span<const Message> received,
                  Message& out) override {
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, ctx.t);
    const std::size_t fp_bytes =
        kind.full_precision ? static_cast<std::size_t>(d_) * sizeof(T) : std::size_t{0};
    server_stats_ = {};
    out.bytes.clear();
    for (std::size_t i = 0; i < received.size(); ++i) {
      const std::vector<std::uint8_t>& bytes = received[i].bytes;
      LEMMALAB_CHECK(bytes.size() >= fp_bytes && (kind.one_bit || bytes.size() == fp_bytes),
                     "zero-one-adam: worker {} sent {} bytes at t = {}, where the schedule has {} "
                     "full-precision bytes{}",
                     i, bytes.size(), ctx.t, fp_bytes, kind.one_bit ? " and a 1-bit u" : "");
    }
    // The messages are cut only when they hold both parts (t in T_v and T_u, variance_sync
    // "one-bit"); otherwise each is its one part, and so is the reply.
    const bool both = kind.full_precision && kind.one_bit;
    std::span<const Message> fp_parts = received, bit_parts = received;
    if (both) {
      fp_parts_.resize(received.size());
      bit_parts_.resize(received.size());
      for (std::size_t i = 0; i < received.size(); ++i) {
        const std::vector<std::uint8_t>& bytes = received[i].bytes;
        const auto split = bytes.begin() + static_cast<std::ptrdiff_t>(fp_bytes);
        fp_parts_[i].bytes.assign(bytes.begin(), split);
        bit_parts_[i].bytes.assign(split, bytes.end());
      }
      fp_parts = fp_parts_;
      bit_parts = bit_parts_;
    }
    if (kind.full_precision) {  // g_bar_t = (1/n) sum_i g_t^(i), in full precision
      server_stats_ += wire_.Reduce(0, fp_parts, out);
    }
    if (kind.one_bit) {  // u_bar = C((1/n) sum_i C(u^(i) + delta^(i)) + delta_bar)
      exchange_.Reduce(ctx, 0, bit_parts, both ? part_ : out);
      server_stats_ += *exchange_.LastEncode(kServer);
      if (both) Append(part_, out);
    }
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    t_ = ctx.t;
    const ZeroOneAdamStep kind = ZeroOneAdamStepAt(options_, ctx.t);
    const T lr = static_cast<T>(ctx.lr);
    LEMMALAB_CHECK(reply.size() == 1, "zero-one-adam: {} reply parts for one chunk", reply.size());
    const std::vector<std::uint8_t>& bytes = reply.front().bytes;
    std::size_t fp_bytes = 0;
    if (kind.full_precision) {  // t in T_v: v_{t+1} = beta2 v_t + (1 - beta2) g_bar_t^2
      fp_bytes = static_cast<std::size_t>(d_) * sizeof(T);
      LEMMALAB_CHECK(bytes.size() >= fp_bytes, "zero-one-adam: a reply of {} bytes at t = {}",
                     bytes.size(), ctx.t);
      const Message* raw = &reply.front();  // the whole reply, unless the 1-bit u_bar follows
      if (kind.one_bit) {
        part_.bytes.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(fp_bytes));
        raw = &part_;
      }
      wire_.Receive(std::span<const Message>(raw, 1), g_bar_);
      v_ = beta2_ * v_ + (T(1) - beta2_) * g_bar_.cwiseAbs2();
      SetDenominator();
    }
    if (FullPrecisionSync(kind)) {
      // zoadam.py's variance step: m and x from the exact mean gradient, as Adam (Eq. 1 of
      // onebit-adam.txt, without bias correction) and as 1-bit Adam's warmup.
      m_ = beta1_ * m_ + (T(1) - beta1_) * g_bar_;
      x.array() -= lr * (m_.array() / denominator_.array());
      Synchronised(x);
    } else if (kind.one_bit) {
      lr_sum_ += ctx.lr;  // sum_{h=t'}^{t} gamma_h
      // The whole reply, unless the raw g_bar precedes the 1-bit u_bar.
      const Message* bits = &reply.front();
      if (kind.full_precision) {
        part_.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(fp_bytes), bytes.end());
        bits = &part_;
      }
      exchange_.Receive(std::span<const Message>(bits, 1), u_bar_);
      m_ = u_bar_ / static_cast<T>(lr_sum_);               // m_{t+1} = u_bar / sum gamma
      x.array() -= u_bar_.array() / denominator_.array();  // x_{t+1} = x_{t'} - u_bar / (...)
      Synchronised(x);
    } else {
      LEMMALAB_CHECK(bytes.empty(), "zero-one-adam: a reply of {} bytes on local step {}",
                     bytes.size(), ctx.t);
      lr_sum_ += ctx.lr;  // a local step: x stays x_{t'}
    }
    if (const TraceScope trace = ctx.Trace(kServer)) {
      if (kind.full_precision || kind.one_bit) trace.Vector<T>(kSyncedMomentum.symbol, m_);
      trace.Vector<T>(kVariance.symbol, v_);
    }
  }

  // Flat, one chunk: the message holds a raw part and a 1-bit part.
  bool SupportsChunks() const override { return false; }
  bool SupportsHierarchy() const override { return false; }

  const Vector<T>* LocalParameters(int worker) const override {
    const Worker& w = workers_[static_cast<std::size_t>(worker)];
    return w.x.size() == 0 ? nullptr : &w.x;
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.Nested("exchange", exchange_);
    state.PerWorker(workers_, [&](Worker& w) {
      state.Own(kWorkerMomentum, w.m);
      state.Later(kLocalModel.symbol.name, w.x, d_);  // the replica, from the first local step on
      state.Own(kBuffer, w.u);
    });
    state.Server(kSyncedMomentum, m_);
    state.Replicated(kVariance, v_);
    state.Shows(Quantity::kFrozenVariance, v_, t_ >= options_.var_freeze_step);
    state.Value("denominator", denominator_);
    state.Value("lr_sum", lr_sum_);
    state.Value("t", t_);
  }

  // This step's messages: the raw gradient's and the 1-bit u's statistics, summed; nothing on a
  // local step.
  const EncodeStats* LastEncode(int worker) const override {
    return worker == kServer ? &server_stats_ : &stats_[static_cast<std::size_t>(worker)];
  }
  bool KeepCompressionRecords() override { return exchange_.KeepCompressionRecords(); }
  bool CanKeepCompressionRecords() const override { return exchange_.CanKeepCompressionRecords(); }
  // The compressions of this step only: none on a local or full-precision step (the record of
  // the last 1-bit sync is not this step's).
  const CompressionRecord<T>* LastCompression(int worker) const override {
    return t_ > 0 && ZeroOneAdamStepAt(options_, t_).one_bit ? exchange_.LastCompression(worker)
                                                             : nullptr;
  }

 private:
  struct Worker {
    Vector<T> m;   // m^(i)
    Vector<T> x;   // x^(i); empty before the first step
    Vector<T> u;   // u^(i), the lr-weighted momenta since the last sync
    Message part;  // scratch: the 1-bit part of a message that holds both parts
    bool local = false;
  };

  // The exchange and the wire serve one chunk: the cluster refuses the chunked schemes
  // (SupportsChunks is false), whatever layout the optimizer is built for.
  static OptimizerContext Flat(OptimizerContext context) {
    context.layout = {};
    return context;
  }

  bool FullPrecisionSync(const ZeroOneAdamStep& kind) const {
    return kind.full_precision && options_.variance_sync == VarianceSync::kFullPrecision;
  }

  void SetDenominator() {
    if (options_.eps_placement == EpsPlacement::kOutside) {
      denominator_ = v_.array().sqrt() + eps_;
    } else {
      denominator_ = (v_.array() + eps_).sqrt();
    }
  }

  // After a sync every replica holds the synchronised m and x, and its buffer u restarts
  // (t' = t + 1).
  void Synchronised(VectorRef<T> x) {
    lr_sum_ = 0;
    for (Worker& w : workers_) {
      if (!w.local) continue;
      w.m = m_;
      w.x = x;
      w.u.setZero();
    }
  }

  ZeroOneAdamOptions options_;
  T beta1_, beta2_, eps_;
  Eigen::Index d_;
  FullPrecisionWire<T> wire_;       // the gradients of T_v
  CompressedExchange<T> exchange_;  // the 1-bit all-reduce of u
  Vector<T> v_;                     // v, every replica's
  Vector<T> m_;                     // the synchronised m
  Vector<T> denominator_;           // sqrt(v) + eps (or sqrt(v + eps)), recomputed when v changes
  Vector<T> g_bar_, u_bar_;         // scratch: the decoded replies
  double lr_sum_ = 0;               // sum of gamma_h since the last sync
  std::int64_t t_ = 0;              // the last step applied
  std::vector<Worker> workers_;
  std::vector<EncodeStats> stats_;  // this step's, per worker
  EncodeStats server_stats_;
  Message part_;                               // scratch of the server and Apply phases
  std::vector<Message> fp_parts_, bit_parts_;  // scratch: the two parts of messages holding both
};

}  // namespace

ZeroOneAdamOptions ReadZeroOneAdamOptions(OptionTable& options) {
  ZeroOneAdamOptions o;
  o.beta1 = options.GetDouble("beta1", o.beta1, kMovingAverageFactor);
  o.beta2 = options.GetDouble("beta2", o.beta2, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  o.eps_placement = EpsPlacementFromOptions(options, o.eps_placement);
  o.var_freeze_step = options.GetInt("var_freeze_step", o.var_freeze_step, 0);
  o.var_update_scaler = options.GetInt("var_update_scaler", o.var_update_scaler, 1);
  o.local_step_scaler = options.GetInt("local_step_scaler", o.local_step_scaler, 1);
  o.local_step_clipper = options.GetInt("local_step_clipper", o.local_step_clipper, 1);
  static const std::vector<std::string> kSyncs = {"full-precision", "one-bit"};
  o.variance_sync = options.GetChoice("variance_sync", "full-precision", kSyncs) == "one-bit"
                        ? VarianceSync::kOneBit
                        : VarianceSync::kFullPrecision;
  return o;
}

bool InVarianceSchedule(const ZeroOneAdamOptions& options, std::int64_t t) {
  return t >= 1 && t <= options.var_freeze_step &&
         InGrowingSchedule(t, 1, options.var_update_scaler, kNoCap);
}

bool InSyncSchedule(const ZeroOneAdamOptions& options, std::int64_t t) {
  if (t < 1) return false;
  if (t <= options.var_freeze_step) return true;
  return InGrowingSchedule(t, options.var_freeze_step + 1, options.local_step_scaler,
                           options.local_step_clipper);
}

ZeroOneAdamStep ZeroOneAdamStepAt(const ZeroOneAdamOptions& options, std::int64_t t) {
  ZeroOneAdamStep step;
  step.full_precision = InVarianceSchedule(options, t);
  step.one_bit = InSyncSchedule(options, t) &&
                 !(step.full_precision && options.variance_sync == VarianceSync::kFullPrecision);
  return step;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> ZeroOneAdamFromOptions(OptionTable& options,
                                                                const OptimizerContext& context) {
  const ZeroOneAdamOptions o = ReadZeroOneAdamOptions(options);
  return std::make_unique<ZeroOneAdam<T>>(o, ExchangeFromOptions<T>(options, kOneBitAdamDefaults),
                                          context);
}

template std::unique_ptr<DistributedOptimizer<float>> ZeroOneAdamFromOptions(
    OptionTable&, const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> ZeroOneAdamFromOptions(
    OptionTable&, const OptimizerContext&);

}  // namespace lemmalab
