#include "compressors/stochastic_binary.h"

#include <string>
#include <vector>

#include "compressors/one_bit_compressor.h"

namespace lemmalab {

OneBitFormat StochasticBinaryFormat(QuantizerDomain domain, std::int64_t dimension) {
  OneBitFormat format;
  format.name = "stochastic-binary";
  format.draw = OneBitFormat::Draw::kStochastic;
  format.scale = domain == QuantizerDomain::kRescale ? OneBitFormat::Scale::kMaxAbs
                                                     : OneBitFormat::Scale::kNone;
  format.blocks = {{0, dimension}};
  format.unbiased = domain == QuantizerDomain::kRescale;
  return format;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeStochasticBinary(QuantizerDomain domain,
                                                    std::int64_t dimension) {
  return MakeOneBitCompressor<T>(StochasticBinaryFormat(domain, dimension));
}

template <typename T>
CompressorMaker<T> StochasticBinaryFromOptions(OptionTable& options) {
  static const std::vector<std::string> kDomains = {"clip", "rescale"};
  const QuantizerDomain domain = options.GetChoice("domain", "clip", kDomains) == "rescale"
                                     ? QuantizerDomain::kRescale
                                     : QuantizerDomain::kClip;
  return [domain](const CompressorShape& shape) {
    return MakeStochasticBinary<T>(domain, shape.dimension);
  };
}

template std::unique_ptr<Compressor<float>> MakeStochasticBinary(QuantizerDomain, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeStochasticBinary(QuantizerDomain, std::int64_t);
template CompressorMaker<float> StochasticBinaryFromOptions(OptionTable&);
template CompressorMaker<double> StochasticBinaryFromOptions(OptionTable&);

}  // namespace lemmalab
