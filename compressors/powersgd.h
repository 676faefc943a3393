// PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019, "PowerSGD: Practical Low-Rank Gradient
// Compression for Distributed Optimization", Algorithm 1): rank-r compression by one step of
// subspace (power) iteration per call, warm-started from the previous call's Q. How it relates
// to the paper's error feedback and multi-worker algorithm: docs/compressors.md#powersgd.
//
// Per layer of the shape (uses_layers() is true). A layer with rows > 1 and cols > 1 is the
// row-major rows x cols matrix M, compressed to rank r' = min(r, rows, cols):
//   P = M Q                 (Q is cols x r')
//   P^ = ORTHOGONALIZE(P)   (orthonormal columns)
//   Q = M^T P^
// and the receiver decodes P^ Q^T = P^ P^^T M (Algorithm 1's DECOMPRESS), the orthogonal
// projection of M's columns onto span(P^). Vector layers (rows == 1 or cols == 1: biases, or a
// whole flat shape, which is one d x 1 layer) are sent uncompressed, as Algorithm 1 does for
// biases.
//
// State (warm start): the instance keeps each layer's Q, as rounded to the wire precision (what
// a receiver knows), and starts the next call from it. On the first call, or on every call with
// warm_start = false, Q is drawn i.i.d. standard normal, as Algorithm 1 initialises it. Each
// sender keeps its own Q (the paper's workers share one).
//
// Draw order (the only randomness; a warm-started call after the first draws nothing): the
// matrix layers in order, each Q column by column (entry (i, k) is the (k cols + i)-th normal of
// its layer). Each normal takes two words w1, w2 of the stream (Box-Muller, cosine branch):
//   u1 = (w1 + 1/2) 2^-32 in (0, 1),  u2 = w2 2^-32,  z = sqrt(-2 ln u1) cos(2 pi u2),
// so a call that draws consumes exactly 2 r' cols words per matrix layer, and leaves the stream
// after the last of them. (Boost's ziggurat would consume a variable number of words; a fixed
// count keeps the position documentable. The 2^-32 granularity is irrelevant for a start vector.)
//
// Arithmetic is in double whatever T is: M Q, Gram-Schmidt and M^T P^; only the values put on
// the wire are rounded to T. ORTHOGONALIZE is modified Gram-Schmidt over the columns in order,
// each column projected twice ("twice is enough") before it is normalised. A column whose part
// orthogonal to the earlier ones is at most 1e-10 of its own length (exactly dependent columns,
// a zero column, zero M, or non-finite values) carries no direction above rounding error; it is
// replaced, deterministically, by the standard basis vector e_i with the smallest weight
// sum_j P^(i, j)^2 on the earlier columns (the lowest such i), orthonormalised the same way.
// P^ therefore always has r' orthonormal columns and never NaN from a division by zero: a zero
// matrix decodes to exactly zero, a matrix with r' = rows is reconstructed exactly, and a warm
// start that lost rank (Q = M^T P^ has rank <= rank(M)) regains it on the next call instead of
// staying rank deficient for the rest of the run.
//
// Wire format, per layer in order, values of T (float32 for T = float, float64 for T = double),
// little-endian:
//   matrix layer: P^ column by column (rows x r'), then Q column by column (cols x r');
//   vector layer: its elements.
// Size: sum over matrix layers of (rows + cols) r' bits(T), plus sum over vector layers of
// size bits(T); the dimensions are known from the shape, so nothing else is sent.
//
// q() is nullopt and unbiased() false. Since P^ has orthonormal columns, P^ Q^T = P^ P^^T M is an
// orthogonal projection of M, so ||M - P^ Q^T||_F <= ||M||_F: q = 1, with equality for instance
// when M's columns are orthogonal to span(P^) (a warm-started Q orthogonal to M's row space gives
// P = M Q = 0). There is no q < 1 for every x.
//
// Error feedback is not part of the compressor: PowerSGD composed with
// ErrorFeedback<T>(FeedbackKind::kClassic, d) (compressors/error_feedback.h) is the paper's
// method (its Algorithm 2).
//
// Non-finite input is counted in EncodeStats.non_finite; it makes the message and the kept Q
// non-finite, so later calls of the same instance stay non-finite (as an error-feedback memory
// would): the caller must treat the run as failed.
//
// Options: rank = r (integer >= 1, default 2), warm_start (default true).
//
// Split (chunked collectives) is not supported (returns false): P^ and Q of a matrix layer
// describe all of its coordinates, and an instance for a range that cuts the layer sees the
// piece as a flat (vector) layer it expects raw. Sending that piece decoded and raw would be
// exact but is not PowerSGD's traffic (its collective all-reduces P and Q, Algorithm 1).
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakePowerSgd(const CompressorShape& shape, std::int64_t rank,
                                            bool warm_start = true);

template <typename T>
CompressorMaker<T> PowerSgdFromOptions(OptionTable& options);

}  // namespace lemmalab
