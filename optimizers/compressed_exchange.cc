#include "optimizers/compressed_exchange.h"

#include <string>
#include <vector>

#include "compressors/identity.h"

namespace lemmalab {

LocalMomentum LocalMomentumFromOptions(OptionTable& options) {
  static const std::vector<std::string> kChoices = {"sync", "own"};
  return options.GetChoice("local_momentum", "sync", kChoices) == "own" ? LocalMomentum::kOwn
                                                                        : LocalMomentum::kSync;
}

template <typename T>
ExchangeConfig<T> ExchangeFromOptions(OptionTable& options, const ExchangeDefaults& defaults) {
  ExchangeConfig<T> config;
  config.worker_compressor =
      MakeCompressorMaker<T>(*options.GetComponent("compressor", defaults.compressor));
  config.worker_feedback =
      FeedbackFromOptions(options, "worker_feedback", defaults.worker_feedback);
  if (!defaults.server_options) {
    config.server_compressor = [](const CompressorShape&) { return MakeIdentity<T>(); };
    config.server_feedback = FeedbackKind::kNone;
    return config;
  }
  if (options.Has("server_compressor") || !defaults.server_recompresses) {
    config.server_compressor =
        MakeCompressorMaker<T>(*options.GetComponent("server_compressor", "identity"));
  } else {
    config.server_compressor = config.worker_compressor;
  }
  options.Describe("server_compressor",
                   defaults.server_recompresses
                       ? "a component; default: the same configuration as compressor"
                       : "a component; default 'identity' (the mean is sent as is)");
  config.server_feedback =
      FeedbackFromOptions(options, "server_feedback", defaults.server_feedback);
  return config;
}

template <typename T>
CompressedExchange<T>::CompressedExchange(const ExchangeConfig<T>& config,
                                          const OptimizerContext& context)
    : server_{ErrorFeedback<T>(config.server_feedback, context.dimension),
              config.server_compressor(context.shape()),
              {}},
      worker_decoder_(config.worker_compressor(context.shape())),
      mean_(Vector<T>::Zero(context.dimension)) {
  workers_.reserve(static_cast<std::size_t>(context.workers));
  for (int i = 0; i < context.workers; ++i) {
    workers_.push_back({ErrorFeedback<T>(config.worker_feedback, context.dimension),
                        config.worker_compressor(context.shape()),
                        {}});
  }
}

template <typename T>
void CompressedExchange<T>::Send(const StepContext& ctx, int worker, ConstVectorRef<T> y,
                                 Message& out) {
  Sender& w = workers_[static_cast<std::size_t>(worker)];
  PhiloxStream stream = ctx.Stream(Purpose::kWorkerCompression, static_cast<std::uint32_t>(worker));
  w.stats = w.ef.Compress(y, *w.compressor, stream, out, ctx.lr);
}

template <typename T>
void CompressedExchange<T>::Reduce(const StepContext& ctx, std::span<const Message> received,
                                   Message& out) {
  Average(received);
  PhiloxStream stream = ctx.Stream(Purpose::kServerCompression, kServerStream);
  server_.stats = server_.ef.Compress(mean_, *server_.compressor, stream, out, ctx.lr);
}

template <typename T>
void CompressedExchange<T>::Average(std::span<const Message> received) {
  MeanOfMessages(*worker_decoder_, received, mean_);
}

template <typename T>
void CompressedExchange<T>::Receive(const Message& reply, Vector<T>& out) const {
  server_.compressor->Decode(reply, out);
}

template <typename T>
const Vector<T>* CompressedExchange<T>::WorkerError(int worker) const {
  const Sender& w = workers_[static_cast<std::size_t>(worker)];
  return w.ef.enabled() ? &w.ef.error() : nullptr;
}

template <typename T>
const Vector<T>* CompressedExchange<T>::ServerError() const {
  return server_.ef.enabled() ? &server_.ef.error() : nullptr;
}

template <typename T>
const Vector<T>* CompressedExchange<T>::Observe(Quantity quantity, int worker) const {
  if (quantity == Quantity::kServerError && worker == kServer) return ServerError();
  if (quantity == Quantity::kWorkerError && worker != kServer) return WorkerError(worker);
  return nullptr;
}

template <typename T>
const EncodeStats* CompressedExchange<T>::LastEncode(int worker) const {
  return worker == kServer ? &server_.stats : &workers_[static_cast<std::size_t>(worker)].stats;
}

#define LEMMALAB_INSTANTIATE(T)                                                             \
  template ExchangeConfig<T> ExchangeFromOptions<T>(OptionTable&, const ExchangeDefaults&); \
  template class CompressedExchange<T>;
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
