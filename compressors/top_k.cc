#include "compressors/top_k.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "compressors/multibit.h"
#include "compressors/sparse.h"
#include "compressors/sparse_element.h"

namespace lemmalab {
namespace {

// The rank key of x_j (sparse::MagnitudeKey) and its histogram's buckets.
template <typename T>
struct RankKey {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr Bits kInfinity = std::bit_cast<Bits>(std::numeric_limits<T>::infinity());
  // The histogram of the first pass buckets keys by their exponent and leading mantissa bits:
  // 2^11 buckets for float (8 exponent + 3 mantissa bits, 8 KiB of counters: the L1 cache),
  // 2^14 for double (11 + 3).
  static constexpr int kShift = sizeof(T) == 4 ? 20 : 49;
  static constexpr std::size_t kBuckets = std::size_t{1} << (8 * sizeof(T) - 1 - kShift);

  static Bits Of(T v) { return sparse::MagnitudeKey(v); }
};

template <typename T>
class TopK final : public SparseCompressor<T> {
  using Key = RankKey<T>;
  using Bits = typename Key::Bits;

 public:
  TopK(std::int64_t dimension, std::int64_t k)
      : SparseCompressor<T>("top-k", dimension, k, T(1)),
        histogram_(kCopies * Key::kBuckets),
        kept_(static_cast<std::size_t>(k)) {}

  CompressorClaims claims() const override {
    return {.unbiased = false,
            .q = std::sqrt(1.0 -
                           static_cast<double>(this->k()) / static_cast<double>(this->dimension())),
            // Draws nothing; EF21's alpha = 1 - q^2 = k/d follows from q (spams.txt Remark 1).
            .deterministic = true};
  }

  // Selection by threshold instead of sorting, in two passes over x. The kept set is the first k
  // coordinates in the order (key descending, index ascending). Pass 1 counts keys per bucket and
  // finds the bucket holding the k-th key; everything in higher buckets is kept. Pass 2 lists, in
  // index order, the indices of the higher buckets and the (key, index) pairs of that bucket; the
  // threshold key tau is found among the latter alone, and of the keys equal to tau the lowest
  // indices are kept. Both lists are ascending, so merging them gives the message's order with no
  // sort.
  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& /*stream*/, Message& out) override {
    this->CheckDimension(x.size());
    const auto d = static_cast<std::size_t>(x.size());
    const auto k = static_cast<std::size_t>(this->k());
    EncodeStats stats;
    stats.elements = x.size();
    stats.non_finite = CountBuckets(x);

    // The bucket of the k-th key, and how many keys lie above it.
    std::size_t bucket = Key::kBuckets, above = 0;
    while (bucket-- > 0 && above + histogram_[bucket] < k) above += histogram_[bucket];

    // Branch-free: every element is written to both lists' next slot, and the slot advances only
    // when the element belongs there (one spare slot each absorbs the last writes).
    higher_.resize(above + 1);
    boundary_.resize(histogram_[bucket] + 1);
    std::uint32_t* higher = higher_.data();
    Candidate* boundary = boundary_.data();
    const T* const values = x.data();
    for (std::size_t j = 0; j < d; ++j) {
      const Bits key = Key::Of(values[j]);
      const std::size_t b = key >> Key::kShift;
      *higher = static_cast<std::uint32_t>(j);
      higher += b > bucket;
      *boundary = {key, static_cast<std::uint32_t>(j)};
      boundary += b == bucket;
    }
    higher_.pop_back();
    boundary_.pop_back();

    // Keep the boundary bucket's keys above tau, its (k - above)-th largest, and the first of
    // those equal to tau.
    std::size_t need = k - above;
    const Bits tau = NthLargestKey(need);
    for (const Candidate& c : boundary_) need -= c.key > tau;
    kept_.clear();
    auto next_higher = higher_.begin();
    for (const Candidate& c : boundary_) {
      if (c.key < tau || (c.key == tau && need == 0)) continue;
      if (c.key == tau) --need;
      while (next_higher != higher_.end() && *next_higher < c.index)
        kept_.push_back(*next_higher++);
      kept_.push_back(c.index);
    }
    kept_.insert(kept_.end(), next_higher, higher_.end());
    this->Write(kept_, x, out);
    return stats;
  }

  // One pass stores u = x + a e in e; the selection reads u there, and only the k kept
  // coordinates need u - C(u) (compressors/sparse.h).
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) override {
    this->CheckDimension(x.size());
    this->CheckDimension(e.size());
    multibit::Norms<T>({x.data(), e.data(), a}, x.size(), false, e.data());
    const EncodeStats stats = Encode(e, stream, out);
    this->SubtractKept(kept_, e);
    return stats;
  }

 private:
  // Counters per bucket, kept in kCopies interleaved copies so that runs of equal buckets (common:
  // most values share a few exponents) do not serialise on one counter.
  static constexpr std::size_t kCopies = 4;
  // Refining the boundary bucket: bits per round, and the count left to std::nth_element.
  static constexpr int kRefineBits = 11;
  static constexpr std::size_t kFewKeys = 4096;

  struct Candidate {
    Bits key;
    std::uint32_t index;
  };

  // The n-th largest key of boundary_ (n >= 1): the range of keys that holds it is narrowed by
  // kRefineBits more bits at a time, counting only the keys still in range, until few are left
  // for std::nth_element.
  Bits NthLargestKey(std::size_t n) {
    keys_.resize(boundary_.size());
    std::transform(boundary_.begin(), boundary_.end(), keys_.begin(),
                   [](const Candidate& c) { return c.key; });
    for (int shift = Key::kShift; keys_.size() > kFewKeys && shift > 0;) {
      const int low = std::max(0, shift - kRefineBits);
      const Bits mask = (Bits{1} << (shift - low)) - 1;
      std::fill(histogram_.begin(), histogram_.begin() + (std::size_t{1} << kRefineBits), 0);
      for (const Bits key : keys_) ++histogram_[(key >> low) & mask];
      std::size_t bucket = mask + 1, above = 0;
      while (bucket-- > 0 && above + histogram_[bucket] < n) above += histogram_[bucket];
      std::erase_if(keys_, [&](Bits key) { return ((key >> low) & mask) != bucket; });
      n -= above;
      shift = low;
    }
    std::nth_element(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(n - 1), keys_.end(),
                     std::greater<>());
    return keys_[n - 1];
  }

  // Fills histogram_'s first kBuckets counters with the bucket counts of x; returns the number
  // of non-finite values.
  std::int64_t CountBuckets(ConstVectorRef<T> x) {
    std::fill(histogram_.begin(), histogram_.end(), 0);
    std::uint32_t* const counts = histogram_.data();
    std::int64_t non_finite = 0;
    const T* const values = x.data();
    const auto d = static_cast<std::size_t>(x.size());
    std::size_t j = 0;
    for (; j + kCopies <= d; j += kCopies) {
      for (std::size_t c = 0; c < kCopies; ++c) {
        const Bits key = Key::Of(values[j + c]);
        non_finite += key == Key::kInfinity;
        ++counts[c * Key::kBuckets + (key >> Key::kShift)];
      }
    }
    for (; j < d; ++j) {
      const Bits key = Key::Of(values[j]);
      non_finite += key == Key::kInfinity;
      ++counts[key >> Key::kShift];
    }
    for (std::size_t c = 1; c < kCopies; ++c) {
      for (std::size_t b = 0; b < Key::kBuckets; ++b) counts[b] += counts[c * Key::kBuckets + b];
    }
    return non_finite;
  }

  std::vector<std::uint32_t> histogram_;  // kCopies x kBuckets counters
  std::vector<std::uint32_t> higher_;     // indices in buckets above the boundary, ascending
  std::vector<Candidate> boundary_;       // (key, index) of the boundary bucket, by index
  std::vector<Bits> keys_;                // boundary_'s keys, partially ordered
  std::vector<std::uint32_t> kept_;
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeTopK(std::int64_t dimension, std::int64_t k) {
  return std::make_unique<TopK<T>>(dimension, k);
}

template <typename T>
CompressorMaker<T> TopKFromOptions(OptionTable& options) {
  const SparseCount count = SparseCount::FromOptions(options);
  return [count](const CompressorShape& shape) {
    return MakeTopK<T>(shape.dimension, count.For(shape.dimension));
  };
}

template std::unique_ptr<Compressor<float>> MakeTopK(std::int64_t, std::int64_t);
template std::unique_ptr<Compressor<double>> MakeTopK(std::int64_t, std::int64_t);
template CompressorMaker<float> TopKFromOptions(OptionTable&);
template CompressorMaker<double> TopKFromOptions(OptionTable&);

}  // namespace lemmalab
