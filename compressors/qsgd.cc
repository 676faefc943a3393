#include "compressors/qsgd.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "compressors/multibit.h"
#include "compressors/quantization.h"
#include "compressors/split.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

using quantization::BitReader;
using quantization::StreamBytes;

// Draw words are generated this many at a time.
constexpr std::int64_t kWordChunk = 4096;

template <typename T>
class Qsgd final : public ElementwiseDecoded<T, Qsgd<T>> {
 public:
  Qsgd(int levels, QsgdNorm norm, std::int64_t dimension, std::string_view name)
      : name_(name),
        levels_(levels),
        norm_(norm),
        dimension_(dimension),
        width_(QsgdLevelBits(levels)) {}

  std::string_view name() const override { return name_; }
  bool unbiased() const override { return true; }
  bool draws_word_per_element() const override { return true; }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    CheckDimension(x.size());
    return EncodeInput({x.data()}, stream, out, nullptr);
  }

  // One pass stores u = x + a e in e while taking its norm, a second quantizes u and leaves
  // u - C(u) in e: the default's bits (multibit.h) without its copies and decoding pass.
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) override {
    CheckDimension(x.size());
    CheckDimension(e.size());
    return EncodeInput({x.data(), e.data(), a}, stream, out, e.data());
  }

  // Part k is N_f, repeated, then the fields of its range: an instance for the range decodes
  // N_f l_j / s exactly as this one does.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    PrepareSplit(name_, bounds, dimension_, parts);
    CheckMessageSize(name_, whole, MessageBytes());
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      std::vector<std::uint8_t>& out = parts[k].bytes;
      AppendShared(whole.bytes.data(), sizeof(float), out);
      AppendElementSlice(whole.bytes.data() + sizeof(float), width_ + 1, bounds[k], bounds[k + 1],
                         out);
    }
    return true;
  }

 private:
  friend class ElementwiseDecoded<T, Qsgd<T>>;

  // Encodes u = `in`; with `e`, stores u there first and u - C(u) after.
  EncodeStats EncodeInput(const multibit::Input<T>& in, PhiloxStream& stream, Message& out, T* e) {
    EncodeStats stats;
    stats.elements = dimension_;
    const multibit::NormStats norms = multibit::Norms(in, dimension_, norm_ == QsgdNorm::kTwo, e);
    stats.non_finite = norms.non_finite;
    const auto scale_for = [&](double sum_squares) {
      const double norm =
          norm_ == QsgdNorm::kInf ? norms.largest : std::max(std::sqrt(sum_squares), norms.largest);
      return std::min(quantization::FloatAtLeast(norm), std::numeric_limits<float>::max());
    };
    // The definition adds the squares in index order; Norms' order is within a relative slack of
    // it, and the scale is monotone in the sum. Where both ends of that interval give one scale,
    // it is the definition's; otherwise the index-order sum is taken. The 4 2^-53 covers the
    // rounding of the bounds themselves.
    const double slack = (multibit::kSumSlack * static_cast<double>(dimension_) + 4) * 0x1p-53;
    float scale = scale_for(norms.sum_squares * (1 - slack));
    if (norm_ == QsgdNorm::kTwo && scale != scale_for(norms.sum_squares * (1 + slack))) {
      scale = scale_for(multibit::SumSquares(e != nullptr ? e : in.x, dimension_));
    }
    const auto n = static_cast<double>(scale);

    out.bytes.resize(MessageBytes());  // the kernels write every byte
    std::memcpy(out.bytes.data(), &scale, sizeof(float));
    std::uint8_t* fields = out.bytes.data() + sizeof(float);
    const multibit::Input<T> u = e == nullptr ? in : multibit::Input<T>{e};
    for (std::int64_t c = 0; c < dimension_; c += kWordChunk) {
      const std::int64_t c_end = std::min(dimension_, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      stats.out_of_domain +=
          multibit::QuantizeQsgd(u, words_.data(), c, c_end, n, levels_, width_, fields, e);
    }
    return stats;
  }

  std::size_t MessageBytes() const {
    return sizeof(float) + static_cast<std::size_t>(StreamBytes(dimension_, width_ + 1));
  }

  void CheckDimension(Eigen::Index d) const {
    LEMMALAB_CHECK(d == dimension_, "{} made for d = {} got a vector of {}", name_, dimension_, d);
  }

  // Calls f(j, value of element j) for every element of the message.
  template <typename F>
  void ForEachValue(const Message& in, Eigen::Index d, F f) const {
    CheckDimension(d);
    CheckMessageSize(name_, in, MessageBytes());
    float scale;
    std::memcpy(&scale, in.bytes.data(), sizeof(float));
    const auto n = static_cast<double>(scale);
    const auto s = static_cast<double>(levels_);
    const std::uint32_t level_mask = (1u << width_) - 1;
    BitReader reader(in.bytes.data() + sizeof(float));
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const std::uint32_t field = reader.Get(width_ + 1);
      const std::uint32_t level = field & level_mask;
      LEMMALAB_CHECK(level <= static_cast<std::uint32_t>(levels_),
                     "{} message holds level {} at {}, above s = {}", name_, level, j, levels_);
      // n l is exact in double (24 + 16 bits); one rounding for / s, one to T.
      const auto v = static_cast<T>(n * static_cast<double>(level) / s);
      f(j, (field >> width_) != 0 ? -v : v);
    }
  }

  std::string name_;
  int levels_;
  QsgdNorm norm_;
  std::int64_t dimension_;
  int width_;
  std::array<std::uint32_t, kWordChunk> words_;
};

}  // namespace

int QsgdLevelBits(int levels) {
  LEMMALAB_CHECK(levels >= 1 && levels <= kMaxQsgdLevels, "QSGD with {} levels", levels);
  return static_cast<int>(std::bit_width(static_cast<unsigned>(levels)));
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeQsgd(int levels, QsgdNorm norm, std::int64_t dimension,
                                        std::string_view name) {
  return std::make_unique<Qsgd<T>>(levels, norm, dimension, name);
}

template <typename T>
CompressorMaker<T> QsgdFromOptions(OptionTable& options) {
  static const std::vector<std::string> kNorms = {"2", "inf"};
  const auto levels = static_cast<int>(options.GetInt("levels", 4, 1, kMaxQsgdLevels));
  const QsgdNorm norm =
      options.GetChoice("norm", "2", kNorms) == "inf" ? QsgdNorm::kInf : QsgdNorm::kTwo;
  return [levels, norm](const CompressorShape& shape) {
    return MakeQsgd<T>(levels, norm, shape.dimension);
  };
}

template std::unique_ptr<Compressor<float>> MakeQsgd(int, QsgdNorm, std::int64_t, std::string_view);
template std::unique_ptr<Compressor<double>> MakeQsgd(int, QsgdNorm, std::int64_t,
                                                      std::string_view);
template CompressorMaker<float> QsgdFromOptions(OptionTable&);
template CompressorMaker<double> QsgdFromOptions(OptionTable&);

}  // namespace lemmalab
