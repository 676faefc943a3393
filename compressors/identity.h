// Identity: C(x) = x, sent as the raw scalars of the run's precision (32 or 64 bits each).
// The uncompressed baseline (q = 0 in the q-deviate sense of spams.txt Assumption 1; omega = 0
// and alpha = 1 in the U(omega) / C(alpha) classes). Deterministic: draws nothing.
// An instance keeps no state in Encode, Decode or DecodeAdd. (The optimizers' full-precision
// messages go through optimizers/full_precision_wire.h, which sends the same bytes.)
// Split: part k is the scalars of its range, a byte slice of the message.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
CompressorMaker<T> IdentityFromOptions(OptionTable& options);

}  // namespace lemmalab

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeIdentity();

}  // namespace lemmalab
