#include "optimizers/compressed_exchange.h"

#include <string>
#include <vector>

#include "compressors/identity.h"
#include "core/error.h"

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

namespace {

// Cuts a message into the messages of the ranges [bounds[k], bounds[k+1]). One range needs no
// cut, whatever the format: its message is the whole one (a vector of d <= 64 coordinates is
// one chunk, and top-k, random-k and PowerSGD, which cannot split, run there).
template <typename T>
bool SplitMessage(const Compressor<T>& compressor, const Message& whole,
                  std::span<const std::int64_t> bounds, std::vector<Message>& parts) {
  if (bounds.size() == 2) {
    parts.assign(1, whole);
    return true;
  }
  return compressor.Split(whole, bounds, parts);
}

// Whether messages of `maker`'s configuration for `shape` split at `bounds`: a trial on a
// message of zeros, so a configuration that cannot is refused when the run is built (before any
// instance is made for a range, whose own complaint, "k = 4 is larger than the dimension
// d = 1", would not say what is wrong).
template <typename T>
void RequireSplit(const CompressorMaker<T>& maker, const CompressorShape& shape,
                  std::span<const std::int64_t> bounds) {
  if (bounds.size() <= 2) return;
  std::unique_ptr<Compressor<T>> trial = maker(shape);
  PhiloxStream stream({0, Purpose::kWorkerCompression, 0, 0});
  Message whole;
  std::vector<Message> parts;
  trial->Encode(Vector<T>::Zero(shape.dimension), stream, whole);
  if (!SplitMessage(*trial, whole, bounds, parts)) {
    throw UserError(fmt::format(
        "compressor '{}' cannot run under a chunked scheme: its messages cannot be cut into the "
        "messages of {} coordinate ranges (use scheme = \"parameter-server\" or \"allgather\", "
        "or a compressor whose messages split, such as scaled-sign or stochastic-binary)",
        trial->name(), bounds.size() - 1));
  }
}

}  // namespace

template <typename T>
CompressedExchange<T>::CompressedExchange(const ExchangeConfig<T>& config,
                                          const OptimizerContext& context)
    : config_(config),
      shape_(context.shape()),
      dimension_(context.dimension),
      layout_(context.layout),
      wire_(context),
      mean_(Vector<T>::Zero(context.dimension)) {
  const CompressorShape& shape = shape_;
  const std::vector<std::int64_t> ranges = layout_.WorkerBounds(dimension_);
  if (!layout_.hierarchical) {
    RequireSplit(config.worker_compressor, shape, ranges);
  } else {
    for (int r = 0; r < layout_.workers_per_node; ++r) {
      RequireSplit(config.worker_compressor, shape.Restrict(ranges[r], ranges[r + 1]),
                   layout_.NodeBounds(r));
    }
  }
  for (int c = 0; c < layout_.chunks(); ++c) {
    const auto [begin, end] = Chunk(c);
    const CompressorShape piece = shape.Restrict(begin, end);
    servers_.emplace_back(ErrorFeedback<T>(config.server_feedback, end - begin),
                          config.server_compressor(piece));
    decoders_.push_back(config.worker_compressor(piece));
  }
  if (!layout_.hierarchical) {
    workers_.reserve(static_cast<std::size_t>(context.workers));
    for (int i = 0; i < context.workers; ++i) {
      workers_.emplace_back(ErrorFeedback<T>(config.worker_feedback, context.LocalDimension(i)),
                            config.worker_compressor(shape.ForSender(i, context.workers)));
    }
    return;
  }
  // Hierarchical: worker k m + r holds the compression of node k's range r.
  LEMMALAB_CHECK(context.workers == layout_.nodes * layout_.workers_per_node,
                 "{} workers in a {} x {} layout", context.workers, layout_.nodes,
                 layout_.workers_per_node);
  for (int i = 0; i < context.workers; ++i) {
    const auto r = static_cast<std::size_t>(i % layout_.workers_per_node);
    const CompressorShape range = shape.Restrict(ranges[r], ranges[r + 1]);
    workers_.emplace_back(
        ErrorFeedback<T>(config.worker_feedback, context.Runs(i) ? range.dimension : 0),
        config.worker_compressor(range));
  }
}

template <typename T>
void CompressedExchange<T>::Send(const StepContext& ctx, int worker, ConstVectorRef<T> y,
                                 Message& out) {
  Sender& w = workers_[static_cast<std::size_t>(worker)];
  if (layout_.hierarchical) {
    w.stats = wire_.Send(y, out);
    return;
  }
  PhiloxStream stream = ctx.Stream(Purpose::kWorkerCompression, static_cast<std::uint32_t>(worker));
  const TraceScope trace = ctx.Trace(worker);
  LEMMALAB_CHECK(!trace || named_,
                 "a traced compressed exchange without symbols: its optimizer must name them "
                 "(CompressedExchange::set_symbols)");
  w.Compress(y, stream, out, ctx.lr, trace, symbols_.worker, 0);
}

template <typename T>
void CompressedExchange<T>::Split(const Message& whole, std::vector<Message>& parts) const {
  if (layout_.hierarchical) {
    wire_.Split(whole, parts);
    return;
  }
  const std::vector<std::int64_t> bounds = layout_.WorkerBounds(dimension_);
  const bool split = SplitMessage(*workers_.front().compressor, whole, bounds, parts);
  LEMMALAB_CHECK(split, "a {} message did not split", workers_.front().compressor->name());
}

template <typename T>
void CompressedExchange<T>::NodeStep(const StepContext& ctx, int node, int part,
                                     std::span<const Message> received, std::vector<Message>& out) {
  const int sender = node * layout_.workers_per_node + part;
  Sender& w = workers_[static_cast<std::size_t>(sender)];
  node_mean_.resize(w.ef.error().size());
  MeanOfRawMessages<T>(received, node_mean_);
  PhiloxStream stream = ctx.Stream(Purpose::kWorkerCompression, static_cast<std::uint32_t>(sender));
  Message whole;
  w.stats = w.ef.Compress(node_mean_, *w.compressor, stream, whole, ctx.lr);
  const bool split = SplitMessage(*w.compressor, whole, layout_.NodeBounds(part), out);
  LEMMALAB_CHECK(split, "a {} message did not split", w.compressor->name());
}

template <typename T>
Eigen::VectorBlock<const Vector<T>> CompressedExchange<T>::MeanChunk(int chunk) const {
  const auto [begin, end] = Chunk(chunk);
  return mean_.segment(begin, end - begin);
}

template <typename T>
void CompressedExchange<T>::Reduce(const StepContext& ctx, int chunk,
                                   std::span<const Message> received, Message& out) {
  Average(ctx, chunk, received);
  Sender& server = servers_[static_cast<std::size_t>(chunk)];
  PhiloxStream stream =
      ctx.Stream(Purpose::kServerCompression, kServerStream - static_cast<std::uint32_t>(chunk));
  // A chunk's scales are those of its own blocks, which the trace cannot number: traced when the
  // server's message is the whole vector only.
  SenderSymbols symbols = symbols_.server;
  if (layout_.chunks() > 1) symbols.scales.name = {};
  server.Compress(MeanChunk(chunk), stream, out, ctx.lr, ctx.Trace(kServer), symbols,
                  Chunk(chunk).first);
}

template <typename T>
void CompressedExchange<T>::Average(const StepContext& ctx, int chunk,
                                    std::span<const Message> received) {
  const auto [begin, end] = Chunk(chunk);
  auto segment = mean_.segment(begin, end - begin);
  segment.setZero();
  const Compressor<T>& decoder = *decoders_[static_cast<std::size_t>(chunk)];
  for (const Message& m : received) decoder.DecodeAdd(m, T(1), segment);
  segment /= static_cast<T>(received.size());
  if (const TraceScope trace = ctx.Trace(kServer); trace && !symbols_.mean.name.empty()) {
    trace.Vector<T>(symbols_.mean, segment, begin);
  }
}

template <typename T>
void CompressedExchange<T>::Receive(std::span<const Message> reply, Vector<T>& out) const {
  LEMMALAB_CHECK(reply.size() == servers_.size(), "{} reply parts for {} chunks", reply.size(),
                 servers_.size());
  out.resize(dimension_);
  for (int c = 0; c < layout_.chunks(); ++c) {
    const auto [begin, end] = Chunk(c);
    servers_[static_cast<std::size_t>(c)].compressor->Decode(reply[static_cast<std::size_t>(c)],
                                                             out.segment(begin, end - begin));
  }
}

template <typename T>
void CompressedExchange<T>::Persist(StateArchive& archive) {
  archive.Each("sender", workers_, [&](auto& sender) { sender.Persist(archive); });
  archive.Each("server chunk", servers_, [&](auto& server) { server.Persist(archive); });
}

template <typename T>
void CompressingSender<T>::Compress(ConstVectorRef<T> y, PhiloxStream& stream, Message& out,
                                    double lr, const TraceScope& trace,
                                    const SenderSymbols& symbols, std::int64_t offset) {
  const bool traced = trace && symbols.any();
  if (!record && !traced) {
    stats = ef.Compress(y, *compressor, stream, out, lr);
    return;
  }
  Vector<T>& u = record ? record->input : input;
  Vector<T>& decoded = record ? record->output : output;
  const PhiloxStream start = stream;
  if (ef.enabled()) u = ef.error();  // e_{t-1}, before Compress replaces it
  stats = ef.Compress(y, *compressor, stream, out, lr);
  if (ef.enabled()) {
    u = y + static_cast<T>(ef.last_factor()) * u;  // the fused kernel's y + a e, element by element
  } else {
    u = y;
  }
  decoded.resize(y.size());
  compressor->Decode(out, decoded);
  if (!traced) return;
  const auto named = [](const TraceSymbol& symbol) { return !symbol.name.empty(); };
  if (named(symbols.input)) trace.Vector<T>(symbols.input, u, offset);
  if (named(symbols.words) && compressor->draws_word_per_element()) {
    trace.Words(symbols.words, start, offset, y.size());
  }
  if (named(symbols.output)) trace.Vector<T>(symbols.output, decoded, offset);
  if (named(symbols.scales)) {
    if (const std::vector<double> scales = compressor->MessageScales(out); !scales.empty()) {
      trace.Indexed(symbols.scales, scales);
    }
  }
  if (named(symbols.error) && ef.enabled()) trace.Vector<T>(symbols.error, ef.error(), offset);
}

template <typename T>
void CompressingSender<T>::KeepRecords(const CompressorMaker<T>& maker,
                                       const CompressorShape& shape) {
  record = std::make_unique<CompressionRecord<T>>();
  record->compressor = compressor.get();
  record->maker = maker;
  record->shape = shape;
}

template <typename T>
bool CompressedExchange<T>::KeepCompressionRecords() {
  if (!CanKeepCompressionRecords()) return false;
  const int senders = static_cast<int>(workers_.size());
  for (int i = 0; i < senders; ++i) {
    workers_[static_cast<std::size_t>(i)].KeepRecords(config_.worker_compressor,
                                                      shape_.ForSender(i, senders));
  }
  for (int c = 0; c < layout_.chunks(); ++c) {
    const auto [begin, end] = Chunk(c);
    servers_[static_cast<std::size_t>(c)].KeepRecords(config_.server_compressor,
                                                      shape_.Restrict(begin, end));
  }
  return true;
}

template <typename T>
const CompressionRecord<T>* CompressedExchange<T>::LastCompression(int worker) const {
  if (worker == kServer) return servers_.size() == 1 ? servers_.front().record.get() : nullptr;
  return workers_[static_cast<std::size_t>(worker)].record.get();
}

template <typename T>
const Vector<T>* CompressedExchange<T>::WorkerError(int worker) const {
  if (layout_.hierarchical) return nullptr;
  const Sender& w = workers_[static_cast<std::size_t>(worker)];
  return w.ef.enabled() ? &w.ef.error() : nullptr;
}

template <typename T>
const Vector<T>* CompressedExchange<T>::ServerError() const {
  if (!servers_.front().ef.enabled()) return nullptr;
  if (servers_.size() == 1) return &servers_.front().ef.error();
  server_error_.resize(dimension_);
  for (int c = 0; c < layout_.chunks(); ++c) {
    const auto [begin, end] = Chunk(c);
    server_error_.segment(begin, end - begin) = servers_[static_cast<std::size_t>(c)].ef.error();
  }
  return &server_error_;
}

template <typename T>
const Vector<T>* CompressedExchange<T>::Observe(Quantity quantity, int worker) const {
  if (quantity == Quantity::kServerError && worker == kServer) return ServerError();
  if (quantity == Quantity::kWorkerError && worker != kServer) return WorkerError(worker);
  return nullptr;
}

template <typename T>
const EncodeStats* CompressedExchange<T>::LastEncode(int worker) const {
  if (worker != kServer) return &workers_[static_cast<std::size_t>(worker)].stats;
  if (servers_.size() == 1) return &servers_.front().stats;
  server_stats_ = {};
  for (const Sender& server : servers_) server_stats_ += server.stats;
  return &server_stats_;
}

#define LEMMALAB_INSTANTIATE(T)                                                             \
  template ExchangeConfig<T> ExchangeFromOptions<T>(OptionTable&, const ExchangeDefaults&); \
  template struct CompressingSender<T>;                                                     \
  template class CompressedExchange<T>;
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
