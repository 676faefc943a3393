#include "compressors/one_bit_compressor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "compressors/one_bit.h"
#include "compressors/split.h"
#include "core/bits.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

// Draw words are filled this many at a time in double precision.
constexpr std::int64_t kWordChunk = 4096;

template <typename T>
class OneBitCompressor final : public Compressor<T> {
 public:
  explicit OneBitCompressor(OneBitFormat format) : format_(std::move(format)) {
    LEMMALAB_CHECK(!format_.blocks.empty(), "{} needs at least one block", format_.name);
    dimension_ = format_.blocks.back().second;
    LEMMALAB_CHECK(format_.fixed_block_size == 0 ||
                       format_.blocks == FixedBlocks(dimension_, format_.fixed_block_size),
                   "{}: blocks are not the fixed blocks of {} it declares", format_.name,
                   format_.fixed_block_size);
  }

  std::string_view name() const override { return format_.name; }
  CompressorClaims claims() const override {
    return {.unbiased = format_.unbiased,
            .q = format_.q,
            // Sign draws (sign, scaled-sign, block-sign) read no word of the stream.
            .deterministic = format_.draw == OneBitFormat::Draw::kSign,
            .uses_layers = format_.uses_layers,
            .draws_word_per_element = format_.draw == OneBitFormat::Draw::kStochastic};
  }
  const OneBitFormat* one_bit_format() const override { return &format_; }
  std::vector<double> MessageScales(const Message& in) const override {
    Bits(in, dimension_);  // checks the size
    std::vector<double> scales;
    for (std::size_t b = 0; b < ScaleCount(); ++b) scales.push_back(ScaleOf(in, b));
    return scales;
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    return Run({x.data(), nullptr, T(1)}, x.size(), stream, out, nullptr);
  }

  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) override {
    LEMMALAB_CHECK(e.size() == x.size(), "{}: error of size {} for input of size {}", format_.name,
                   e.size(), x.size());
    return Run({x.data(), e.data(), a}, x.size(), stream, out, e.data());
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    const std::uint8_t* bits = Bits(in, out.size());
    for (std::size_t b = 0; b < format_.blocks.size(); ++b) {
      const auto [lo, hi] = format_.blocks[b];
      one_bit::Expand(bits, ScaleOf(in, b), lo, hi, out.data());
    }
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    const std::uint8_t* bits = Bits(in, acc.size());
    for (std::size_t b = 0; b < format_.blocks.size(); ++b) {
      const auto [lo, hi] = format_.blocks[b];
      one_bit::ExpandAdd(bits, weight * ScaleOf(in, b), lo, hi, acc.data());
    }
  }

  // The scales of the blocks each range overlaps, then the range's bits (one_bit_compressor.h).
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    PrepareSplit(format_.name, bounds, dimension_, parts);
    const std::uint8_t* bits = Bits(whole, dimension_);
    const std::int64_t n = format_.fixed_block_size;
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      const std::int64_t lo = bounds[k], hi = bounds[k + 1];
      if (n > 0 && lo % n != 0 && lo / n != (hi - 1) / n) return false;
    }
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      const std::int64_t lo = bounds[k], hi = bounds[k + 1];
      std::vector<std::uint8_t>& out = parts[k].bytes;
      if (ScaleCount() > 0) {
        // The blocks are in order: from the first one ending after lo, those starting before hi.
        auto block = std::partition_point(format_.blocks.begin(), format_.blocks.end(),
                                          [lo](const auto& range) { return range.second <= lo; });
        for (; block != format_.blocks.end() && block->first < hi; ++block) {
          const auto b = static_cast<std::size_t>(block - format_.blocks.begin());
          AppendShared(whole.bytes.data() + b * sizeof(float), sizeof(float), out);
        }
      }
      AppendElementSlice(bits, 1, lo, hi, out);
    }
    return true;
  }

 private:
  std::size_t ScaleCount() const {
    return format_.scale == OneBitFormat::Scale::kNone ? 0 : format_.blocks.size();
  }
  std::size_t HeaderBytes() const { return ScaleCount() * sizeof(float); }

  const std::uint8_t* Bits(const Message& in, Eigen::Index d) const {
    LEMMALAB_CHECK(d == dimension_, "{} made for d = {} decodes into {} values", format_.name,
                   dimension_, d);
    CheckMessageSize(format_.name, in, HeaderBytes() + static_cast<std::size_t>(PackedBytes(d)));
    return in.bytes.data() + HeaderBytes();
  }

  T ScaleOf(const Message& in, std::size_t block) const {
    if (ScaleCount() == 0) return T(1);
    float s;
    std::memcpy(&s, in.bytes.data() + block * sizeof(float), sizeof(float));
    return static_cast<T>(s);
  }

  // The float32 scale of block [lo, hi) of u.
  float ComputeScale(const one_bit::Input<T>& u, std::int64_t lo, std::int64_t hi) const {
    double reduction = 0;
    switch (format_.scale) {
      case OneBitFormat::Scale::kNone:
        break;
      case OneBitFormat::Scale::kMaxAbs:
        reduction = one_bit::MaxAbsFinite(u, lo, hi);
        break;
      case OneBitFormat::Scale::kRms:
        reduction = one_bit::SumSquares(u, lo, hi);
        break;
      case OneBitFormat::Scale::kMeanAbs:
        reduction = one_bit::SumAbs(u, lo, hi);
        break;
    }
    return one_bit::ScaleFromReduction(format_.scale, reduction, static_cast<double>(hi - lo));
  }

  EncodeStats Run(const one_bit::Input<T>& u, Eigen::Index d, PhiloxStream& stream, Message& out,
                  T* e_out) {
    LEMMALAB_CHECK(d == dimension_, "{} made for d = {} got a vector of {}", format_.name,
                   dimension_, d);
    out.bytes.assign(HeaderBytes() + static_cast<std::size_t>(PackedBytes(d)), 0);
    std::uint8_t* bits = out.bytes.data() + HeaderBytes();
    EncodeStats stats;
    stats.elements = d;
    // float generates its draw words inside the quantizer (one_bit::QuantizeStochasticFused),
    // double fills them from the stream chunk by chunk; element j uses word start + j either way.
    const std::uint64_t start = stream.position();
    const bool fused = std::is_same_v<T, float> && format_.draw == OneBitFormat::Draw::kStochastic;
    for (std::size_t b = 0; b < format_.blocks.size(); ++b) {
      const auto [lo, hi] = format_.blocks[b];
      const float s = ComputeScale(u, lo, hi);
      if (ScaleCount() > 0) std::memcpy(out.bytes.data() + b * sizeof(float), &s, sizeof(float));
      const T scale = static_cast<T>(s);
      one_bit::Counts counts;
      if (format_.draw == OneBitFormat::Draw::kSign) {
        counts = one_bit::QuantizeSign(u, scale, lo, hi, bits, e_out);
      } else if constexpr (std::is_same_v<T, float>) {
        const StreamAt draw = stream.At(start + static_cast<std::uint64_t>(lo));
        counts = one_bit::QuantizeStochasticFused(u, scale, draw, lo, hi, bits, e_out);
      } else {
        for (std::int64_t c = lo; c < hi; c += kWordChunk) {
          const std::int64_t c_end = std::min(hi, c + kWordChunk);
          stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
          counts += one_bit::QuantizeStochastic(u, scale, words_.data(), c, c_end, bits, e_out);
        }
      }
      stats.out_of_domain += counts.out_of_domain;
      stats.non_finite += counts.non_finite;
    }
    if (fused) stream.Seek(start + static_cast<std::uint64_t>(d));
    return stats;
  }

  OneBitFormat format_;
  std::int64_t dimension_ = 0;
  std::array<std::uint32_t, kWordChunk> words_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeOneBitCompressor(OneBitFormat format) {
  return std::make_unique<OneBitCompressor<T>>(std::move(format));
}

std::vector<std::pair<std::int64_t, std::int64_t>> FixedBlocks(std::int64_t dimension,
                                                               std::int64_t size) {
  LEMMALAB_CHECK(size > 0 && dimension > 0, "blocks of {} over {} elements", size, dimension);
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
  for (std::int64_t lo = 0; lo < dimension; lo += size) {
    blocks.emplace_back(lo, std::min(dimension, lo + size));
  }
  return blocks;
}

template std::unique_ptr<Compressor<float>> MakeOneBitCompressor(OneBitFormat);
template std::unique_ptr<Compressor<double>> MakeOneBitCompressor(OneBitFormat);

}  // namespace lemmalab
