#include "optimizers/weight_decay.h"

#include <memory>
#include <string>
#include <vector>

namespace lemmalab {
namespace {

// The inner optimizer's view, with the gradients its worker phases consumed under l2 decay
// (g + lambda x), which probes that replay the update (birder-z) need instead of the problem's.
template <typename T>
class DecayedGradientsView final : public Observable<T> {
 public:
  DecayedGradientsView(Observable<T>& inner, const std::vector<Vector<T>>& gradients)
      : inner_(inner), gradients_(gradients) {}

  const Vector<T>* Observe(Quantity quantity, int worker) const override {
    return inner_.Observe(quantity, worker);
  }
  const EncodeStats* LastEncode(int worker) const override { return inner_.LastEncode(worker); }
  bool KeepCompressionRecords() override { return inner_.KeepCompressionRecords(); }
  bool CanKeepCompressionRecords() const override { return inner_.CanKeepCompressionRecords(); }
  const CompressionRecord<T>* LastCompression(int worker) const override {
    return inner_.LastCompression(worker);
  }
  std::span<const Vector<T>> ConsumedGradients() const override { return gradients_; }

 private:
  Observable<T>& inner_;
  const std::vector<Vector<T>>& gradients_;
};

template <typename T>
class WeightDecayed final : public DistributedOptimizer<T> {
 public:
  WeightDecayed(std::unique_ptr<DistributedOptimizer<T>> inner, const WeightDecay& decay,
                const OptimizerContext& context)
      : inner_(std::move(inner)), decay_(decay) {
    if (decay_.mode == WeightDecayMode::kL2) {
      gradients_ = LocalStates<T>(context);
      view_ = std::make_unique<DecayedGradientsView<T>>(inner_->observable(), gradients_);
    }
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> x, ConstVectorRef<T> g,
                  Message& out) override {
    if (decay_.mode == WeightDecayMode::kDecoupled) {
      inner_->WorkerStep(ctx, worker, x, g, out);
      return;
    }
    Vector<T>& decayed = gradients_[static_cast<std::size_t>(worker)];
    decayed = g + static_cast<T>(decay_.lambda) * x;
    if (const TraceScope trace = ctx.Trace(worker)) {
      trace.Vector<T>({"g+lambda x", "weight_decay_mode = \"l2\" (optimizers/weight_decay.h)",
                       "the gradient the algorithm consumes: g_t^(i) + lambda x_t"},
                      decayed);
    }
    inner_->WorkerStep(ctx, worker, x, decayed, out);
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    inner_->ServerStep(ctx, chunk, received, out);
  }

  bool SupportsChunks() const override { return inner_->SupportsChunks(); }
  bool SupportsHierarchy() const override { return inner_->SupportsHierarchy(); }
  void Split(const StepContext& ctx, int worker, const Message& whole,
             std::vector<Message>& parts) override {
    inner_->Split(ctx, worker, whole, parts);
  }
  void NodeStep(const StepContext& ctx, int node, int part, std::span<const Message> received,
                std::vector<Message>& out) override {
    inner_->NodeStep(ctx, node, part, received, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    if (decay_.mode == WeightDecayMode::kDecoupled) {
      x *= static_cast<T>(1.0 - ctx.lr * decay_.lambda);
      if (const TraceScope trace = ctx.Trace(kServer)) {
        trace.Vector<T>({"(1-alpha lambda) x", "weight_decay_mode = \"decoupled\"",
                         "x_t scaled by 1 - alpha_t lambda before the algorithm's update"},
                        x);
      }
    }
    inner_->Apply(ctx, reply, x);
  }

  StepSymbols step_symbols() const override { return inner_->step_symbols(); }

  // Decay itself carries nothing from one step to the next.
  void Persist(StateArchive& archive) override { inner_->Persist(archive); }

  const Vector<T>* LocalParameters(int worker) const override {
    return inner_->LocalParameters(worker);
  }
  Observable<T>& observable() override { return view_ ? *view_ : inner_->observable(); }

 private:
  std::unique_ptr<DistributedOptimizer<T>> inner_;
  WeightDecay decay_;
  std::vector<Vector<T>> gradients_;  // g + lambda x, one per worker (workers run in parallel)
  std::unique_ptr<DecayedGradientsView<T>> view_;  // l2 only
};

}  // namespace

WeightDecay WeightDecayFromOptions(OptionTable& options, double fallback) {
  static const std::vector<std::string> kModes = {"decoupled", "l2"};
  WeightDecay decay;
  decay.lambda = options.GetDouble("weight_decay", fallback, Interval::NonNegative());
  decay.mode = options.GetChoice("weight_decay_mode", "decoupled", kModes) == "l2"
                   ? WeightDecayMode::kL2
                   : WeightDecayMode::kDecoupled;
  return decay;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> WithWeightDecay(
    std::unique_ptr<DistributedOptimizer<T>> inner, const WeightDecay& decay,
    const OptimizerContext& context) {
  if (decay.lambda == 0) return inner;
  return std::make_unique<WeightDecayed<T>>(std::move(inner), decay, context);
}

template std::unique_ptr<DistributedOptimizer<float>> WithWeightDecay(
    std::unique_ptr<DistributedOptimizer<float>>, const WeightDecay&, const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> WithWeightDecay(
    std::unique_ptr<DistributedOptimizer<double>>, const WeightDecay&, const OptimizerContext&);

}  // namespace lemmalab
