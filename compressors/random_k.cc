#include "compressors/random_k.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "compressors/sparse.h"

namespace lemmalab {
namespace {

template <typename T>
class RandomK final : public SampledSparseCompressor<T> {
 public:
  RandomK(std::int64_t dimension, std::int64_t k, bool scaled)
      : SampledSparseCompressor<T>("random-k", dimension, k, RandomKScale<T>(dimension, k, scaled)),
        scaled_(scaled),
        choice_(dimension, k) {}

  // Each coordinate is kept with probability k/d (compressors/random_k.h), so E||C(x) - x||^2 is
  // exactly (d/k - 1)||x||^2 scaled (U(d/k - 1), as DIANA's rand-k) and (1 - k/d)||x||^2
  // unscaled (C(k/d), as EF21's rand-k).
  CompressorClaims claims() const override {
    if (scaled_) return {.unbiased = true, .omega = this->ScaledOmega()};
    return {.unbiased = false,
            .alpha = static_cast<double>(this->k()) / static_cast<double>(this->dimension())};
  }

 private:
  std::span<const std::uint32_t> Choose(PhiloxStream& stream) override {
    return choice_.Choose(stream);
  }

  bool scaled_;
  RandomKChoice choice_;
};

}  // namespace

RandomKChoice::RandomKChoice(std::int64_t dimension, std::int64_t k)
    : dimension_(dimension),
      k_(k),
      words_(static_cast<std::size_t>(k)),
      chosen_(static_cast<std::size_t>((dimension + 63) / 64)),
      kept_(static_cast<std::size_t>(k)) {}

std::span<const std::uint32_t> RandomKChoice::Choose(PhiloxStream& stream) {
  // Each step sets exactly one new bit (j itself is never chosen before step i), so k bits end
  // up set.
  stream.Fill(words_);
  std::fill(chosen_.begin(), chosen_.end(), 0);
  const std::int64_t first = dimension_ - k_;
  for (std::int64_t i = 0; i < k_; ++i) {
    const std::int64_t j = first + i;
    const std::uint32_t t =
        UniformBelow(static_cast<std::uint64_t>(j) + 1, words_[i], [&] { return stream(); });
    const std::uint64_t bit = std::uint64_t{1} << (t % 64);
    if (chosen_[t / 64] & bit) {
      chosen_[j / 64] |= std::uint64_t{1} << (j % 64);
    } else {
      chosen_[t / 64] |= bit;
    }
  }
  // The bitmap read in order gives the indices ascending.
  auto next = kept_.begin();
  for (std::size_t w = 0; w < chosen_.size(); ++w) {
    for (std::uint64_t bits = chosen_[w]; bits != 0; bits &= bits - 1) {
      *next++ = static_cast<std::uint32_t>(64 * w + std::countr_zero(bits));
    }
  }
  return kept_;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeRandomK(std::int64_t dimension, std::int64_t k, bool scaled) {
  return std::make_unique<RandomK<T>>(dimension, k, scaled);
}

template <typename T>
CompressorMaker<T> RandomKFromOptions(OptionTable& options) {
  const SparseCount count = SparseCount::FromOptions(options);
  const bool scaled = options.GetBool("scaled", true);
  return [count, scaled](const CompressorShape& shape) {
    return MakeRandomK<T>(shape.dimension, count.For(shape.dimension), scaled);
  };
}

template std::unique_ptr<Compressor<float>> MakeRandomK(std::int64_t, std::int64_t, bool);
template std::unique_ptr<Compressor<double>> MakeRandomK(std::int64_t, std::int64_t, bool);
template CompressorMaker<float> RandomKFromOptions(OptionTable&);
template CompressorMaker<double> RandomKFromOptions(OptionTable&);

}  // namespace lemmalab
