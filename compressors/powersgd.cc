#include "compressors/powersgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>
#include <vector>

#include "compressors/low_rank.h"
#include "core/error.h"

namespace lemmalab {
namespace {

using Eigen::MatrixXd;
using low_rank::IsMatrix;

// Below this fraction of a column's length, its part orthogonal to the earlier columns is
// rounding error rather than a direction (products in double are accurate to ~1e-16 relative).
constexpr double kDependent = 1e-10;

// Removes from v its components along columns 0..k-1 of `basis` (orthonormal), one column at a
// time (modified Gram-Schmidt), twice: the second pass removes what rounding left of the first.
void ProjectOut(const MatrixXd& basis, Eigen::Index k, Eigen::Ref<Eigen::VectorXd> v) {
  for (int pass = 0; pass < 2; ++pass) {
    for (Eigen::Index j = 0; j < k; ++j) v -= basis.col(j).dot(v) * basis.col(j);
  }
}

// Makes the columns of p orthonormal in order (Gram-Schmidt), replacing a dependent column by
// the standard basis vector that the earlier columns weigh least (see powersgd.h). Needs
// p.cols() <= p.rows(), so that such a vector always keeps a part orthogonal to them.
void Orthogonalize(MatrixXd& p) {
  for (Eigen::Index k = 0; k < p.cols(); ++k) {
    const double length = p.col(k).norm();
    ProjectOut(p, k, p.col(k));
    double norm = p.col(k).norm();
    if (!(norm > kDependent * length)) {  // also a zero length, and NaN or infinite values
      // sum_i (weight of row i) = k < rows, so the lightest row i has weight <= k / rows < 1 and
      // e_i keeps a part of length >= sqrt(1 - k / rows) after the projection.
      Eigen::Index lightest = 0;
      double least = 2;
      for (Eigen::Index i = 0; i < p.rows(); ++i) {
        const double weight = p.row(i).head(k).squaredNorm();
        if (weight < least) {
          least = weight;
          lightest = i;
        }
      }
      p.col(k).setZero();
      p(lightest, k) = 1;
      ProjectOut(p, k, p.col(k));
      norm = p.col(k).norm();
    }
    p.col(k) /= norm;
  }
}

// Fills q (column-major, so entry j of q.data() is entry (j % rows, j / rows)) with standard
// normals, entry j from words 2j and 2j + 1 (Box-Muller, cosine branch; see powersgd.h).
void DrawStandardNormal(PhiloxStream& stream, MatrixXd& q) {
  std::vector<std::uint32_t> words(2 * static_cast<std::size_t>(q.size()));
  stream.Fill(words);
  for (Eigen::Index j = 0; j < q.size(); ++j) {
    const double u1 = (words[2 * j] + 0.5) * 0x1p-32;  // in (0, 1): the logarithm is finite
    const double u2 = words[2 * j + 1] * 0x1p-32;
    q.data()[j] = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
}

template <typename T>
class PowerSgd final : public Compressor<T> {
 public:
  PowerSgd(const CompressorShape& shape, std::int64_t rank, bool warm_start)
      : dimension_(shape.dimension),
        layers_(shape.layers.empty() ? SingleLayer(shape.dimension) : shape.layers),
        warm_start_(warm_start),
        q_(layers_.size()) {
    LEMMALAB_CHECK(rank >= 1, "powersgd rank {} < 1", rank);
    CompressorShape{dimension_, layers_}.LayerRanges();  // checks that the layers tile [0, d)
    std::int64_t largest = 0;
    for (const Layer& layer : layers_) {
      if (IsMatrix(layer)) {
        const std::int64_t r = std::min({rank, layer.rows, layer.cols});
        ranks_.push_back(r);
        largest = std::max(largest, layer.size());
      } else {
        ranks_.push_back(0);
      }
    }
    message_bytes_ = low_rank::MessageBytes<T>(layers_, ranks_);
    if constexpr (!std::is_same_v<T, double>) m_.resize(static_cast<std::size_t>(largest));
  }

  std::string_view name() const override { return "powersgd"; }
  CompressorClaims claims() const override { return {.unbiased = false, .uses_layers = true}; }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    LEMMALAB_CHECK(x.size() == dimension_, "powersgd for {} elements got {}", dimension_, x.size());
    EncodeStats stats;
    stats.elements = x.size();
    for (Eigen::Index j = 0; j < x.size(); ++j) stats.non_finite += !std::isfinite(x[j]);
    out.bytes.resize(message_bytes_);
    std::uint8_t* cursor = out.bytes.data();
    const bool draw = !warm_start_ || !started_;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      const T* values = x.data() + layer.offset;
      if (!IsMatrix(layer)) {
        std::memcpy(cursor, values, static_cast<std::size_t>(layer.size()) * sizeof(T));
        cursor += layer.size() * sizeof(T);
        continue;
      }
      const Eigen::Map<const RowMatrix<double>> m = AsDouble(values, layer);
      MatrixXd& q = q_[l];
      if (draw) {
        q.resize(layer.cols, ranks_[l]);
        DrawStandardNormal(stream, q);
      }
      MatrixXd p = m * q;
      Orthogonalize(p);
      q.noalias() = m.transpose() * p;
      // The next call starts from the Q the receiver got.
      q = q.template cast<T>().template cast<double>();
      cursor = low_rank::Put<T>(p, cursor);
      cursor = low_rank::Put<T>(q, cursor);
    }
    started_ = true;
    return stats;
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    LEMMALAB_CHECK(out.size() == dimension_, "powersgd for {} elements decoding into {}",
                   dimension_, out.size());
    CheckMessageSize("powersgd", in, message_bytes_);
    low_rank::DecodeLayers<T>(in.bytes.data(), layers_, ranks_, out.data());
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    // Through Decode, so that the sum is acc + weight * Decode(in) bit for bit.
    decoded_.resize(acc.size());
    Decode(in, decoded_);
    acc += weight * decoded_;
  }

  void Persist(StateArchive& archive) override {
    // Each matrix layer's Q is drawn at the first encode: columns x r'.
    archive.Scope("q", [&] {
      for (std::size_t l = 0; l < q_.size(); ++l) {
        const bool matrix = IsMatrix(layers_[l]);
        archive.Later(std::to_string(l), q_[l], matrix ? layers_[l].cols : 0,
                      matrix ? ranks_[l] : 0);
      }
    });
    archive("started", started_);
  }

 private:
  // The layer as a row-major matrix of doubles: the input itself for T = double, else a copy.
  Eigen::Map<const RowMatrix<double>> AsDouble(const T* values, const Layer& layer) {
    if constexpr (std::is_same_v<T, double>) {
      return {values, layer.rows, layer.cols};
    } else {
      std::copy(values, values + layer.size(), m_.begin());
      return {m_.data(), layer.rows, layer.cols};
    }
  }

  std::int64_t dimension_;
  std::vector<Layer> layers_;
  bool warm_start_;
  std::vector<std::int64_t> ranks_;  // r' of each layer; 0 for vector layers
  std::size_t message_bytes_ = 0;
  std::vector<MatrixXd> q_;  // each matrix layer's Q (cols x r'), as last sent
  bool started_ = false;     // whether q_ holds a previous call's Q
  std::vector<double> m_;    // a float layer converted to double
  mutable Vector<T> decoded_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakePowerSgd(const CompressorShape& shape, std::int64_t rank,
                                            bool warm_start) {
  return std::make_unique<PowerSgd<T>>(shape, rank, warm_start);
}

template <typename T>
CompressorMaker<T> PowerSgdFromOptions(OptionTable& options) {
  const std::int64_t rank = options.GetInt("rank", 2, 1);
  const bool warm_start = options.GetBool("warm_start", true);
  return [rank, warm_start](const CompressorShape& shape) {
    return MakePowerSgd<T>(shape, rank, warm_start);
  };
}

template std::unique_ptr<Compressor<float>> MakePowerSgd(const CompressorShape&, std::int64_t,
                                                         bool);
template std::unique_ptr<Compressor<double>> MakePowerSgd(const CompressorShape&, std::int64_t,
                                                          bool);
template CompressorMaker<float> PowerSgdFromOptions(OptionTable&);
template CompressorMaker<double> PowerSgdFromOptions(OptionTable&);

}  // namespace lemmalab
