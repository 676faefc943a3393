#include "optimizers/local_sgd.h"

#include <vector>

#include "core/error.h"
#include "optimizers/full_precision_wire.h"

namespace lemmalab {
namespace {

// local-sgdm's worker momentum.
constexpr StateTag kMomentum = {
    {"m", "local_sgd.h", "m^(i) = beta m^(i) + (1 - beta) g^(i), x^(i) -= alpha_t m^(i)"},
    Quantity::kMomentum};

template <typename T>
class LocalSgd final : public DistributedOptimizer<T> {
 public:
  LocalSgd(const LocalSgdOptions& options, const OptimizerContext& context)
      : options_(options),
        d_(context.dimension),
        workers_(static_cast<std::size_t>(context.workers)),
        // The messages are (x, m) pairs of Sends() d values, in one chunk.
        wire_(OptimizerContext{Sends() * d_, context.workers}),
        mean_(Sends() * d_) {
    LEMMALAB_CHECK(options_.tau >= 1, "tau must be >= 1, got {}", options_.tau);
    for (int i = 0; i < context.workers; ++i) {
      if (!context.Runs(i)) continue;  // a worker another process runs: no state here
      Worker& w = workers_[static_cast<std::size_t>(i)];
      w.local = true;
      if (options_.beta) w.m = Vector<T>::Zero(d_);
      w.message.resize(Sends() * d_);
    }
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> x, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    if (w.x.size() == 0) w.x = x;  // the first step: every replica starts at x_0
    const T lr = static_cast<T>(ctx.lr);
    if (options_.beta) {
      const T beta = static_cast<T>(*options_.beta);
      w.m = beta * w.m + (T(1) - beta) * g;
      w.x -= lr * w.m;
    } else {
      w.x -= lr * g;
    }
    if (!Synchronises(ctx)) {
      out.bytes.clear();  // nothing crosses the network
      return;
    }
    w.message.head(d_) = w.x;
    if (AveragesMomentum()) w.message.tail(d_) = w.m;
    wire_.Send(w.message, out);
  }

  // One chunk only: the message is the pair (x, m), not a vector of the layout's dimension.
  void ServerStep(const StepContext& ctx, int /*chunk*/, std::span<const Message> received,
                  Message& out) override {
    if (!Synchronises(ctx)) {
      for (const Message& m : received) {
        LEMMALAB_CHECK(m.bytes.empty(), "local SGD: a worker sent {} bytes at t = {}, tau = {}",
                       m.bytes.size(), ctx.t, options_.tau);
      }
      out.bytes.clear();
      return;
    }
    wire_.Reduce(0, received, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    if (!Synchronises(ctx)) return;  // x is the model of the last synchronisation
    wire_.Receive(reply, mean_);
    x = mean_.head(d_);
    for (Worker& w : workers_) {
      if (!w.local) continue;
      w.x = x;
      if (AveragesMomentum()) w.m = mean_.tail(d_);
    }
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(workers_, [&](Worker& w) {
      state.Later("x", w.x, d_);  // the replica, from the first step on
      state.Own(kMomentum, w.m, /*seen=*/options_.beta.has_value());
    });
  }

  const Vector<T>* LocalParameters(int worker) const override {
    const Worker& w = workers_[static_cast<std::size_t>(worker)];
    return w.x.size() == 0 ? nullptr : &w.x;
  }

 private:
  struct Worker {
    Vector<T> x;         // x^(i); empty before the first step
    Vector<T> m;         // m^(i) (local-sgdm)
    Vector<T> message;   // x^(i), then m^(i) when the momentum is averaged
    bool local = false;  // run by this process
  };

  // Plain local SGD has no momentum to average, whatever the option says.
  bool AveragesMomentum() const { return options_.beta && options_.average_momentum; }
  Eigen::Index Sends() const { return AveragesMomentum() ? 2 : 1; }
  bool Synchronises(const StepContext& ctx) const { return ctx.t % options_.tau == 0; }

  LocalSgdOptions options_;
  Eigen::Index d_;
  std::vector<Worker> workers_;
  FullPrecisionWire<T> wire_;
  Vector<T> mean_;
};

std::int64_t ReadTau(OptionTable& options) {
  return options.GetInt("tau", LocalSgdOptions{}.tau, 1);
}

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeLocalSgd(const LocalSgdOptions& options,
                                                      const OptimizerContext& context) {
  return std::make_unique<LocalSgd<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LocalSgdFromOptions(OptionTable& options,
                                                             const OptimizerContext& context) {
  LocalSgdOptions o;
  o.tau = ReadTau(options);
  return MakeLocalSgd<T>(o, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> LocalSgdmFromOptions(OptionTable& options,
                                                              const OptimizerContext& context) {
  LocalSgdOptions o;
  o.tau = ReadTau(options);
  o.beta = options.GetDouble("beta", 0.9, kMovingAverageFactor);
  o.average_momentum = options.GetBool("average_momentum", o.average_momentum);
  return MakeLocalSgd<T>(o, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                                   \
  template std::unique_ptr<DistributedOptimizer<T>> MakeLocalSgd(const LocalSgdOptions&,          \
                                                                 const OptimizerContext&);        \
  template std::unique_ptr<DistributedOptimizer<T>> LocalSgdFromOptions(OptionTable&,             \
                                                                        const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> LocalSgdmFromOptions(OptionTable&,            \
                                                                         const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
