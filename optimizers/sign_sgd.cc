#include "optimizers/sign_sgd.h"

#include <string>
#include <vector>

#include "compressors/identity.h"

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
        server_wire_(MakeIdentity<T>()),
        mean_(context.dimension),
        reply_(context.dimension) {
    for (Worker& w : workers_) w.wire = MakeIdentity<T>();
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    TrueSign<T>(g, w.sign);
    PhiloxStream unused =
        ctx.Stream(Purpose::kWorkerCompression, static_cast<std::uint32_t>(worker));
    w.stats = w.wire->Encode(w.sign, unused, out);
  }

  void ServerStep(const StepContext& ctx, std::span<const Message> received,
                  Message& out) override {
    MeanOfMessages(*server_wire_, received, mean_);
    // sign(mean) = sign(sum): dividing integers of magnitude <= n by n keeps their sign.
    if (options_.aggregate == SignAggregate::kMajority) {
      TrueSign<T>(mean_, reply_);
    } else {
      reply_ = mean_;
    }
    PhiloxStream unused = ctx.Stream(Purpose::kServerCompression, kServerStream);
    server_stats_ = server_wire_->Encode(reply_, unused, out);
  }

  void Apply(const StepContext& ctx, const Message& broadcast, VectorRef<T> x) override {
    server_wire_->Decode(broadcast, reply_);
    x -= static_cast<T>(ctx.lr) * reply_;
  }

  const EncodeStats* LastEncode(int worker) const override {
    return worker == kServer ? &server_stats_ : &workers_[static_cast<std::size_t>(worker)].stats;
  }

 private:
  struct Worker {
    std::unique_ptr<Compressor<T>> wire;
    Vector<T> sign;
    EncodeStats stats;
  };

  SignSgdOptions options_;
  std::vector<Worker> workers_;
  std::unique_ptr<Compressor<T>> server_wire_;
  EncodeStats server_stats_;
  Vector<T> mean_, reply_;
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
