#include "compressors/natural.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <span>

#include "compressors/multibit.h"
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
  CompressorClaims claims() const override {
    // Horvath et al., Theorem 3 (natural.h).
    return {.unbiased = true, .omega = 0.125, .draws_word_per_element = true};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    CheckDimension(x.size());
    return EncodeInput({x.data()}, stream, out, nullptr);
  }

  // One pass: u = x + a e, its codes, and u - C(u) into e (the default's bits, multibit.h).
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) override {
    CheckDimension(x.size());
    CheckDimension(e.size());
    return EncodeInput({x.data(), e.data(), a}, stream, out, e.data());
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

  EncodeStats EncodeInput(const multibit::Input<T>& in, PhiloxStream& stream, Message& out,
                          T* e_out) {
    EncodeStats stats;
    stats.elements = dimension_;
    // The kernels write every code; sign bits are set into zeroed bytes.
    out.bytes.resize(MessageBytes());
    std::uint8_t* codes = out.bytes.data();
    std::uint8_t* signs = out.bytes.data() + dimension_;
    std::fill(signs, out.bytes.data() + out.bytes.size(), 0);
    for (std::int64_t c = 0; c < dimension_; c += kWordChunk) {
      const std::int64_t c_end = std::min(dimension_, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      const multibit::Counts counts =
          multibit::QuantizeNatural(in, words_.data(), c, c_end, codes, signs, e_out);
      stats.out_of_domain += counts.out_of_domain;
      stats.non_finite += counts.non_finite;
    }
    return stats;
  }

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
