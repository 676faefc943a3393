// Helpers for Compressor::Split (compressors/compressor.h): the check of the bounds a chunked
// collective passes, and the byte slice of an element-wise section of a message.
//
// Every splittable format is a sequence of sections that are either shared by all elements (a
// scale: copied whole into each part) or hold a fixed number of bits per element, packed from a
// byte boundary, element j at bits [j w, (j + 1) w) (core/bits.h's order, least significant bit
// first). Inner bounds are multiples of kChunkAlign = 64, so j w is a multiple of 8 at every cut
// whatever w is: the part of [lo, hi) is the byte range [lo w / 8, ceil(hi w / 8)) of the section,
// a memcpy, and it ends with the section's own last byte (whose unused high bits are zero) when
// hi is the dimension.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "compressors/compressor.h"
#include "core/error.h"

namespace lemmalab {

// Checks the Split contract's bounds for vectors of `dimension` elements (an internal error
// otherwise: the collective computed them) and sizes `parts` to one message per range.
inline void PrepareSplit(std::string_view compressor, std::span<const std::int64_t> bounds,
                         std::int64_t dimension, std::vector<Message>& parts) {
  LEMMALAB_CHECK(bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == dimension,
                 "{}: split bounds must run from 0 to the dimension {} ({} bounds given)",
                 compressor, dimension, bounds.size());
  for (std::size_t k = 1; k < bounds.size(); ++k) {
    LEMMALAB_CHECK(bounds[k - 1] < bounds[k], "{}: split bounds {} and {} are not increasing",
                   compressor, bounds[k - 1], bounds[k]);
    LEMMALAB_CHECK(k + 1 == bounds.size() || bounds[k] % kChunkAlign == 0,
                   "{}: split bound {} is not a multiple of {}", compressor, bounds[k],
                   kChunkAlign);
  }
  parts.resize(bounds.size() - 1);
  for (Message& part : parts) part.bytes.clear();
}

// Appends the elements [lo, hi) of a section of `bits_per_element` bits per element starting at
// `section` to `out`.
inline void AppendElementSlice(const std::uint8_t* section, std::int64_t bits_per_element,
                               std::int64_t lo, std::int64_t hi, std::vector<std::uint8_t>& out) {
  LEMMALAB_CHECK(lo * bits_per_element % 8 == 0,
                 "a cut at element {} of {}-bit fields is not on a byte", lo, bits_per_element);
  const std::int64_t first = lo * bits_per_element / 8;
  const std::int64_t end = (hi * bits_per_element + 7) / 8;
  out.insert(out.end(), section + first, section + end);
}

// Appends `size` shared bytes (a scale every part repeats) to `out`.
inline void AppendShared(const std::uint8_t* bytes, std::size_t size,
                         std::vector<std::uint8_t>& out) {
  out.insert(out.end(), bytes, bytes + size);
}

}  // namespace lemmalab
