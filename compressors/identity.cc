#include "compressors/identity.h"

#include <cmath>
#include <cstring>

#include "compressors/split.h"
#include "core/error.h"

namespace lemmalab {
namespace {

template <typename T>
class Identity final : public Compressor<T> {
 public:
  std::string_view name() const override { return "identity"; }
  CompressorClaims claims() const override {
    // C(x) = x exactly: in U(0) and (by q = 0) in C(1).
    return {.unbiased = true, .q = 0.0, .omega = 0.0, .deterministic = true};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& /*stream*/, Message& out) override {
    Store(x, out);
    return Stats(x);
  }

  // The message is u = x + a e, and the error u - C(u) = u - u (0, or NaN where u is not
  // finite, as the definition gives); u is formed in e's storage.
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& /*stream*/,
                                 Message& out) override {
    e = x + a * e;
    Store(e, out);
    const EncodeStats stats = Stats(e);
    e = e - e;
    return stats;
  }

  void Decode(const Message& in, VectorRef<T> out) const override {
    CheckSize(in, out.size());
    std::memcpy(out.data(), in.bytes.data(), in.bytes.size());
  }

  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    CheckSize(in, acc.size());
    for (Eigen::Index j = 0; j < acc.size(); ++j) {
      T v;
      std::memcpy(&v, in.bytes.data() + j * sizeof(T), sizeof(T));
      acc[j] += weight * v;
    }
  }

  // Part k is the raw scalars of its range.
  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    const std::int64_t d = bounds.empty() ? 0 : bounds.back();
    PrepareSplit("identity", bounds, d, parts);
    CheckMessageSize("identity", whole, static_cast<std::size_t>(d) * sizeof(T));
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      AppendElementSlice(whole.bytes.data(), 8 * sizeof(T), bounds[k], bounds[k + 1],
                         parts[k].bytes);
    }
    return true;
  }

 private:
  static void Store(ConstVectorRef<T> v, Message& out) {
    out.bytes.resize(static_cast<std::size_t>(v.size()) * sizeof(T));
    std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
  }

  static EncodeStats Stats(ConstVectorRef<T> v) {
    EncodeStats stats;
    stats.elements = v.size();
    stats.non_finite = v.size() - v.array().isFinite().count();
    return stats;
  }

  static void CheckSize(const Message& in, Eigen::Index d) {
    CheckMessageSize("identity", in, static_cast<std::size_t>(d) * sizeof(T));
  }
};

}  // namespace

template <typename T>
std::unique_ptr<Compressor<T>> MakeIdentity() {
  return std::make_unique<Identity<T>>();
}

template <typename T>
CompressorMaker<T> IdentityFromOptions(OptionTable& /*options*/) {
  return [](const CompressorShape&) { return MakeIdentity<T>(); };
}

template std::unique_ptr<Compressor<float>> MakeIdentity();
template std::unique_ptr<Compressor<double>> MakeIdentity();
template CompressorMaker<float> IdentityFromOptions(OptionTable&);
template CompressorMaker<double> IdentityFromOptions(OptionTable&);

}  // namespace lemmalab
