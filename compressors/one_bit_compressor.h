// The engine shared by the 1-bit compressors (stochastic-binary, sign, scaled-sign, block-sign):
// one bit per element, zero or more float32 scales, error feedback fused into the encoding pass
// (compressors/one_bit.h has the kernels).
//
// Wire format: the scales of the blocks in order (float32, little-endian), then ceil(d/8) bytes
// of packed bits (bit j in byte j/8 at position j%8, set = +1). Block B decodes to
// bit ? s_B : -s_B, with s_B = 1 when the format sends no scale.
//
// Split (chunked collectives, compressors/compressor.h): the part of [lo, hi) is, for every
// block B that overlaps [lo, hi) in order, B's scale (repeated in each part B overlaps), then the
// bits of [lo, hi), a byte slice since lo is a multiple of 64. An instance for
// Restrict(lo, hi) decodes it exactly when its blocks are the pieces of these blocks inside
// [lo, hi):
//   - one block (sign, stochastic-binary, scaled-sign with one scale): always;
//   - the layers (block-sign's default): always, since Restrict keeps a layer inside the range
//     and turns a cut one into a flat piece, one block of its own that receives the scale of the
//     whole layer;
//   - fixed blocks of n (scaled-sign's `chunk`, block-sign's "fixed"): an instance for the range
//     restarts them at lo, so only when each range starts on a block boundary (lo % n == 0) or
//     lies inside one block; otherwise Split returns false.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/one_bit_element.h"

namespace lemmalab {

struct OneBitFormat {
  using Draw = one_bit::Draw;
  using Scale = one_bit::Scale;

  std::string_view name;
  Draw draw = Draw::kSign;
  Scale scale = Scale::kNone;
  // Blocks [begin, end) covering [0, d) in order; one scale each (when the format sends scales).
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
  // n > 0 when `blocks` is FixedBlocks(d, n), which an instance for a sub-range restarts at the
  // sub-range's start (Split needs to know); 0 when the blocks are one block or the layers.
  std::int64_t fixed_block_size = 0;
  bool unbiased = false;
  std::optional<double> q;
  bool uses_layers = false;
};

template <typename T>
std::unique_ptr<Compressor<T>> MakeOneBitCompressor(OneBitFormat format);

// Blocks of `size` elements (the last one shorter) covering [0, dimension).
std::vector<std::pair<std::int64_t, std::int64_t>> FixedBlocks(std::int64_t dimension,
                                                               std::int64_t size);

}  // namespace lemmalab
