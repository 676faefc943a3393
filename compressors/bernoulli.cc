#include "compressors/bernoulli.h"

#include <bit>
#include <cstring>

#include "compressors/quantization.h"
#include "compressors/split.h"
#include "core/error.h"
#include "core/wire_nan.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

constexpr std::uint8_t kSent = 1;
constexpr std::uint8_t kNotSent = 0;

template <typename T>
class Bernoulli final : public Compressor<T> {
 public:
  Bernoulli(std::int64_t dimension, double p, bool scaled)
      : dimension_(dimension),
        p_(p),
        scaled_(scaled),
        scale_(scaled ? static_cast<T>(1 / p) : T(1)) {
    LEMMALAB_CHECK(p > 0 && p <= 1, "bernoulli with p = {}", p);
  }

  std::string_view name() const override { return "bernoulli"; }
  CompressorClaims claims() const override {
    // Both hold with equality (bernoulli.h): omega scaled, alpha unscaled.
    if (scaled_) return {.unbiased = true, .omega = 1 / p_ - 1};
    return {.unbiased = false, .alpha = p_};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    CheckDimension(x.size());
    EncodeStats stats;
    stats.elements = dimension_;
    stats.non_finite = dimension_ - x.array().isFinite().count();
    if (!quantization::DrawBelow(p_, stream())) {
      out.bytes.assign(1, kNotSent);
      return stats;
    }
    out.bytes.resize(SentBytes());
    out.bytes[0] = kSent;
    std::uint8_t* p = out.bytes.data() + 1;
    for (std::int64_t j = 0; j < dimension_; ++j) {
      const T v = WireNaN(x[j]);  // a computed NaN's bits depend on the hardware
      std::memcpy(p + j * sizeof(T), &v, sizeof(T));
    }
    return stats;
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    if (!ForEachSentValue(in, out.size(), [&](std::int64_t j, T v) { out[j] = v; })) {
      out.setZero();
    }
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    ForEachSentValue(in, acc.size(), [&](std::int64_t j, T v) { acc[j] += weight * v; });
  }

  // Part k is the flag, then the values of its range when sent.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    PrepareSplit("bernoulli", bounds, dimension_, parts);
    const bool sent = Sent(whole, dimension_);
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      AppendShared(whole.bytes.data(), 1, parts[k].bytes);
      if (sent) {
        AppendElementSlice(whole.bytes.data() + 1, 8 * sizeof(T), bounds[k], bounds[k + 1],
                           parts[k].bytes);
      }
    }
    return true;
  }

 private:
  std::size_t SentBytes() const { return 1 + static_cast<std::size_t>(dimension_) * sizeof(T); }

  void CheckDimension(Eigen::Index d) const {
    LEMMALAB_CHECK(d == dimension_, "bernoulli made for d = {} got a vector of {}", dimension_, d);
  }

  // Whether the message carries the values; checks its flag and size.
  bool Sent(const Message& in, Eigen::Index d) const {
    CheckDimension(d);
    LEMMALAB_CHECK(!in.bytes.empty() && (in.bytes[0] == kSent || in.bytes[0] == kNotSent),
                   "bernoulli message without a valid flag");
    const bool sent = in.bytes[0] == kSent;
    CheckMessageSize("bernoulli", in, sent ? SentBytes() : 1);
    return sent;
  }

  // Calls f(j, decoded value of element j) for every element when the message carries the
  // values; returns whether it does.
  template <typename F>
  bool ForEachSentValue(const Message& in, Eigen::Index d, F f) const {
    if (!Sent(in, d)) return false;
    const std::uint8_t* p = in.bytes.data() + 1;
    for (std::int64_t j = 0; j < dimension_; ++j) {
      T v;
      std::memcpy(&v, p + j * sizeof(T), sizeof(T));
      f(j, scale_ * v);
    }
    return true;
  }

  std::int64_t dimension_;
  double p_;
  bool scaled_;
  T scale_;  // 1/p for the scaled variant, else 1
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeBernoulli(std::int64_t dimension, double p, bool scaled) {
  return std::make_unique<Bernoulli<T>>(dimension, p, scaled);
}

template <typename T>
CompressorMaker<T> BernoulliFromOptions(OptionTable& options) {
  const double p = options.GetDouble("p", 0.5, {0.0, 1.0, true, false});
  const bool scaled = options.GetBool("scaled", true);
  return [p, scaled](const CompressorShape& shape) {
    return MakeBernoulli<T>(shape.dimension, p, scaled);
  };
}

template std::unique_ptr<Compressor<float>> MakeBernoulli(std::int64_t, double, bool);
template std::unique_ptr<Compressor<double>> MakeBernoulli(std::int64_t, double, bool);
template CompressorMaker<float> BernoulliFromOptions(OptionTable&);
template CompressorMaker<double> BernoulliFromOptions(OptionTable&);

}  // namespace lemmalab
