#include "optimizers/sign_sgd.h"

#include <string>
#include <vector>

#include "optimizers/full_precision_wire.h"

namespace lemmalab {
namespace {

// sign(v) with sign(0) = 0 and NaN kept as NaN.
template <typename T>
void TrueSign(ConstVectorRef<T> v, Vector<T>& out) {
  out = v.unaryExpr([](T a) { return a > 0 ? T(1) : a < 0 ? T(-1) : a == 0 ? T(0) : a; });
}

template <typename T>
class SignSgd final : public DistributedOptimizer<T> {
 public:
  SignSgd(const SignSgdOptions& options, const OptimizerContext& context)
      : options_(options),
        workers_(static_cast<std::size_t>(context.workers)),
        wire_(context),
        reply_(context.dimension) {}

  void WorkerStep(const StepContext& /*ctx*/, int worker, ConstVectorRef<T> /*x*/,
                  ConstVectorRef<T> g, Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    TrueSign<T>(g, w.sign);
    w.stats = wire_.Send(w.sign, out);
  }

  void ServerStep(const StepContext& /*ctx*/, int chunk, std::span<const Message> received,
                  Message& out) override {
    wire_.Average(chunk, received);
    auto mean = wire_.MeanChunk(chunk);
    // sign(mean) = sign(sum): dividing integers of magnitude <= n by n keeps their sign.
    if (options_.aggregate == SignAggregate::kMajority) {
      TrueSign<T>(mean, reply_);
      wire_.SendChunk(chunk, reply_, out);
    } else {
      wire_.SendChunk(chunk, mean, out);
    }
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    wire_.Receive(reply, reply_);
    x -= static_cast<T>(ctx.lr) * reply_;
  }

  void DeclareState(OptimizerState<T>& /*state*/) override {}  // each step's signs are its own

  // Chunks, but no hierarchy: a majority over node means is not the majority of the signs.
  bool SupportsChunks() const override { return true; }
  void Split(const StepContext& /*ctx*/, int /*worker*/, const Message& whole,
             std::vector<Message>& parts) override {
    wire_.Split(whole, parts);
  }

  const EncodeStats* LastEncode(int worker) const override {
    return worker == kServer ? &wire_.server_stats()
                             : &workers_[static_cast<std::size_t>(worker)].stats;
  }

 private:
  struct Worker {
    Vector<T> sign;
    EncodeStats stats;
  };

  SignSgdOptions options_;
  std::vector<Worker> workers_;
  FullPrecisionWire<T> wire_;
  Vector<T> reply_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSignSgd(const SignSgdOptions& options,
                                                     const OptimizerContext& context) {
  return std::make_unique<SignSgd<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SignSgdFromOptions(OptionTable& options,
                                                            const OptimizerContext& context) {
  static const std::vector<std::string> kAggregates = {"mean", "majority"};
  SignSgdOptions o;
  o.aggregate = options.GetChoice("aggregate", "mean", kAggregates) == "majority"
                    ? SignAggregate::kMajority
                    : SignAggregate::kMean;
  return MakeSignSgd<T>(o, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                           \
  template std::unique_ptr<DistributedOptimizer<T>> MakeSignSgd(const SignSgdOptions&,    \
                                                                const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> SignSgdFromOptions(OptionTable&,      \
                                                                       const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
