#include "compressors/block_sign.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compressors/one_bit_compressor.h"

namespace lemmalab {

OneBitFormat BlockSignFormat(const CompressorShape& shape, std::int64_t block_size) {
  OneBitFormat format;
  format.name = "block-sign";
  format.draw = OneBitFormat::Draw::kSign;
  format.scale = OneBitFormat::Scale::kMeanAbs;
  format.blocks = block_size > 0 ? FixedBlocks(shape.dimension, block_size) : shape.LayerRanges();
  format.uses_layers = block_size == 0;
  format.fixed_block_size = block_size;  // 0: the layers
  std::int64_t largest = 0;
  for (const auto& [lo, hi] : format.blocks) largest = std::max(largest, hi - lo);
  // Remark 1, plus 2^-23 for sending the scales as float32: their relative rounding error is at
  // most 2^-24 (and the double sums' far less), and s_B sqrt(d_B) <= ||x_B||.
  format.q = std::sqrt(1.0 - 1.0 / static_cast<double>(largest)) + std::ldexp(1.0, -23);
  return format;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeBlockSign(const CompressorShape& shape,
                                             std::int64_t block_size) {
  return MakeOneBitCompressor<T>(BlockSignFormat(shape, block_size));
}

template <typename T>
CompressorMaker<T> BlockSignFromOptions(OptionTable& options) {
  static const std::vector<std::string> kBlocks = {"layers", "fixed"};
  std::int64_t block_size = 0;
  if (options.GetChoice("blocks", "layers", kBlocks) == "fixed") {
    block_size = options.GetInt("block_size", 1024, 1);
  } else if (options.Has("block_size")) {
    options.Fail("block_size", "block_size applies only with blocks = \"fixed\"");
  }
  return [block_size](const CompressorShape& shape) { return MakeBlockSign<T>(shape, block_size); };
}

template std::unique_ptr<Compressor<float>> MakeBlockSign(const CompressorShape&, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeBlockSign(const CompressorShape&, std::int64_t);
template CompressorMaker<float> BlockSignFromOptions(OptionTable&);
template CompressorMaker<double> BlockSignFromOptions(OptionTable&);

}  // namespace lemmalab
