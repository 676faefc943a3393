// PermK (Szlendak, Tyurin, Richtarik, "Permutation compressors for provably faster distributed
// nonconvex optimization", ICLR 2022): correlated sparsifiers. At each step the n senders share
// one uniformly random permutation pi of the d coordinates and split it: sender i sends the
// coordinates of its block B_i of positions, scaled so that its own C_i is unbiased,
//
//   C_i(x) = (d / |B_i|) sum_{p in B_i} x_pi(p) e_pi(p).
//
// Blocks (sender i of n, from the instance's shape: CompressorShape::sender, senders):
//   - n <= d: consecutive positions, floor(d/n) each and one more for the first d mod n senders:
//     B_i = [i floor(d/n) + min(i, d mod n), + |B_i|). For d = q n this is the paper's PermK
//     (each C_i scaled by n).
//   - n > d: the rule above would leave senders with nothing (and C_i = 0 is not unbiased), so
//     each sender gets one position, B_i = {i mod d}, scaled by d. (The paper's construction for
//     n >= d permutes a multiset of the coordinates instead; here senders i and i + d always
//     send the same coordinate. Both are unbiased with omega = d - 1 and average to x exactly
//     when d divides n.)
//   - n = 1 (or d = 1): the one block is everything: C(x) = x, and nothing is drawn.
// pi(B_i) is a uniformly random |B_i|-subset of the coordinates, so each coordinate is sent with
// probability |B_i| / d and C_i is exactly scaled random-k with k = |B_i|: unbiased, with
//   E||C_i(x) - x||^2 = (d/|B_i| - 1) ||x||^2,   omega() = d/|B_i| - 1 (0 for n = 1).
// What MARINA's theory uses is the property of the set: the blocks partition the positions, so
// when n divides d every coordinate is sent by exactly one sender, scaled by n, and
//   (1/n) sum_i C_i(x) = x   exactly, for every draw
// (for d not a multiple of n the blocks differ in size, the scales d/|B_i| differ, and the mean
// is x only in expectation; tests/permk_test.cc shows both).
//
// The shared draw: the permutation comes from PhiloxStream({seed, Purpose::kSharedCompression,
// kGlobalStream, step}), seed and step being those of the stream Encode is given
// (PhiloxStream::stream_key()) when that is a worker's compression stream (Purpose::
// kWorkerCompression); the given stream itself is then not read, and not advanced. So every
// sender of a step draws the same pi (correlated_senders() is true, except where a sender sends
// everything and draws nothing), and an encode depends on (seed, step) and not on the worker.
// Given any other stream (a probe's repeated draws on one input), pi is drawn from that stream,
// by the same rule: each call is then one independent draw of this sender's C_i.
// Fisher-Yates (Durstenfeld): pi starts as the identity; for t = 0, ..., d - 2 the
// position p = d - 1 - t is swapped with the position r drawn uniformly in [0, p] by
// UniformBelow(p + 1, ...) of compressors/sparse.h (Lemire's multiply-and-reject, exact). Draw t
// takes its first attempt from word t of the shared stream (the words come from one
// vectorised Fill; a sender stops after the draw that fixes its block's first position, as the
// positions below it are never read); a rejected attempt (probability < (p + 1) / 2^32) is replaced
// by the next unused word after those d - 1, in the order rejections occur. Every permutation has
// probability 1/d! exactly.
//
// Wire format (compressors/sparse.h): the |B_i| coordinates pi(B_i) ascending, then their raw
// values in T:
//   bits = |B_i| * (8 * IndexBytes(d) + 8 * sizeof(T)).
// The receiver reads |B_i| from the message's size and applies d/|B_i| (rounded to T), so any
// instance of the configuration decodes any sender's message (the aggregation point's decoder
// is made for sender 0 of 1). Non-finite inputs are counted over all d coordinates.
// Split (chunked collectives): not supported, as for random-k: an instance for a range cannot
// know how many of the sender's coordinates fall in it.
#pragma once

#include <cstdint>

#include "compressors/compressor.h"

namespace lemmalab {

// |B_i| for sender `sender` of `senders` over `dimension` coordinates.
std::int64_t PermKBlockSize(std::int64_t dimension, int sender, int senders);

template <typename T>
std::unique_ptr<Compressor<T>> MakePermK(const CompressorShape& shape);

template <typename T>
CompressorMaker<T> PermKFromOptions(OptionTable& options);

}  // namespace lemmalab
