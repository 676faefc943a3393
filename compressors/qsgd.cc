#include "compressors/qsgd.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "compressors/multibit.h"
#include "compressors/quantization.h"
#include "compressors/split.h"
#include "core/error.h"

namespace lemmalab {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats are little-endian");

// Draw words are generated this many at a time.
constexpr std::int64_t kWordChunk = 4096;

template <typename T>
class Qsgd final : public ElementwiseDecoded<T, Qsgd<T>> {
 public:
  Qsgd(int levels, QsgdNorm norm, std::int64_t dimension, std::string_view name)
      : format_(name, levels, dimension), norm_(norm) {}

  std::string_view name() const override { return format_.compressor(); }
  CompressorClaims claims() const override {
    // Alistarh et al. Lemma 3.1 (qsgd.h; for the inf-norm as well, by the argument given there).
    const auto d = static_cast<double>(format_.dimension());
    const auto s = static_cast<double>(format_.levels());
    return {.unbiased = true,
            .omega = std::min(d / (s * s), std::sqrt(d) / s),
            .draws_word_per_element = true};
  }

  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) override {
    format_.CheckDimension(x.size());
    return EncodeInput({x.data()}, stream, out, nullptr);
  }

  // One pass stores u = x + a e in e while taking its norm, a second quantizes u and leaves
  // u - C(u) in e: the default's bits (multibit.h) without its copies and decoding pass.
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) override {
    format_.CheckDimension(x.size());
    format_.CheckDimension(e.size());
    return EncodeInput({x.data(), e.data(), a}, stream, out, e.data());
  }

  bool Split(const Message& whole, std::span<const std::int64_t> bounds,
             std::vector<Message>& parts) const override {
    return format_.Split(whole, bounds, parts);
  }

 private:
  friend class ElementwiseDecoded<T, Qsgd<T>>;

  // Encodes u = `in`; with `e`, stores u there first and u - C(u) after.
  EncodeStats EncodeInput(const multibit::Input<T>& in, PhiloxStream& stream, Message& out, T* e) {
    const std::int64_t d = format_.dimension();
    const int levels = format_.levels(), width = format_.width();
    const multibit::Scale scale = multibit::NormScale(in, d, norm_ == QsgdNorm::kTwo, e);
    EncodeStats stats{.elements = d, .non_finite = scale.non_finite};
    const auto n = static_cast<double>(scale.value);

    out.bytes.resize(format_.MessageBytes());  // the kernels write every byte
    std::memcpy(out.bytes.data(), &scale.value, sizeof(float));
    std::uint8_t* fields = out.bytes.data() + sizeof(float);
    const multibit::Input<T> u = e == nullptr ? in : multibit::Input<T>{e};
    for (std::int64_t c = 0; c < d; c += kWordChunk) {
      const std::int64_t c_end = std::min(d, c + kWordChunk);
      stream.Fill(std::span(words_.data(), static_cast<std::size_t>(c_end - c)));
      stats.out_of_domain +=
          multibit::QuantizeQsgd(u, words_.data(), c, c_end, n, levels, width, fields, e);
    }
    return stats;
  }

  // Calls f(j, value of element j) for every element of the message.
  template <typename F>
  void ForEachValue(const Message& in, Eigen::Index d, F f) const {
    const auto s = static_cast<double>(format_.levels());
    // n l is exact in double (24 + 16 bits); one rounding for / s, one to T.
    const auto magnitude = [s](double n, std::uint32_t level) {
      return static_cast<T>(n * static_cast<double>(level) / s);
    };
    format_.ForEachValue(in, d, magnitude, f);
  }

  QsgdFormat format_;
  QsgdNorm norm_;
  std::array<std::uint32_t, kWordChunk> words_;
};

}  // namespace

QsgdNorm QsgdNormFromOptions(OptionTable& options) {
  static const std::vector<std::string> kNorms = {"2", "inf"};
  return options.GetChoice("norm", "2", kNorms) == "inf" ? QsgdNorm::kInf : QsgdNorm::kTwo;
}

int QsgdLevelBits(int levels) {
  LEMMALAB_CHECK(levels >= 1 && levels <= kMaxQsgdLevels, "QSGD with {} levels", levels);
  return static_cast<int>(std::bit_width(static_cast<unsigned>(levels)));
}

QsgdFormat::QsgdFormat(std::string_view compressor, int levels, std::int64_t dimension)
    : compressor_(compressor),
      levels_(levels),
      dimension_(dimension),
      width_(QsgdLevelBits(levels)) {}

std::size_t QsgdFormat::MessageBytes() const {
  return sizeof(float) +
         static_cast<std::size_t>(quantization::StreamBytes(dimension_, width_ + 1));
}

void QsgdFormat::CheckDimension(Eigen::Index d) const {
  LEMMALAB_CHECK(d == dimension_, "{} made for d = {} got a vector of {}", compressor_, dimension_,
                 d);
}

bool QsgdFormat::Split(const Message& whole, std::span<const std::int64_t> bounds,
                       std::vector<Message>& parts) const {
  PrepareSplit(compressor_, bounds, dimension_, parts);
  CheckMessageSize(compressor_, whole, MessageBytes());
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    std::vector<std::uint8_t>& out = parts[k].bytes;
    AppendShared(whole.bytes.data(), sizeof(float), out);
    AppendElementSlice(whole.bytes.data() + sizeof(float), width_ + 1, bounds[k], bounds[k + 1],
                       out);
  }
  return true;
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeQsgd(int levels, QsgdNorm norm, std::int64_t dimension,
                                        std::string_view name) {
  return std::make_unique<Qsgd<T>>(levels, norm, dimension, name);
}

template <typename T>
CompressorMaker<T> QsgdFromOptions(OptionTable& options) {
  const auto levels = static_cast<int>(options.GetInt("levels", 4, 1, kMaxQsgdLevels));
  const QsgdNorm norm = QsgdNormFromOptions(options);
  return [levels, norm](const CompressorShape& shape) {
    return MakeQsgd<T>(levels, norm, shape.dimension);
  };
}

template std::unique_ptr<Compressor<float>> MakeQsgd(int, QsgdNorm, std::int64_t, std::string_view);
template std::unique_ptr<Compressor<double>> MakeQsgd(int, QsgdNorm, std::int64_t,
                                                      std::string_view);
template CompressorMaker<float> QsgdFromOptions(OptionTable&);
template CompressorMaker<double> QsgdFromOptions(OptionTable&);

}  // namespace lemmalab
