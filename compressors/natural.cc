#include "compressors/natural.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <span>

#include "compressors/quantization.h"
#include "compressors/split.h"
#include "core/bits.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

constexpr std::int64_t kWordChunk = 4096;

// float32 biased exponents: code E stands for 2^(E - 127); 0 is zero, 255 never sent.
constexpr int kExponentBias = 127;
constexpr int kSmallestCode = 1;   // 2^-126, the smallest normal float
constexpr int kLargestCode = 254;  // 2^127, the largest power of two below float32's infinity
const double kSmallestPower = std::ldexp(1.0, kSmallestCode - kExponentBias);
const double kLargestPower = std::ldexp(1.0, kLargestCode - kExponentBias);

// The values of the 256 exponent codes in T (code 255 decodes like 254; it is never sent).
template <typename T>
std::array<T, 256> CodeValues() {
  std::array<T, 256> values{};
  for (int code = kSmallestCode; code < 256; ++code) {
    values[static_cast<std::size_t>(code)] =
        static_cast<T>(std::ldexp(1.0, std::min(code, kLargestCode) - kExponentBias));
  }
  return values;
}

template <typename T>
class Natural final : public ElementwiseDecoded<T, Natural<T>> {
 public:
  explicit Natural(std::int64_t dimension) : dimension_(dimension) {}

  std::string_view name() const override { return "natural"; }
  bool unbiased() const override { return true; }
  bool draws_word_per_element() const override { return true; }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    CheckDimension(x.size());
    EncodeStats stats;
    stats.elements = dimension_;
    out.bytes.assign(MessageBytes(), 0);
    std::uint8_t* codes = out.bytes.data();
    std::uint8_t* signs = out.bytes.data() + dimension_;
    for (std::int64_t c = 0; c < dimension_; c += kWordChunk) {
      const std::int64_t c_end = std::min(dimension_, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      for (std::int64_t j = c; j < c_end; ++j) {
        const auto v = static_cast<double>(x[j]);
        const std::uint32_t word = words_[static_cast<std::size_t>(j - c)];
        int code = 0;
        if (!std::isfinite(v)) {
          ++stats.non_finite;
        } else if (v != 0) {
          const double a = std::abs(v);
          if (a < kSmallestPower) {
            // 0 or 2^-126, up with probability a / 2^-126 (an exact scaling).
            ++stats.out_of_domain;
            code = quantization::DrawBelow(std::ldexp(a, -(kSmallestCode - kExponentBias)), word)
                       ? kSmallestCode
                       : 0;
          } else if (a > kLargestPower) {
            ++stats.out_of_domain;
            code = kLargestCode;
          } else {
            // a = m 2^k with m in [0.5, 1): 2^e = 2^(k-1) <= a < 2^(k+1), and a / 2^e - 1 =
            // 2m - 1 in [0, 1), exact; 0 for a power of two, which is then sent as it is.
            int k;
            const double m = std::frexp(a, &k);
            code = k - 1 + kExponentBias + quantization::DrawBelow(2 * m - 1, word);
          }
          if (v < 0 && code != 0) signs[j >> 3] |= static_cast<std::uint8_t>(1u << (j & 7));
        }
        codes[j] = static_cast<std::uint8_t>(code);
      }
    }
    return stats;
  }

  // Part k is the exponent bytes of its range, then its sign bits.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    PrepareSplit("natural", bounds, dimension_, parts);
    CheckMessageSize("natural", whole, MessageBytes());
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      std::vector<std::uint8_t>& out = parts[k].bytes;
      AppendElementSlice(whole.bytes.data(), 8, bounds[k], bounds[k + 1], out);
      AppendElementSlice(whole.bytes.data() + dimension_, 1, bounds[k], bounds[k + 1], out);
    }
    return true;
  }

 private:
  friend class ElementwiseDecoded<T, Natural<T>>;

  std::size_t MessageBytes() const {
    return static_cast<std::size_t>(dimension_ + PackedBytes(dimension_));
  }

  void CheckDimension(Eigen::Index d) const {
    LEMMALAB_CHECK(d == dimension_, "natural made for d = {} got a vector of {}", dimension_, d);
  }

  template <typename F>
  void ForEachValue(const Message& in, Eigen::Index d, F f) const {
    CheckDimension(d);
    CheckMessageSize("natural", in, MessageBytes());
    static const std::array<T, 256> kValues = CodeValues<T>();
    const std::uint8_t* codes = in.bytes.data();
    const std::uint8_t* signs = in.bytes.data() + dimension_;
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const T v = kValues[codes[j]];
      f(j, GetBit(signs, j) ? -v : v);
    }
  }

  std::int64_t dimension_;
  std::array<std::uint32_t, kWordChunk> words_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeNatural(std::int64_t dimension) {
  return std::make_unique<Natural<T>>(dimension);
}

template <typename T>
CompressorMaker<T> NaturalFromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape& shape) { return MakeNatural<T>(shape.dimension); };
}

template std::unique_ptr<Compressor<float>> MakeNatural(std::int64_t);
template std::unique_ptr<Compressor<double>> MakeNatural(std::int64_t);
template CompressorMaker<float> NaturalFromOptions(OptionTable&);
template CompressorMaker<double> NaturalFromOptions(OptionTable&);

}  // namespace lemmalab
