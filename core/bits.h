// Packing of 1-bit messages: bit j of the payload lives in byte j / 8 at position j % 8
// (least significant bit first). A set bit means +1, a clear bit -1.
#pragma once

#include <cstdint>

namespace lemmalab {

constexpr std::int64_t PackedBytes(std::int64_t bits) { return (bits + 7) / 8; }

inline bool GetBit(const std::uint8_t* bytes, std::int64_t j) {
  return (bytes[j >> 3] >> (j & 7)) & 1u;
}

}  // namespace lemmalab
