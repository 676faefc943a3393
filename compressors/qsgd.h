// QSGD (Alistarh, Grubic, Li, Tomioka, Vojnovic, NeurIPS 2017, Sec. 3.1; birder.txt footnote 4):
// the stochastic quantizer with s levels,
//
//   Q_s(x)_j = N sign(x_j) l_j / s,   N = ||x||_p,
//   l_j = r_j + 1 with probability t_j - r_j, else r_j,   t_j = s |x_j| / N,  r_j = floor(t_j),
//
// so E[l_j] = t_j and E[Q_s(x)] = x: unbiased. Birder's footnote 4 prints the two probabilities
// swapped (r/s with probability t_j - r), which would make E[l_j] = 2r_j + 1 - t_j, a biased
// quantizer; this is the paper's unbiased QSGD. Per coordinate E[(Q_s(x)_j - x_j)^2] =
// (N/s)^2 p_j (1 - p_j) with p_j = t_j - r_j, and for the 2-norm Alistarh et al.'s Lemma 3.1
// bounds the total: E||Q_s(x) - x||^2 <= min(d/s^2, sqrt(d)/s) ||x||^2, declared as omega()
// (DIANA's and MARINA's class U(omega)). The lemma's argument holds for any N with
// max |x_j| <= N <= ||x||_2, so for the inf-norm too: p_j (1 - p_j) <= 1/4 gives at most
// d N^2 / (4 s^2) <= (d/s^2) ||x||^2, and p_j (1 - p_j) <= p_j <= t_j gives at most
// (N/s)^2 sum_j t_j = (N/s) ||x||_1 <= (sqrt(d)/s) ||x||^2. Like unbiasedness, the constant is
// that of the exact quantizer: the float32 N_f (rounded up, up to a relative 2^-23 above N),
// the 2^-32 draw granularity and the rounding of the decoded values to T are not included.
//
// Options: levels = s (integer in [1, 65535], default 4: 3 level bits + 1 sign bit per element);
// norm = "2" (default, the paper's) or "inf" (N = max |x_j|, the footnote's p-norm with p = inf;
// with s = 1 it is TernGrad, compressors/terngrad.h). Any N >= max |x_j| keeps the quantizer
// unbiased; the norm only changes the variance. More than 65535 levels (17 bits per element)
// would cost over half of float32; fp16 / bf16 are then the better baselines.
//
// The scale actually used: N is computed in double over the finite elements (for the 2-norm
// max(sqrt(sum x_j^2), max |x_j|), equal in exact arithmetic, so that N >= |x_j| after rounding)
// and rounded UP to float32, N_f. The probabilities are computed from that same float32 N_f that
// the receiver multiplies by (t_j = s (|x_j| / N_f) in double), so E[C(x)] = x holds for the
// message sent, up to the 2^-32 draw granularity and the rounding of the decoded value N_f l / s
// to T. A norm beyond the float32 range (double input, or a 2-norm above 3.4e38) is sent as the
// largest float; elements with |x_j| > N_f are then sent at level s and counted in
// EncodeStats.out_of_domain (only possible for such inputs). Non-finite elements are counted in
// EncodeStats.non_finite, left out of the norm, and sent as 0.
//
// Draws: element j uses word j of the stream from where Encode starts, r = U 2^32, going up a
// level iff U < t_j - r_j (compressors/quantization.h: DrawBelow); Encode consumes exactly d
// words whether or not an element needs one, and leaves the stream after them.
//
// Wire format (little-endian): N_f as float32 (4 bytes), then one (w + 1)-bit field per element,
// w = ceil(log2(s + 1)): bits 0..w-1 the level l_j, bit w the sign (1 = negative, set only when
// l_j > 0), packed as a bit-stream (field j at stream bits [j (w + 1), (j + 1) (w + 1)), stream
// bit i in byte i / 8 at position i % 8, fields least significant bit first; the unused high bits
// of the last byte are zero). Size: 32 + 8 ceil(d (w + 1) / 8) bits. Decoding: N_f l_j / s
// computed in double, then rounded to T, with the sign applied.
//
// Split (chunked collectives): part k is N_f (the norm of the WHOLE vector, repeated in every
// part: 32 more bits per part) followed by the fields of its range, a byte slice of the stream
// since a cut at a multiple of 64 elements falls on a byte whatever w is. An instance for the
// range decodes N_f l_j / s exactly as the whole one does; always exact. The part is not what
// that instance would encode from the segment (its norm would be the segment's).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/quantization.h"
#include "core/error.h"

namespace lemmalab {

enum class QsgdNorm { kTwo, kInf };

// Option `norm`: "2" (default) or "inf".
QsgdNorm QsgdNormFromOptions(OptionTable& options);

inline constexpr int kMaxQsgdLevels = 65535;

// w = ceil(log2(s + 1)), the bits of a level field.
int QsgdLevelBits(int levels);

// The wire format above, which natural dithering (compressors/natural_dithering.h) shares with
// codes of its own: N_f as float32, then one (w + 1)-bit field per element, a code in [0, s] in
// bits 0..w-1 and the sign in bit w. It sizes, checks, splits and reads messages; what a code is
// worth is the compressor's.
class QsgdFormat {
 public:
  // `compressor` names the compressor in the messages of failed checks.
  QsgdFormat(std::string_view compressor, int levels, std::int64_t dimension);

  std::string_view compressor() const { return compressor_; }
  int levels() const { return levels_; }
  std::int64_t dimension() const { return dimension_; }
  int width() const { return width_; }  // w
  std::size_t MessageBytes() const;
  // Checks that a vector to encode or decode into has the format's dimension.
  void CheckDimension(Eigen::Index d) const;

  // Compressor::Split: part k is N_f, repeated, then the fields of its range, so that an
  // instance for the range decodes them with the same N_f as the whole message.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const;

  // Checks a message and calls f(j, value of element j) for every element: magnitude(n, c) for
  // its code c (n being N_f as a double), negated when the sign bit is set.
  template <typename Magnitude, typename F>
  void ForEachValue(const Message& in, Eigen::Index d, Magnitude magnitude, F f) const {
    CheckDimension(d);
    CheckMessageSize(compressor_, in, MessageBytes());
    float scale;
    std::memcpy(&scale, in.bytes.data(), sizeof(float));
    const auto n = static_cast<double>(scale);
    const std::uint32_t code_mask = (1u << width_) - 1;
    quantization::BitReader reader(in.bytes.data() + sizeof(float));
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const std::uint32_t field = reader.Get(width_ + 1);
      const std::uint32_t code = field & code_mask;
      LEMMALAB_CHECK(code <= static_cast<std::uint32_t>(levels_),
                     "{} message holds level {} at {}, above s = {}", compressor_, code, j,
                     levels_);
      const auto v = magnitude(n, code);
      f(j, (field >> width_) != 0 ? -v : v);
    }
  }

 private:
  std::string compressor_;
  int levels_;
  std::int64_t dimension_;
  int width_;
};

// `name` lets TernGrad (QSGD with N = max |x_j| and s = 1) report its own name.
template <typename T>
std::unique_ptr<Compressor<T>> MakeQsgd(int levels, QsgdNorm norm, std::int64_t dimension,
                                        std::string_view name = "qsgd");

template <typename T>
CompressorMaker<T> QsgdFromOptions(OptionTable& options);

}  // namespace lemmalab
