#include "compressors/sign.h"

#include "compressors/one_bit_compressor.h"

namespace lemmalab {

OneBitFormat SignFormat(std::int64_t dimension) {
  OneBitFormat format;
  format.name = "sign";
  format.draw = OneBitFormat::Draw::kSign;
  format.scale = OneBitFormat::Scale::kNone;
  format.blocks = {{0, dimension}};
  return format;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeSign(std::int64_t dimension) {
  return MakeOneBitCompressor<T>(SignFormat(dimension));
}

template <typename T>
CompressorMaker<T> SignFromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape& shape) { return MakeSign<T>(shape.dimension); };
}

template std::unique_ptr<Compressor<float>> MakeSign(std::int64_t);
template std::unique_ptr<Compressor<double>> MakeSign(std::int64_t);
template CompressorMaker<float> SignFromOptions(OptionTable&);
template CompressorMaker<double> SignFromOptions(OptionTable&);

}  // namespace lemmalab
