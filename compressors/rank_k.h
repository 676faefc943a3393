// Rank-k: the best rank-k approximation of every matrix layer, by a full singular value
// decomposition (deterministic; compare PowerSGD, compressors/powersgd.h, which approximates it
// by one warm-started power step). Per layer of the shape (uses_layers() is true): a matrix layer
// (rows > 1 and cols > 1, the row-major matrix X of compressors/low_rank.h) with
//   k (rows + cols) < rows cols                                               (factored)
// is sent as X_k = (U_k S_k) V_k^T: the k leading left singular vectors scaled by their singular
// values, and the k leading right singular vectors; any other layer (a vector layer, or a matrix
// whose factors would not be smaller than the matrix itself, which includes every matrix with
// min(rows, cols) <= k) is sent whole, exactly.
//
// q (spams.txt Assumption 1): by Eckart-Young, ||X - X_k||_F^2 = sum_{i>k} sigma_i^2, and the k
// largest of the r = min(rows, cols) squared singular values hold at least k/r of
// ||X||_F^2 = sum_i sigma_i^2, so ||X - X_k||_F^2 <= (1 - k/r) ||X||_F^2. Summed over layers (whole
// ones exact), ||C(x) - x||^2 <= (1 - k / r_max) ||x||^2 with r_max the largest min(rows, cols)
// of a factored layer:
//   q = sqrt(1 - k / r_max) + (3 + sqrt(k)) 2^-24,   0 when no layer is factored,
// (nullopt in the unlikely case that this reaches 1). The added term covers the rounding of the
// factors to T (each of U_k S_k and V_k within a relative 2^-24, elementwise, for float:
// ||P~ Q~^T - P Q^T||_F <= 2^-24 (||X_k||_F + sqrt(k) sigma_1) to first order, since ||V_k||_2 = 1
// and ||V_k||_F = sqrt(k)), the final rounding of P~ Q~^T to T (2^-24) and, generously, the double
// SVD's own error. alpha = 1 - q^2 follows (EF21's C(alpha)).
//
// The decomposition: Eigen's BDCSVD in double (Jacobi below 16 columns), thin U and V, singular
// values in decreasing order. Ties among singular values make the best rank-k approximation
// non-unique; the message is whichever Eigen's deterministic algorithm gives, a function of x.
// Deterministic: draws nothing.
//
// Options: rank = k (integer >= 1, default 1).
//
// Wire format, per layer in order, values of T (float32 for T = float, float64 for T = double),
// little-endian:
//   factored layer: U_k S_k column by column (rows x k), then V_k column by column (cols x k);
//   any other layer: its elements.
// Size: sum over factored layers of k (rows + cols) bits(T), plus the sizes of the others in
// bits(T); the dimensions are known from the shape, so nothing else is sent. The receiver forms
// (U_k S_k) V_k^T in double and rounds it to T (compressors/low_rank.h).
// A factored layer with a non-finite element (counted in EncodeStats.non_finite) is sent as NaN
// factors, so it decodes to NaN: the SVD of such a matrix is meaningless, and the caller must
// treat the run as failed.
// Split (chunked collectives): not supported (returns false), as for PowerSGD: the factors of a
// layer describe all of its coordinates.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeRankK(const CompressorShape& shape, std::int64_t rank);

template <typename T>
CompressorMaker<T> RankKFromOptions(OptionTable& options);

}  // namespace lemmalab
