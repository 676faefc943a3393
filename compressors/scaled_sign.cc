#include "compressors/scaled_sign.h"

#include "compressors/one_bit_compressor.h"

namespace lemmalab {

OneBitFormat ScaledSignFormat(std::int64_t dimension, std::int64_t chunk) {
  OneBitFormat format;
  format.name = "scaled-sign";
  format.draw = OneBitFormat::Draw::kSign;
  format.scale = OneBitFormat::Scale::kRms;
  format.blocks = FixedBlocks(dimension, chunk > 0 ? chunk : dimension);
  format.fixed_block_size = chunk;  // 0: one block
  return format;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeScaledSign(std::int64_t dimension, std::int64_t chunk) {
  return MakeOneBitCompressor<T>(ScaledSignFormat(dimension, chunk));
}

template <typename T>
CompressorMaker<T> ScaledSignFromOptions(OptionTable& options) {
  const std::int64_t chunk = options.GetInt("chunk", 0, 0);
  return
      [chunk](const CompressorShape& shape) { return MakeScaledSign<T>(shape.dimension, chunk); };
}

template std::unique_ptr<Compressor<float>> MakeScaledSign(std::int64_t, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeScaledSign(std::int64_t, std::int64_t);
template CompressorMaker<float> ScaledSignFromOptions(OptionTable&);
template CompressorMaker<double> ScaledSignFromOptions(OptionTable&);

}  // namespace lemmalab
