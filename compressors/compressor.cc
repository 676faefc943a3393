#include "compressors/compressor.h"

#include <algorithm>

#include "core/error.h"

namespace lemmalab {

template <typename T>
EncodeStats Compressor<T>::EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e,
                                              PhiloxStream& stream, Message& out) {
  input_ = x + a * e;
  const EncodeStats stats = Encode(input_, stream, out);
  e = input_;
  DecodeAdd(out, T(-1), e);
  return stats;
}

std::vector<std::pair<std::int64_t, std::int64_t>> CompressorShape::LayerRanges() const {
  if (layers.empty()) return {{0, dimension}};
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
  std::int64_t next = 0;
  for (const Layer& layer : layers) {
    LEMMALAB_CHECK(layer.offset == next && layer.size() > 0,
                   "layer '{}' at {} of size {} does not continue the layers before it", layer.name,
                   layer.offset, layer.size());
    blocks.emplace_back(layer.offset, layer.offset + layer.size());
    next = layer.offset + layer.size();
  }
  LEMMALAB_CHECK(next == dimension, "layers cover {} of {} elements", next, dimension);
  return blocks;
}

CompressorShape CompressorShape::Restrict(std::int64_t begin, std::int64_t end) const {
  LEMMALAB_CHECK(0 <= begin && begin < end && end <= dimension,
                 "range [{}, {}) is not inside [0, {})", begin, end, dimension);
  CompressorShape piece{end - begin, {}, sender, senders};
  for (const Layer& layer : layers.empty() ? SingleLayer(dimension) : layers) {
    const std::int64_t lo = std::max(begin, layer.offset);
    const std::int64_t hi = std::min(end, layer.offset + layer.size());
    if (lo >= hi) continue;
    const bool whole = lo == layer.offset && hi == layer.offset + layer.size();
    piece.layers.push_back(
        Layer{layer.name, lo - begin, whole ? layer.rows : hi - lo, whole ? layer.cols : 1});
  }
  return piece;
}

void CheckMessageSize(std::string_view compressor, const Message& in, std::size_t expected) {
  LEMMALAB_CHECK(in.bytes.size() == expected, "{} message of {} bytes, expected {}", compressor,
                 in.bytes.size(), expected);
}

template class Compressor<float>;
template class Compressor<double>;

}  // namespace lemmalab
