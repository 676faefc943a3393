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

#include "compressors/quantization.h"
#include "compressors/split.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

using quantization::BitReader;
using quantization::BitWriter;
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
    EncodeStats stats;
    stats.elements = dimension_;
    double sum_squares = 0, largest = 0;
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const auto v = static_cast<double>(x[j]);
      if (!std::isfinite(v)) {
        ++stats.non_finite;
        continue;
      }
      largest = std::max(largest, std::abs(v));
      sum_squares += v * v;
    }
    const double norm =
        norm_ == QsgdNorm::kInf ? largest : std::max(std::sqrt(sum_squares), largest);
    const float scale =
        std::min(quantization::FloatAtLeast(norm), std::numeric_limits<float>::max());
    const auto n = static_cast<double>(scale);
    const auto s = static_cast<double>(levels_);

    out.bytes.assign(MessageBytes(), 0);
    std::memcpy(out.bytes.data(), &scale, sizeof(float));
    BitWriter writer(out.bytes.data() + sizeof(float));
    for (std::int64_t c = 0; c < dimension_; c += kWordChunk) {
      const std::int64_t c_end = std::min(dimension_, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      for (std::int64_t j = c; j < c_end; ++j) {
        const auto v = static_cast<double>(x[j]);
        std::uint32_t level = 0;
        if (std::isfinite(v) && v != 0) {  // v != 0 also covers n = 0
          const double a = std::abs(v);
          if (a > n) {
            ++stats.out_of_domain;
            level = static_cast<std::uint32_t>(levels_);
          } else {
            // a / n <= 1 after rounding, so t <= s and level <= s.
            const double t = s * (a / n);
            const double r = std::floor(t);
            level = static_cast<std::uint32_t>(r) +
                    quantization::DrawBelow(t - r, words_[static_cast<std::size_t>(j - c)]);
          }
        }
        const std::uint32_t negative = level > 0 && v < 0 ? 1u : 0u;
        writer.Put(level | negative << width_, width_ + 1);
      }
    }
    writer.Finish();
    return stats;
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
