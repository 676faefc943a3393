#include "optimizers/full_precision_wire.h"

#include <cstring>

#include "core/error.h"

namespace lemmalab {
namespace {

template <typename T>
void StoreRaw(ConstVectorRef<T> v, Message& out) {
  out.bytes.resize(static_cast<std::size_t>(v.size()) * sizeof(T));
  if (v.size() > 0) std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
}

// acc += message, element by element (the message holds acc.size() raw scalars).
template <typename T>
void AddRaw(const Message& in, VectorRef<T> acc) {
  CheckMessageSize("full-precision", in, static_cast<std::size_t>(acc.size()) * sizeof(T));
  for (Eigen::Index j = 0; j < acc.size(); ++j) {
    T v;
    std::memcpy(&v, in.bytes.data() + j * sizeof(T), sizeof(T));
    acc[j] += v;
  }
}

void SliceBytes(const Message& whole, std::span<const std::int64_t> bounds, std::size_t scalar,
                std::vector<Message>& parts) {
  parts.resize(bounds.size() - 1);
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    const auto begin = whole.bytes.begin() + static_cast<std::ptrdiff_t>(bounds[k] * scalar);
    const auto end = whole.bytes.begin() + static_cast<std::ptrdiff_t>(bounds[k + 1] * scalar);
    parts[k].bytes.assign(begin, end);
  }
}

}  // namespace

template <typename T>
void MeanOfRawMessages(std::span<const Message> received, VectorRef<T> mean) {
  mean.setZero();
  for (const Message& m : received) AddRaw<T>(m, mean);
  mean /= static_cast<T>(received.size());
}

template <typename T>
FullPrecisionWire<T>::FullPrecisionWire(const OptimizerContext& context)
    : dimension_(context.dimension),
      layout_(context.layout),
      mean_(Vector<T>::Zero(context.dimension)),
      chunk_stats_(static_cast<std::size_t>(layout_.chunks())) {}

template <typename T>
EncodeStats FullPrecisionWire<T>::Send(ConstVectorRef<T> y, Message& out) const {
  StoreRaw<T>(y, out);
  EncodeStats stats;
  stats.elements = y.size();
  stats.non_finite = y.size() - y.array().isFinite().count();
  return stats;
}

template <typename T>
void FullPrecisionWire<T>::Split(const Message& whole, std::vector<Message>& parts) const {
  CheckMessageSize("full-precision", whole, static_cast<std::size_t>(dimension_) * sizeof(T));
  SliceBytes(whole, layout_.WorkerBounds(dimension_), sizeof(T), parts);
}

template <typename T>
void FullPrecisionWire<T>::NodeReduce(int part, std::span<const Message> received,
                                      std::vector<Message>& out) const {
  const std::vector<std::int64_t> chunks = layout_.NodeBounds(part);
  Vector<T> node_mean(chunks.back());
  MeanOfRawMessages<T>(received, node_mean);
  Message whole;
  StoreRaw<T>(node_mean, whole);
  SliceBytes(whole, chunks, sizeof(T), out);
}

template <typename T>
Eigen::VectorBlock<Vector<T>> FullPrecisionWire<T>::MeanChunk(int chunk) {
  const auto [begin, end] = Chunk(chunk);
  return mean_.segment(begin, end - begin);
}

template <typename T>
void FullPrecisionWire<T>::Average(int chunk, std::span<const Message> received) {
  MeanOfRawMessages<T>(received, MeanChunk(chunk));
}

template <typename T>
EncodeStats FullPrecisionWire<T>::Reduce(int chunk, std::span<const Message> received,
                                         Message& out) {
  Average(chunk, received);
  return SendChunk(chunk, MeanChunk(chunk), out);
}

template <typename T>
EncodeStats FullPrecisionWire<T>::SendChunk(int chunk, ConstVectorRef<T> values, Message& out) {
  return chunk_stats_[static_cast<std::size_t>(chunk)] = Send(values, out);
}

template <typename T>
const EncodeStats& FullPrecisionWire<T>::server_stats() const {
  server_stats_ = {};
  for (const EncodeStats& stats : chunk_stats_) server_stats_ += stats;
  return server_stats_;
}

template <typename T>
void FullPrecisionWire<T>::Receive(std::span<const Message> reply, VectorRef<T> out) const {
  LEMMALAB_CHECK(static_cast<int>(reply.size()) == layout_.chunks(), "{} reply parts for {} chunks",
                 reply.size(), layout_.chunks());
  for (int c = 0; c < layout_.chunks(); ++c) {
    const auto [begin, end] = Chunk(c);
    const Message& part = reply[static_cast<std::size_t>(c)];
    CheckMessageSize("full-precision", part, static_cast<std::size_t>(end - begin) * sizeof(T));
    if (end > begin) std::memcpy(out.data() + begin, part.bytes.data(), part.bytes.size());
  }
}

template void MeanOfRawMessages<float>(std::span<const Message>, VectorRef<float>);
template void MeanOfRawMessages<double>(std::span<const Message>, VectorRef<double>);
template class FullPrecisionWire<float>;
template class FullPrecisionWire<double>;

}  // namespace lemmalab
