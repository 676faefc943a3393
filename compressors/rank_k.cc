#include "compressors/rank_k.h"

#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "compressors/low_rank.h"
#include "core/error.h"

namespace lemmalab {
namespace {

using Eigen::MatrixXd;

template <typename T>
class RankK final : public Compressor<T> {
 public:
  RankK(const CompressorShape& shape, std::int64_t rank)
      : dimension_(shape.dimension),
        layers_(shape.layers.empty() ? SingleLayer(shape.dimension) : shape.layers),
        rank_(rank) {
    LEMMALAB_CHECK(rank >= 1, "rank-k rank {} < 1", rank);
    CompressorShape{dimension_, layers_}.LayerRanges();  // checks that the layers tile [0, d)
    std::int64_t largest = 0;  // the largest min(rows, cols) of a factored layer
    for (const Layer& layer : layers_) {
      const bool factored = Factored(layer);
      ranks_.push_back(factored ? rank : 0);
      if (factored) largest = std::max(largest, std::min(layer.rows, layer.cols));
    }
    message_bytes_ = low_rank::MessageBytes<T>(layers_, ranks_);
    if (largest > 0) {
      // Eckart-Young, plus the rounding of the factors (rank_k.h).
      const double bound = std::sqrt(1 - static_cast<double>(rank) / static_cast<double>(largest)) +
                           (3 + std::sqrt(static_cast<double>(rank))) * 0x1p-24;
      if (bound < 1) q_ = bound;
    } else {
      q_ = 0.0;
    }
  }

  std::string_view name() const override { return "rank-k"; }
  CompressorClaims claims() const override {
    return {.unbiased = false, .q = q_, .deterministic = true, .uses_layers = true};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& /*stream*/, Message& out) override {
    LEMMALAB_CHECK(x.size() == dimension_, "rank-k for {} elements got {}", dimension_, x.size());
    EncodeStats stats;
    stats.elements = x.size();
    out.bytes.resize(message_bytes_);
    std::uint8_t* cursor = out.bytes.data();
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      const auto values = x.segment(layer.offset, layer.size());
      const std::int64_t finite = values.array().isFinite().count();
      stats.non_finite += layer.size() - finite;
      if (ranks_[l] == 0) {
        std::memcpy(cursor, values.data(), static_cast<std::size_t>(layer.size()) * sizeof(T));
        cursor += layer.size() * sizeof(T);
        continue;
      }
      MatrixXd p(layer.rows, rank_), q(layer.cols, rank_);
      if (finite < layer.size()) {
        p.setConstant(std::numeric_limits<double>::quiet_NaN());
        q.setConstant(std::numeric_limits<double>::quiet_NaN());
      } else {
        const MatrixXd m = Eigen::Map<const RowMatrix<T>>(values.data(), layer.rows, layer.cols)
                               .template cast<double>();
        const Eigen::BDCSVD<MatrixXd> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
        p = svd.matrixU().leftCols(rank_) * svd.singularValues().head(rank_).asDiagonal();
        q = svd.matrixV().leftCols(rank_);
      }
      cursor = low_rank::Put<T>(p, cursor);
      cursor = low_rank::Put<T>(q, cursor);
    }
    return stats;
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    LEMMALAB_CHECK(out.size() == dimension_, "rank-k for {} elements decoding into {}", dimension_,
                   out.size());
    CheckMessageSize("rank-k", in, message_bytes_);
    low_rank::DecodeLayers<T>(in.bytes.data(), layers_, ranks_, out.data());
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    // Through Decode, so that the sum is acc + weight * Decode(in) bit for bit.
    decoded_.resize(acc.size());
    Decode(in, decoded_);
    acc += weight * decoded_;
  }

 private:
  // Whether the k factors of a layer are smaller than the layer (rank_k.h); k < min(rows, cols)
  // is implied, and tested first so that the product cannot overflow.
  bool Factored(const Layer& layer) const {
    return low_rank::IsMatrix(layer) && rank_ < std::min(layer.rows, layer.cols) &&
           rank_ * (layer.rows + layer.cols) < layer.size();
  }

  std::int64_t dimension_;
  std::vector<Layer> layers_;
  std::int64_t rank_;
  std::vector<std::int64_t> ranks_;  // k for a factored layer, 0 for one sent whole
  std::size_t message_bytes_ = 0;
  std::optional<double> q_;
  mutable Vector<T> decoded_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeRankK(const CompressorShape& shape, std::int64_t rank) {
  return std::make_unique<RankK<T>>(shape, rank);
}

template <typename T>
CompressorMaker<T> RankKFromOptions(OptionTable& options) {
  const std::int64_t rank = options.GetInt("rank", 1, 1);
  return [rank](const CompressorShape& shape) { return MakeRankK<T>(shape, rank); };
}

template std::unique_ptr<Compressor<float>> MakeRankK(const CompressorShape&, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeRankK(const CompressorShape&, std::int64_t);
template CompressorMaker<float> RankKFromOptions(OptionTable&);
template CompressorMaker<double> RankKFromOptions(OptionTable&);

}  // namespace lemmalab
