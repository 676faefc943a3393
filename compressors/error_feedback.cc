#include "compressors/error_feedback.h"

namespace lemmalab {

template <typename T>
ErrorFeedback<T>::ErrorFeedback(bool enabled, std::int64_t dimension)
    : enabled_(enabled), e_(Vector<T>::Zero(dimension)) {}

template <typename T>
EncodeStats ErrorFeedback<T>::Compress(ConstVectorRef<T> x, Compressor<T>& compressor,
                                       PhiloxStream& stream, Message& out) {
  if (!enabled_) return compressor.Encode(x, stream, out);
  input_ = x + e_;
  const EncodeStats stats = compressor.Encode(input_, stream, out);
  e_ = input_;
  compressor.DecodeAdd(out, T(-1), e_);  // e = (x + e) - C(x + e)
  return stats;
}

template class ErrorFeedback<float>;
template class ErrorFeedback<double>;

}  // namespace lemmalab
