// The lanes of a Highway mask as the low bits of a 64-bit word (lane l at bit l), for kernels
// compiled per SIMD target (included inside a file's per-target section, following Highway's
// -inl.h convention). Users: compressors/one_bit.cc and compressors/multibit.cc.

// Per-target include guard (Highway convention).
#if defined(LEMMALAB_COMPRESSORS_MASK_BITS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEMMALAB_COMPRESSORS_MASK_BITS_INL_H_
#undef LEMMALAB_COMPRESSORS_MASK_BITS_INL_H_
#else
#define LEMMALAB_COMPRESSORS_MASK_BITS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace lemmalab::HWY_NAMESPACE {

template <class D, class M>
HWY_INLINE std::uint64_t MaskBits(D d, M mask) {
  std::uint8_t bytes[8] = {};
  hwy::HWY_NAMESPACE::StoreMaskBits(d, mask, bytes);
  std::uint64_t bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  return bits;
}

}  // namespace lemmalab::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEMMALAB_COMPRESSORS_MASK_BITS_INL_H_
