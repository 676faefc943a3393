#include "compressors/stochastic_binary.h"

#include <algorithm>
#include <bit>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <cstring>

#include "core/bits.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

template <typename T>
class StochasticBinary final : public Compressor<T> {
 public:
  explicit StochasticBinary(QuantizerDomain domain) : domain_(domain) {}

  std::string_view name() const override { return "stochastic-binary"; }
  bool unbiased() const override { return domain_ == QuantizerDomain::kRescale; }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    const Eigen::Index d = x.size();
    const std::size_t header = HeaderBytes();
    out.bytes.assign(header + static_cast<std::size_t>(PackedBytes(d)), 0);
    EncodeStats stats;
    stats.elements = d;

    double scale = 1.0;
    if (domain_ == QuantizerDomain::kRescale) {
      double largest = 1.0;
      for (Eigen::Index j = 0; j < d; ++j) {
        const double a = std::abs(static_cast<double>(x[j]));
        if (std::isfinite(a)) largest = std::max(largest, a);
      }
      // Round the scale up so that |x_j| / s <= 1 still holds after float32 rounding.
      float s = static_cast<float>(largest);
      if (static_cast<double>(s) < largest) s = std::nextafter(s, INFINITY);
      std::memcpy(out.bytes.data(), &s, sizeof(float));
      scale = s;
    }

    boost::random::uniform_01<double> uniform;
    std::uint8_t* bits = out.bytes.data() + header;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double u_draw = uniform(stream);  // word j, drawn whatever the input
      double v = static_cast<double>(x[j]);
      if (!std::isfinite(v)) {
        ++stats.non_finite;
        continue;
      }
      if (std::abs(v) > 1.0) ++stats.out_of_domain;
      v = std::clamp(v / scale, -1.0, 1.0);
      const double p = 0.5 * (v + 1.0);
      if (u_draw < p) bits[j >> 3] |= static_cast<std::uint8_t>(1u << (j & 7));
    }
    return stats;
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    const T scale = Scale(in, out.size());
    const std::uint8_t* bits = in.bytes.data() + HeaderBytes();
    for (Eigen::Index j = 0; j < out.size(); ++j) out[j] = GetBit(bits, j) ? scale : -scale;
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    const T step = weight * Scale(in, acc.size());
    const std::uint8_t* bits = in.bytes.data() + HeaderBytes();
    for (Eigen::Index j = 0; j < acc.size(); ++j) acc[j] += GetBit(bits, j) ? step : -step;
  }

 private:
  std::size_t HeaderBytes() const {
    return domain_ == QuantizerDomain::kRescale ? sizeof(float) : 0;
  }

  T Scale(const Message& in, Eigen::Index d) const {
    LEMMALAB_CHECK(in.bytes.size() == HeaderBytes() + static_cast<std::size_t>(PackedBytes(d)),
                   "stochastic-binary message of {} bytes does not match d = {}", in.bytes.size(),
                   d);
    if (domain_ == QuantizerDomain::kClip) return T(1);
    float s;
    std::memcpy(&s, in.bytes.data(), sizeof(float));
    return static_cast<T>(s);
  }

  QuantizerDomain domain_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeStochasticBinary(QuantizerDomain domain) {
  return std::make_unique<StochasticBinary<T>>(domain);
}

template <typename T>
CompressorMaker<T> StochasticBinaryFromOptions(OptionTable& options) {
  static const std::vector<std::string> kDomains = {"clip", "rescale"};
  const QuantizerDomain domain = options.GetChoice("domain", "clip", kDomains) == "rescale"
                                     ? QuantizerDomain::kRescale
                                     : QuantizerDomain::kClip;
  return [domain] { return MakeStochasticBinary<T>(domain); };
}

template std::unique_ptr<Compressor<float>> MakeStochasticBinary(QuantizerDomain);
template std::unique_ptr<Compressor<double>> MakeStochasticBinary(QuantizerDomain);
template CompressorMaker<float> StochasticBinaryFromOptions(OptionTable&);
template CompressorMaker<double> StochasticBinaryFromOptions(OptionTable&);

}  // namespace lemmalab
