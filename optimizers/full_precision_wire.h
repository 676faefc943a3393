// The full-precision messages of the uncompressed baselines and of warmup phases: every value is
// sent as the raw scalar of the run's precision (32 or 64 bits), so a message of a range is the
// byte range of the whole message, and a mean is exact arithmetic in worker order.
//
//   worker i:  sends y^(i)
//   server c:  y_bar = (1/n) sum_i y^(i) on its chunk, summed in worker order and divided once;
//              sends y_bar back
//   replicas:  the concatenation of the chunks' replies
//
// With one chunk this is the identity compressor's decode-and-add in worker order, bit for bit;
// with several each coordinate sees the same additions in the same order, so the result does
// not depend on the cut either. Hierarchical layouts average within the node first (NodeReduce),
// then across nodes: (1/N) sum_k (1/m) sum_r y^(k,r), which rounds differently from the flat mean.
#pragma once

#include <span>
#include <vector>

#include "optimizers/optimizer.h"

namespace lemmalab {

// The mean of full-precision messages in message order: zero, add each, divide once (as
// the identity compressor's DecodeAdd with weight 1, bit for bit).
template <typename T>
void MeanOfRawMessages(std::span<const Message> received, VectorRef<T> mean);

template <typename T>
class FullPrecisionWire {
 public:
  explicit FullPrecisionWire(const OptimizerContext& context);

  // Worker phase: y as raw scalars (`elements` and `non_finite` in the statistics).
  EncodeStats Send(ConstVectorRef<T> y, Message& out) const;
  // The parts of a worker's message the layout sends (byte ranges of `whole`).
  void Split(const Message& whole, std::vector<Message>& parts) const;
  // Hierarchical: the mean of a node's parts of range `part`, cut into the range's chunks.
  void NodeReduce(int part, std::span<const Message> received, std::vector<Message>& out) const;

  // Server phase of chunk c: the mean of the received parts into mean()'s chunk c.
  void Average(int chunk, std::span<const Message> received);
  // Average, then sends the chunk of the mean back.
  EncodeStats Reduce(int chunk, std::span<const Message> received, Message& out);
  // Sends `values` (chunk c's reply, computed by the server from the mean) back.
  EncodeStats SendChunk(int chunk, ConstVectorRef<T> values, Message& out);

  // The statistics of the server replies of the last step (summed over the chunks served here).
  const EncodeStats& server_stats() const;

  // Apply phase: the concatenated replies, decoded into out (the whole vector).
  void Receive(std::span<const Message> reply, VectorRef<T> out) const;

  // The mean of the last Average (the chunks this process served).
  const Vector<T>& mean() const { return mean_; }
  Eigen::VectorBlock<Vector<T>> MeanChunk(int chunk);
  std::pair<std::int64_t, std::int64_t> Chunk(int chunk) const {
    return layout_.Chunk(chunk, dimension_);
  }

 private:
  std::int64_t dimension_;
  ExchangeLayout layout_;
  Vector<T> mean_;
  std::vector<EncodeStats> chunk_stats_;
  mutable EncodeStats server_stats_;
};

}  // namespace lemmalab
