#include "compressors/half_precision.h"

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "compressors/split.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

template <typename H>
struct HalfTraits;

template <>
struct HalfTraits<Eigen::half> {
  static constexpr std::string_view kName = "fp16";
  static constexpr int kMinNormalExponent = -14;
  static constexpr int kUnitRoundoffExponent = -11;
};

template <>
struct HalfTraits<Eigen::bfloat16> {
  static constexpr std::string_view kName = "bf16";
  static constexpr int kMinNormalExponent = -126;
  static constexpr int kUnitRoundoffExponent = -8;
};

template <typename T, typename H>
class HalfPrecision final : public ElementwiseDecoded<T, HalfPrecision<T, H>> {
 public:
  explicit HalfPrecision(std::int64_t dimension) : dimension_(dimension) {}

  std::string_view name() const override { return HalfTraits<H>::kName; }
  CompressorClaims claims() const override {
    // A cast: the stream is never read. (bf16's alpha = 1 - q^2 follows from q; fp16 has none.)
    CompressorClaims c{.unbiased = false, .deterministic = true};
    if constexpr (!std::is_same_v<H, Eigen::half>) {
      const double u = std::ldexp(1.0, HalfTraits<H>::kUnitRoundoffExponent);
      c.q = std::is_same_v<T, float> ? u : u + std::ldexp(1.0, -23);
    }
    return c;  // fp16: q = nullopt
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& /*stream*/, Message& out) override {
    CheckDimension(x.size());
    EncodeStats stats;
    stats.elements = dimension_;
    out.bytes.resize(MessageBytes());
    const H largest = Eigen::NumTraits<H>::highest();
    const double smallest_normal = std::ldexp(1.0, HalfTraits<H>::kMinNormalExponent);
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const T v = x[j];
      H h;
      if (!std::isfinite(v)) {
        ++stats.non_finite;
        h = H(static_cast<float>(v));  // NaN stays NaN, infinity infinity
      } else {
        const double a = std::abs(static_cast<double>(v));
        // A double beyond float32's range would overflow Eigen's cast through float.
        h = a > std::numeric_limits<float>::max() ? std::numeric_limits<H>::infinity() : H(v);
        if ((Eigen::numext::isinf)(h)) {
          ++stats.out_of_domain;
          h = v < 0 ? H(-largest) : largest;
        } else if (a != 0 && a < smallest_normal) {
          ++stats.out_of_domain;
        }
      }
      const auto bits = std::bit_cast<std::uint16_t>(h);
      std::memcpy(out.bytes.data() + 2 * j, &bits, sizeof(bits));
    }
    return stats;
  }

  // Part k is the 16-bit words of its range.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    PrepareSplit(name(), bounds, dimension_, parts);
    CheckMessageSize(name(), whole, MessageBytes());
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      AppendElementSlice(whole.bytes.data(), 16, bounds[k], bounds[k + 1], parts[k].bytes);
    }
    return true;
  }

 private:
  friend class ElementwiseDecoded<T, HalfPrecision<T, H>>;

  std::size_t MessageBytes() const { return 2 * static_cast<std::size_t>(dimension_); }

  void CheckDimension(Eigen::Index d) const {
    LEMMALAB_CHECK(d == dimension_, "{} made for d = {} got a vector of {}", name(), dimension_, d);
  }

  template <typename F>
  void ForEachValue(const Message& in, Eigen::Index d, F f) const {
    CheckDimension(d);
    CheckMessageSize(name(), in, MessageBytes());
    for (std::int64_t j = 0; j < dimension_; ++j) {
      std::uint16_t bits;
      std::memcpy(&bits, in.bytes.data() + 2 * j, sizeof(bits));
      // Every 16-bit value is exact in float32, and so in T.
      f(j, static_cast<T>(static_cast<float>(std::bit_cast<H>(bits))));
    }
  }

  std::int64_t dimension_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeHalfPrecision(HalfFormat format, std::int64_t dimension) {
  if (format == HalfFormat::kFp16)
    return std::make_unique<HalfPrecision<T, Eigen::half>>(dimension);
  return std::make_unique<HalfPrecision<T, Eigen::bfloat16>>(dimension);
}

template <typename T>
CompressorMaker<T> Fp16FromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape& shape) {
    return MakeHalfPrecision<T>(HalfFormat::kFp16, shape.dimension);
  };
}

template <typename T>
CompressorMaker<T> Bf16FromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape& shape) {
    return MakeHalfPrecision<T>(HalfFormat::kBf16, shape.dimension);
  };
}

template std::unique_ptr<Compressor<float>> MakeHalfPrecision(HalfFormat, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeHalfPrecision(HalfFormat, std::int64_t);
template CompressorMaker<float> Fp16FromOptions(OptionTable&);
template CompressorMaker<double> Fp16FromOptions(OptionTable&);
template CompressorMaker<float> Bf16FromOptions(OptionTable&);
template CompressorMaker<double> Bf16FromOptions(OptionTable&);

}  // namespace lemmalab
