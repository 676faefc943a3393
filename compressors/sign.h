// Sign (signSGD, Bernstein et al. 2018): C(x) = sign(x), one bit per element and nothing else.
// A bit has two states, so zero is sent as +1 (docs/conventions.md §5). Biased, with no q < 1
// and no alpha (||C(x)|| = sqrt(d) whatever ||x||, so ||C(x) - x|| > ||x|| for small x);
// used with error feedback it is EF-signSGD. Deterministic: draws nothing.
// Split (chunked collectives): part k is the bits of its range, a byte slice; always exact.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

// The wire format (compressors/one_bit_compressor.h), for the CPU and CUDA encoders alike.
struct OneBitFormat;
OneBitFormat SignFormat(std::int64_t dimension);

template <typename T>
std::unique_ptr<Compressor<T>> MakeSign(std::int64_t dimension);

template <typename T>
CompressorMaker<T> SignFromOptions(OptionTable& options);

}  // namespace lemmalab
