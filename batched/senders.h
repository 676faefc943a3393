// One side of a batched exchange (batched/optimizers.cc): `rows` senders (every worker, or the
// server) compress a row each, with or without error feedback, and the receivers decode what
// they sent: the mean of the rows (the server's average), the first row (the replicas' reply),
// or each row into its own sender's estimate (EF21). Each compressor with a batched form encodes
// the CPU compressor's message, element for element, from the same streams:
//   - OneBitSenders: every 1-bit format (compressors/one_bit_compressor.h);
//   - SparseSenders: top-k (a radix selection per row) and random-k (Floyd's draws all at once
//     per row, compressors/random_k_element.h);
//   - RawSenders: the identity.
// MakeSenders picks the one for a compressor instance, or says that it has none.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "batched/backend.h"
#include "batched/device_state.h"
#include "batched/kernels.h"
#include "batched/optimizers.h"
#include "compressors/compressor.h"
#include "compressors/one_bit_compressor.h"
#include "compressors/sparse.h"
#include "core/rng.h"

namespace lemmalab::batched {

// A vector of d elements (every replica's, or the server's), and n rows of d (one per worker), in
// the backend's memory.
template <typename T>
Buffer<T> OneVector(const BatchedContext& context) {
  return Buffer<T>(context.backend, static_cast<std::size_t>(context.dimension));
}
template <typename T>
Buffer<T> WorkerRows(const BatchedContext& context) {
  return Buffer<T>(context.backend, static_cast<std::size_t>(context.workers * context.dimension));
}

// A vector of the run's scalars as the full-precision wire sends it.
template <typename T>
std::size_t RawBytes(const BatchedContext& context) {
  return static_cast<std::size_t>(context.dimension) * sizeof(T);
}

// Counters a step's kernels add to on the device, read on the host with one copy per step however
// many senders' statistics are asked for (the run loop asks for every worker's after each step).
class Counters {
 public:
  Counters(Backend backend, std::size_t size) : device_(backend, size) {}

  // Zeroes them for a step's kernels, which add to data().
  unsigned long long* Restart() {
    device_.SetZero();
    host_.clear();
    return device_.data();
  }
  std::int64_t At(std::size_t index) const {
    if (host_.empty()) host_ = device_.ToHost();
    return static_cast<std::int64_t>(host_[index]);
  }

 private:
  Buffer<unsigned long long> device_;
  mutable std::vector<unsigned long long> host_;  // empty until read after Restart
};

// The statistics of values sent as they are over the full-precision wire: the non-finite values
// of each worker's row and of the server's vector.
template <typename T>
class RawSendCounts {
 public:
  explicit RawSendCounts(const BatchedContext& context)
      : context_(context),
        counts_(context.backend, static_cast<std::size_t>(context.workers) + 1) {}

  // Counts the workers' rows (null: they sent no raw values) and the server's vector.
  void Count(const T* rows, const T* server) {
    unsigned long long* counts = counts_.Restart();
    const std::int64_t n = context_.workers, d = context_.dimension;
    if (rows != nullptr) ForEach(context_.backend, n * d, NonFiniteCounts<T>{rows, d, counts});
    ForEach(context_.backend, d, NonFiniteCounts<T>{server, d, counts + n});
  }
  EncodeStats Stats(int worker) const {
    const std::size_t row = worker == kServer ? static_cast<std::size_t>(context_.workers)
                                              : static_cast<std::size_t>(worker);
    return {.elements = context_.dimension, .non_finite = counts_.At(row)};
  }

 private:
  BatchedContext context_;
  Counters counts_;  // the workers', then the server's
};

inline constexpr StateTag kWorkerErrorTag = {{"e", "compressors/error_feedback.h", ""},
                                             Quantity::kWorkerError};
inline constexpr StateTag kServerErrorTag = {{"e_bar", "compressors/error_feedback.h", ""},
                                             Quantity::kServerError};

// The compressor a side of the exchange runs: how to make it, for vectors of what shape.
template <typename T>
struct SenderFormat {
  CompressorMaker<T> maker;
  CompressorShape shape;
};

// What every kind of senders shares: the error feedback's e, the streams, the size of a message.
template <typename T>
class Senders {
 public:
  virtual ~Senders() = default;

  // Encodes every sender's row of `x` (with error feedback: u = x + e, and e <- u - C(u)).
  virtual void Encode(const StepContext& ctx, const T* x) = 0;
  // mean = the mean of the rows' decoded messages (the server's average of the CPU).
  virtual void MeanOfRows(T* mean) const = 0;
  // out = the first row's decoded message (the server's reply, as the replicas decode it).
  virtual void Decode(T* out) const = 0;
  // acc (rows x d) += each row's own decoded message, weight 1.
  virtual void DecodeAddRows(T* acc) const = 0;
  // The statistics of the last encode of `row`.
  virtual EncodeStats Stats(std::int64_t row) const = 0;

  // The bytes of one sender's message on the CPU's wire.
  std::size_t message_bytes() const { return message_bytes_; }

  // Compression records (Observable::LastCompression): from KeepRecords on, every Encode keeps
  // each row's input u, and Record gives it with the row's decoded message, copied to the host,
  // when the last Encode was step t's (else nullptr: the sender did not compress at step t).
  void KeepRecords() {
    if (inputs_.size() == 0) inputs_ = Buffer<T>(backend_, static_cast<std::size_t>(rows_ * d_));
  }
  bool CompressedAt(std::int64_t t) const { return inputs_.size() > 0 && encoded_at_ == t; }
  void Record(std::int64_t row, CompressionRecord<T>& record) const {
    const auto offset = static_cast<std::size_t>(row * d_);
    record.input.resize(d_);
    inputs_.Download({record.input.data(), static_cast<std::size_t>(d_)}, offset);
    if (decoded_at_ != encoded_at_) {  // every row's decoded message, once per Encode
      if (decoded_.size() == 0) decoded_ = Buffer<T>(backend_, inputs_.size());
      decoded_.SetZero();
      DecodeAddRows(decoded_.data());
      decoded_at_ = encoded_at_;
    }
    record.output.resize(d_);
    decoded_.Download({record.output.data(), static_cast<std::size_t>(d_)}, offset);
    record.compressor = compressor_.get();
    record.maker = maker_;
    record.shape = shape_;
  }
  // The error feedback's e, per sender (kWorkerError) or the server's (kServerError).
  void DeclareErrors(DeviceState<T>& state) {
    if (e_.size() == 0) return;
    if (purpose_ == Purpose::kServerCompression) {
      state.Server(kServerErrorTag, e_);
    } else {
      state.PerWorker(kWorkerErrorTag, e_, d_);
    }
  }

 protected:
  // `compressor`: the CPU compressor of the format, whose message for a zero vector gives the
  // size every message has. Worker streams are (seed, purpose, first_field + row, t).
  // `compressor` is an instance of `format`'s, kept for the records (its claims).
  Senders(std::unique_ptr<Compressor<T>> compressor, const SenderFormat<T>& format, bool feedback,
          std::int64_t rows, const BatchedContext& context, Purpose purpose,
          std::uint32_t first_field)
      : rows_(rows),
        d_(context.dimension),
        backend_(context.backend),
        purpose_(purpose),
        first_field_(first_field),
        compressor_(std::move(compressor)),
        maker_(format.maker),
        shape_(format.shape),
        e_(feedback ? Buffer<T>(context.backend, static_cast<std::size_t>(rows * d_))
                    : Buffer<T>()) {
    Message message;
    PhiloxStream stream({0, purpose, first_field, 0});
    compressor_->Encode(Vector<T>::Zero(d_), stream, message);
    message_bytes_ = message.bytes.size();
  }

  // Called by every Encode first: the step it encodes, and with records kept, its input u.
  void Starting(const StepContext& ctx, const RowInput<T>& u) {
    encoded_at_ = ctx.t;
    if (inputs_.size() > 0) ForEach(backend_, rows_ * d_, Materialize<T>{u, inputs_.data()});
  }

  // What a sender compresses, row by row: x + e with error feedback, else x.
  RowInput<T> Input(const T* x) const { return {x, e_.size() > 0 ? e_.data() : nullptr, T(1)}; }
  T* error() { return e_.size() > 0 ? e_.data() : nullptr; }
  RowStreams Streams(const StepContext& ctx) const {
    return StepStreams(ctx.seed, ctx.t, static_cast<std::uint32_t>(purpose_), first_field_);
  }
  template <typename U>
  Buffer<U> Sized(bool used, std::int64_t size) const {
    return used ? Buffer<U>(backend_, static_cast<std::size_t>(size)) : Buffer<U>();
  }

  std::int64_t rows_, d_;
  Backend backend_;
  Purpose purpose_;
  std::uint32_t first_field_;

 private:
  std::unique_ptr<Compressor<T>> compressor_;  // the CPU compressor of the format
  CompressorMaker<T> maker_;
  CompressorShape shape_;
  Buffer<T> e_;                   // rows x d, with error feedback
  Buffer<T> inputs_;              // rows x d: the last Encode's inputs, when records are kept
  std::int64_t encoded_at_ = -1;  // the step of the last Encode
  mutable Buffer<T> decoded_;     // rows x d: the messages of the Encode at decoded_at_
  mutable std::int64_t decoded_at_ = -1;
  std::size_t message_bytes_ = 0;
};

// Every 1-bit format of compressors/one_bit_compressor.h: the scales' reductions come first (in
// the CPU's order), then the bits.
template <typename T>
class OneBitSenders final : public Senders<T> {
 public:
  OneBitSenders(std::unique_ptr<Compressor<T>> compressor, const SenderFormat<T>& sender,
                const OneBitFormat& format, bool feedback, std::int64_t rows,
                const BatchedContext& context, Purpose purpose, std::uint32_t first_field)
      : Senders<T>(std::move(compressor), sender, feedback, rows, context, purpose, first_field),
        stochastic_(format.draw == one_bit::Draw::kStochastic),
        scale_(format.scale),
        words_((context.dimension + 31) / 32),
        blocks_(static_cast<std::int64_t>(format.blocks.size())),
        block_ends_(context.backend, format.blocks.size()),
        partials_(this->template Sized<double>(
            scale_ == one_bit::Scale::kRms || scale_ == one_bit::Scale::kMeanAbs,
            rows * blocks_ * one_bit::kPartials)),
        largest_(this->template Sized<double>(scale_ == one_bit::Scale::kMaxAbs, rows * blocks_)),
        scales_(this->template Sized<float>(scale_ != one_bit::Scale::kNone, rows * blocks_)),
        bits_(context.backend, static_cast<std::size_t>(rows * words_)),
        counts_(context.backend, static_cast<std::size_t>(2 * rows)) {
    std::vector<std::int64_t> ends;
    for (const auto& [begin, end] : format.blocks) ends.push_back(end);
    block_ends_.Upload(ends);
  }

  void Encode(const StepContext& ctx, const T* x) override {
    const RowInput<T> u = this->Input(x);
    this->Starting(ctx, u);
    const std::int64_t rows = this->rows_, d = this->d_;
    const Backend backend = this->backend_;
    if (partials_.size() > 0) {
      ForEach(
          backend, rows * blocks_ * one_bit::kPartials,
          OneBitPartialSums<T>{u, d, blocks(), scale_ == one_bit::Scale::kRms, partials_.data()});
    }
    if (largest_.size() > 0) {
      ForEach(backend, rows * blocks_, OneBitMaxAbs<T>{u, d, blocks(), largest_.data()});
    }
    if (scales_.size() > 0) {
      ForEach(backend, rows * blocks_,
              OneBitScales{scale_, blocks(), partials_.data(), largest_.data(), scales_.data()});
    }
    ForEach(backend, rows * words_,
            OneBitEncode<T>{u, this->error(), d, words_, stochastic_, this->Streams(ctx), scales(),
                            bits_.data(), counts_.Restart()});
  }
  void MeanOfRows(T* mean) const override {
    ForEach(this->backend_, this->d_,
            OneBitMeanOfRows<T>{bits_.data(), scales(), this->rows_, this->d_, words_, mean});
  }
  void Decode(T* out) const override {
    ForEach(this->backend_, this->d_, OneBitDecode<T>{bits_.data(), scales(), out});
  }
  void DecodeAddRows(T* acc) const override {
    ForEach(this->backend_, this->rows_ * this->d_,
            OneBitDecodeAddRows<T>{bits_.data(), scales(), this->d_, words_, acc});
  }
  EncodeStats Stats(std::int64_t row) const override {
    const auto k = static_cast<std::size_t>(2 * row);
    return {.elements = this->d_, .out_of_domain = counts_.At(k), .non_finite = counts_.At(k + 1)};
  }

 private:
  BlockEnds blocks() const { return {block_ends_.data(), blocks_}; }
  RowScales scales() const { return {scales_.size() > 0 ? scales_.data() : nullptr, blocks()}; }

  bool stochastic_;
  one_bit::Scale scale_;
  std::int64_t words_, blocks_;
  Buffer<std::int64_t> block_ends_;
  Buffer<double> partials_;  // kRms, kMeanAbs: rows x blocks x kPartials
  Buffer<double> largest_;   // kMaxAbs: rows x blocks
  Buffer<float> scales_;     // rows x blocks, when the format sends scales
  Buffer<std::uint32_t> bits_;
  Counters counts_;  // per sender: out of domain, non-finite
};

// The messages of the sparse and raw senders as flags and values (kernels.h's SentRows), with
// their decoders.
template <typename T>
class SentRowsSenders : public Senders<T> {
 public:
  void MeanOfRows(T* mean) const override {
    ForEach(this->backend_, this->d_, SentMeanOfRows<T>{sent(), this->rows_, this->d_, mean});
  }
  void Decode(T* out) const override {
    ForEach(this->backend_, this->d_, SentDecode<T>{sent(), out});
  }
  void DecodeAddRows(T* acc) const override {
    ForEach(this->backend_, this->rows_ * this->d_, SentDecodeAddRows<T>{sent(), acc});
  }
  EncodeStats Stats(std::int64_t row) const override {
    return {.elements = this->d_, .non_finite = counts_.At(static_cast<std::size_t>(row))};
  }

 protected:
  SentRowsSenders(std::unique_ptr<Compressor<T>> compressor, const SenderFormat<T>& sender,
                  bool feedback, std::int64_t rows, const BatchedContext& context, Purpose purpose,
                  std::uint32_t first_field, bool flags, T scale)
      : Senders<T>(std::move(compressor), sender, feedback, rows, context, purpose, first_field),
        scale_(scale),
        kept_(this->template Sized<unsigned char>(flags, rows * context.dimension)),
        values_(context.backend, static_cast<std::size_t>(rows * context.dimension)),
        counts_(context.backend, static_cast<std::size_t>(rows)) {}

  SentRows<T> sent() const {
    return {kept_.size() > 0 ? kept_.data() : nullptr, values_.data(), scale_};
  }

  T scale_;
  Buffer<unsigned char> kept_;  // rows x d: the kept set (none for the identity)
  Buffer<T> values_;            // rows x d: what was sent
  Counters counts_;             // per sender: non-finite inputs
};

// Top-k (compressors/top_k.cc) and random-k (compressors/random_k.cc), for every row.
template <typename T>
class SparseSenders final : public SentRowsSenders<T> {
 public:
  // `sparse` is `compressor` (k and the scale are read from it).
  SparseSenders(std::unique_ptr<Compressor<T>> compressor, const SparseCompressor<T>& sparse,
                const SenderFormat<T>& sender, bool feedback, std::int64_t rows,
                const BatchedContext& context, Purpose purpose, std::uint32_t first_field)
      : SentRowsSenders<T>(std::move(compressor), sender, feedback, rows, context, purpose,
                           first_field, true, sparse.scale()),
        top_k_(sparse.name() == "top-k"),
        k_(sparse.k()),
        digit_counts_(this->template Sized<unsigned long long>(top_k_, rows * 256)),
        prefix_(this->template Sized<unsigned long long>(top_k_, rows)),
        need_(this->template Sized<unsigned long long>(top_k_, rows)),
        ties_(this->template Sized<unsigned long long>(
            top_k_, rows * ((context.dimension + kTieChunk - 1) / kTieChunk))),
        draw_chunks_((k_ + kDrawChunk - 1) / kDrawChunk),
        draws_(this->template Sized<std::uint32_t>(!top_k_, rows * k_)),
        rejected_(this->template Sized<std::uint32_t>(!top_k_, rows * k_)),
        first_draws_(this->template Sized<std::uint32_t>(!top_k_, rows * context.dimension)),
        rejections_(this->template Sized<unsigned long long>(!top_k_, rows * draw_chunks_)),
        totals_(this->template Sized<unsigned long long>(!top_k_, rows)) {}

  void Encode(const StepContext& ctx, const T* x) override {
    const RowInput<T> u = this->Input(x);
    this->Starting(ctx, u);
    const std::int64_t rows = this->rows_, d = this->d_;
    if (top_k_) {
      SelectLargest(u);
    } else {
      Choose(ctx);
    }
    ForEach(this->backend_, rows * d,
            SparseSend<T>{u, this->kept_.data(), this->error(), this->scale_, this->values_.data(),
                          this->counts_.Restart(), d});
  }

 private:
  // Top-k's kept set: the threshold key of each row by 8-bit radix passes from the top, then the
  // keys above it and the lowest-indexed ones equal to it.
  void SelectLargest(const RowInput<T>& u) {
    const std::int64_t rows = this->rows_, d = this->d_;
    const int top = 8 * static_cast<int>(sizeof(T)) - 8;
    for (int shift = top; shift >= 0; shift -= 8) {
      digit_counts_.SetZero();
      ForEach(this->backend_, rows * d,
              KeyDigitCounts<T>{u, d, prefix_.data(), shift, digit_counts_.data()});
      ForEach(this->backend_, rows,
              PickKeyDigits{digit_counts_.data(), shift, shift == top ? k_ : 0, prefix_.data(),
                            need_.data()});
    }
    const std::int64_t chunks = (d + kTieChunk - 1) / kTieChunk;
    ForEach(this->backend_, rows * chunks,
            CountTies<T>{u, d, chunks, prefix_.data(), ties_.data()});
    ForEach(this->backend_, rows, ChunkOffsets{chunks, ties_.data()});
    ForEach(
        this->backend_, rows * chunks,
        MarkTopK<T>{u, d, chunks, prefix_.data(), need_.data(), ties_.data(), this->kept_.data()});
  }

  // Random-k's kept set: each row's choice from its own stream, all k draws at once
  // (compressors/random_k_element.h), the set the CPU's RandomKChoice draws.
  void Choose(const StepContext& ctx) {
    const std::int64_t rows = this->rows_, d = this->d_, blocks = (k_ + 3) / 4;
    const RowStreams streams = this->Streams(ctx);
    const Backend backend = this->backend_;
    rejections_.SetZero();
    ForEach(backend, rows * blocks,
            FloydFirstAttempts{streams, d, k_, blocks, draw_chunks_, draws_.data(),
                               rejections_.data()});
    ForEach(backend, rows, ChunkOffsets{draw_chunks_, rejections_.data()});
    ForEach(backend, rows * draw_chunks_,
            ListRejected{draws_.data(), d, k_, draw_chunks_, rejections_.data(), rejected_.data(),
                         totals_.data()});
    ForEach(backend, rows,
            ReplaceRejected{streams, d, k_, draws_.data(), rejected_.data(), totals_.data()});
    for (const FirstDraws::Pass pass : {FirstDraws::kReset, FirstDraws::kLower}) {
      ForEach(backend, rows * k_, FirstDraws{draws_.data(), d, k_, pass, first_draws_.data()});
    }
    this->kept_.SetZero();
    ForEach(backend, rows * k_,
            MarkFloydKept{draws_.data(), first_draws_.data(), d, k_, this->kept_.data()});
  }

  bool top_k_;  // else random-k
  std::int64_t k_;
  Buffer<unsigned long long> digit_counts_, prefix_, need_;  // top-k's radix selection
  Buffer<unsigned long long> ties_;                          // top-k: rows x chunks
  // Random-k: the draws (rows x k), the rejected ones (rows x k), the first draw of each value
  // (rows x d), the rejections per chunk of draws and per row.
  std::int64_t draw_chunks_;
  Buffer<std::uint32_t> draws_, rejected_, first_draws_;
  Buffer<unsigned long long> rejections_, totals_;
};

// The identity (compressors/identity.cc): every row sent as it is.
template <typename T>
class RawSenders final : public SentRowsSenders<T> {
 public:
  RawSenders(std::unique_ptr<Compressor<T>> compressor, const SenderFormat<T>& sender,
             bool feedback, std::int64_t rows, const BatchedContext& context, Purpose purpose,
             std::uint32_t first_field)
      : SentRowsSenders<T>(std::move(compressor), sender, feedback, rows, context, purpose,
                           first_field, false, T(1)) {}

  void Encode(const StepContext& ctx, const T* x) override {
    this->Starting(ctx, this->Input(x));
    ForEach(this->backend_, this->rows_ * this->d_,
            RawSend<T>{this->Input(x), this->error(), this->values_.data(), this->counts_.Restart(),
                       this->d_});
  }
};

// The compressors other than the 1-bit formats that have a batched form (MakeSenders's).
inline constexpr std::array<std::string_view, 3> kSentRowsCompressors = {"identity", "top-k",
                                                                         "random-k"};

// The senders of `sender`'s compressor, or nullptr when it has no batched form.
template <typename T>
std::unique_ptr<Senders<T>> MakeSenders(const SenderFormat<T>& sender, bool feedback,
                                        std::int64_t rows, const BatchedContext& context,
                                        Purpose purpose, std::uint32_t first_field) {
  // One instance: what decides the kind, then the senders' own (for the records' claims).
  std::unique_ptr<Compressor<T>> compressor = sender.maker(sender.shape);
  if (const OneBitFormat* format = compressor->one_bit_format()) {
    return std::make_unique<OneBitSenders<T>>(std::move(compressor), sender, *format, feedback,
                                              rows, context, purpose, first_field);
  }
  if (compressor->name() == "top-k" || compressor->name() == "random-k") {
    const auto& sparse = dynamic_cast<const SparseCompressor<T>&>(*compressor);
    return std::make_unique<SparseSenders<T>>(std::move(compressor), sparse, sender, feedback, rows,
                                              context, purpose, first_field);
  }
  if (compressor->name() == "identity") {
    return std::make_unique<RawSenders<T>>(std::move(compressor), sender, feedback, rows, context,
                                           purpose, first_field);
  }
  return nullptr;
}

}  // namespace lemmalab::batched
