#include "compressors/permk.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

#include "compressors/sparse.h"
#include "core/error.h"

namespace lemmalab {
namespace {

// The first position of sender i's block (n <= d; permk.h).
std::int64_t BlockStart(std::int64_t dimension, int sender, int senders) {
  const std::int64_t n = senders, base = dimension / n, extra = dimension % n;
  return sender * base + std::min<std::int64_t>(sender, extra);
}

template <typename T>
class PermK final : public SampledSparseCompressor<T> {
 public:
  explicit PermK(const CompressorShape& shape)
      : SampledSparseCompressor<T>("permk", shape.dimension,
                                   PermKBlockSize(shape.dimension, shape.sender, shape.senders),
                                   typename SparseCompressor<T>::ScaleByCount{}) {
    const std::int64_t d = shape.dimension;
    const std::int64_t first =
        shape.senders <= d ? BlockStart(d, shape.sender, shape.senders) : shape.sender % d;
    whole_ = this->k() == d;
    if (whole_) {
      kept_.resize(static_cast<std::size_t>(d));
      std::iota(kept_.begin(), kept_.end(), 0u);
      return;
    }
    block_ = {first, first + this->k()};
  }

  CompressorClaims claims() const override {
    return {.unbiased = true,
            // A sender with every coordinate sends x itself and draws nothing.
            .q = whole_ ? std::optional<double>(0.0) : std::nullopt,
            // Each C_i is scaled random-k with k = |B_i| (permk.h).
            .omega = this->ScaledOmega(),
            .deterministic = whole_,
            // The senders of a step split one permutation: their errors are dependent (disjoint
            // supports).
            .correlated_senders = !whole_};
  }

 private:
  // pi(B_i) ascending, from the step's shared permutation (permk.h's draw rule): a worker's
  // stream only names the step, and is not read. Any other stream (a probe's repeated draws on
  // one input, Purpose::kProbe) is one draw of its own: the permutation comes from it, so that
  // repeated draws see PermK's distribution for this sender rather than one permutation.
  std::span<const std::uint32_t> Choose(PhiloxStream& stream) override {
    if (whole_) return kept_;
    const StreamKey& key = stream.stream_key();
    const bool shared_draw = key.purpose == Purpose::kWorkerCompression;
    PhiloxStream shared({key.seed, Purpose::kSharedCompression, kGlobalStream, key.step});
    PhiloxStream& draws = shared_draw ? shared : stream;
    // Sized at the first draw, not when made: every process builds an instance per worker (and
    // the aggregation point's decoder is one too), and only the senders that encode need them.
    const std::size_t d = static_cast<std::size_t>(this->dimension());
    permutation_.resize(d);
    // Draw t fixes position d - 1 - t for good, so the block is final once its first position
    // (or position 1) is drawn. The shared stream is dropped after this draw, so the draws for
    // the positions below the block are skipped, and a rejection still takes word d - 1 onward;
    // a probe's stream goes on after the encode, so it takes all d - 1 draws.
    const std::size_t draws_needed =
        shared_draw ? d - std::max<std::size_t>(static_cast<std::size_t>(block_.first), 1) : d - 1;
    words_.resize(draws_needed);
    draws.Fill(words_);
    if (shared_draw) shared.Seek(d - 1);
    std::iota(permutation_.begin(), permutation_.end(), 0u);
    for (std::size_t t = 0; t < words_.size(); ++t) {
      const std::size_t p = d - 1 - t;
      const std::uint32_t r = UniformBelow(p + 1, words_[t], [&] { return draws(); });
      std::swap(permutation_[p], permutation_[r]);
    }
    kept_.assign(permutation_.begin() + block_.first, permutation_.begin() + block_.second);
    std::sort(kept_.begin(), kept_.end());
    return kept_;
  }

  bool whole_ = false;                           // the block is every position: C(x) = x
  std::pair<std::int64_t, std::int64_t> block_;  // [begin, end) of B_i
  std::vector<std::uint32_t> permutation_;       // pi, position -> coordinate
  std::vector<std::uint32_t> words_;             // first attempts of the draws
  std::vector<std::uint32_t> kept_;
};

}  // namespace

std::int64_t PermKBlockSize(std::int64_t dimension, int sender, int senders) {
  LEMMALAB_CHECK(dimension >= 1 && senders >= 1 && sender >= 0 && sender < senders,
                 "permk: sender {} of {} over d = {}", sender, senders, dimension);
  if (senders > dimension) return 1;
  return dimension / senders + (sender < dimension % senders ? 1 : 0);
}

template <typename T>
std::unique_ptr<Compressor<T>> MakePermK(const CompressorShape& shape) {
  CheckSparseDimension("compressor 'permk'", shape.dimension);
  return std::make_unique<PermK<T>>(shape);
}

template <typename T>
CompressorMaker<T> PermKFromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape& shape) { return MakePermK<T>(shape); };
}

template std::unique_ptr<Compressor<float>> MakePermK(const CompressorShape&);
template std::unique_ptr<Compressor<double>> MakePermK(const CompressorShape&);
template CompressorMaker<float> PermKFromOptions(OptionTable&);
template CompressorMaker<double> PermKFromOptions(OptionTable&);

}  // namespace lemmalab
