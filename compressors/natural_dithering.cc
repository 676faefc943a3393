#include "compressors/natural_dithering.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "compressors/multibit.h"
#include "compressors/quantization.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

using quantization::BitWriter;

// Draw words are generated this many at a time.
constexpr std::int64_t kWordChunk = 4096;

template <typename T>
class NaturalDithering final : public ElementwiseDecoded<T, NaturalDithering<T>> {
 public:
  NaturalDithering(int levels, QsgdNorm norm, std::int64_t dimension)
      : format_("natural-dithering", levels, dimension), norm_(norm) {
    LEMMALAB_CHECK(levels >= 1 && levels <= kMaxNaturalDitheringLevels,
                   "natural dithering with {} levels", levels);
  }

  std::string_view name() const override { return format_.compressor(); }
  CompressorClaims claims() const override {
    // Horvath et al., Theorem 7 with r = 2 (natural_dithering.h).
    const double spread =
        std::sqrt(static_cast<double>(format_.dimension())) * std::ldexp(1.0, 1 - format_.levels());
    return {.unbiased = true,
            .omega = 0.125 + spread * std::min(1.0, spread),
            .draws_word_per_element = true};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    format_.CheckDimension(x.size());
    const std::int64_t d = format_.dimension();
    const int levels = format_.levels(), width = format_.width();
    const multibit::Scale scale =
        multibit::NormScale<T>({x.data()}, d, norm_ == QsgdNorm::kTwo, nullptr);
    EncodeStats stats{.elements = d, .non_finite = scale.non_finite};
    const auto n = static_cast<double>(scale.value);
    const double smallest = std::ldexp(1.0, 1 - levels);  // 2^(1-s), the lowest nonzero level

    out.bytes.assign(format_.MessageBytes(), 0);
    std::memcpy(out.bytes.data(), &scale.value, sizeof(float));
    BitWriter writer(out.bytes.data() + sizeof(float));
    for (std::int64_t c = 0; c < d; c += kWordChunk) {
      const std::int64_t c_end = std::min(d, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      for (std::int64_t j = c; j < c_end; ++j) {
        const auto v = static_cast<double>(x[j]);
        std::uint32_t code = 0;
        if (std::isfinite(v) && v != 0) {  // v != 0 also covers N_f = 0
          const double a = std::abs(v);
          const std::uint32_t word = words_[static_cast<std::size_t>(j - c)];
          if (a > n) {
            ++stats.out_of_domain;
            code = static_cast<std::uint32_t>(levels);
          } else if (const double y = a / n; y < smallest) {
            // Between 0 and 2^(1-s): up with probability y 2^(s-1), an exact scaling.
            code = quantization::DrawBelow(std::ldexp(y, levels - 1), word) ? 1u : 0u;
          } else {
            // y = m 2^k, m in [0.5, 1): between 2^(k-1) (code k - 1 + s) and 2^k, up with
            // probability y / 2^(k-1) - 1 = 2m - 1, exact; y <= 1 (a <= N_f), so y = 1 has
            // k = 1, m = 0.5 and stays at code s.
            int k;
            const double m = std::frexp(y, &k);
            code = static_cast<std::uint32_t>(k - 1 + levels) +
                   (quantization::DrawBelow(2 * m - 1, word) ? 1u : 0u);
          }
        }
        const std::uint32_t negative = code > 0 && v < 0 ? 1u : 0u;
        writer.Put(code | negative << width, width + 1);
      }
    }
    writer.Finish();
    return stats;
  }

  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    return format_.Split(whole, bounds, parts);
  }

 private:
  friend class ElementwiseDecoded<T, NaturalDithering<T>>;

  // Calls f(j, value of element j) for every element of the message.
  template <typename F>
  void ForEachValue(const Message& in, Eigen::Index d, F f) const {
    const int levels = format_.levels();
    // N_f 2^(c - s) is exact in double (a float times a power of two); one rounding to T.
    const auto magnitude = [levels](double n, std::uint32_t code) {
      return code == 0 ? T(0) : static_cast<T>(std::ldexp(n, static_cast<int>(code) - levels));
    };
    format_.ForEachValue(in, d, magnitude, f);
  }

  QsgdFormat format_;
  QsgdNorm norm_;
  std::array<std::uint32_t, kWordChunk> words_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeNaturalDithering(int levels, QsgdNorm norm,
                                                    std::int64_t dimension) {
  return std::make_unique<NaturalDithering<T>>(levels, norm, dimension);
}

template <typename T>
CompressorMaker<T> NaturalDitheringFromOptions(OptionTable& options) {
  const auto levels = static_cast<int>(options.GetInt("levels", 8, 1, kMaxNaturalDitheringLevels));
  const QsgdNorm norm = QsgdNormFromOptions(options);
  return [levels, norm](const CompressorShape& shape) {
    return MakeNaturalDithering<T>(levels, norm, shape.dimension);
  };
}

template std::unique_ptr<Compressor<float>> MakeNaturalDithering(int, QsgdNorm, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeNaturalDithering(int, QsgdNorm, std::int64_t);
template CompressorMaker<float> NaturalDitheringFromOptions(OptionTable&);
template CompressorMaker<double> NaturalDitheringFromOptions(OptionTable&);

}  // namespace lemmalab
