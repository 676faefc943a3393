// Error feedback, composable with any compressor (GRACE's "memory").
//
// Classic EF (Seide et al. 2014; Birder Alg. 1 lines 8-9 on a worker and 12-13 on the server;
// 1-bit Adam Alg. 1): send C(x + e) and keep e <- x + e - C(x + e), so the part of the input a
// message could not carry is added to the next one instead of being lost. Disabled, it sends C(x)
// and e stays zero. Workers and the server each own an instance; its error is what the ef-norm
// probe measures.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
class ErrorFeedback {
 public:
  ErrorFeedback(bool enabled, std::int64_t dimension);

  EncodeStats Compress(ConstVectorRef<T> x, Compressor<T>& compressor, PhiloxStream& stream,
                       Message& out);

  bool enabled() const { return enabled_; }
  const Vector<T>& error() const { return e_; }

 private:
  bool enabled_;
  Vector<T> e_;
  Vector<T> input_;  // x + e, the compressor's input
};

}  // namespace lemmalab
