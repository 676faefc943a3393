// Error feedback, composable with any compressor (GRACE's "memory").
//
// classic (Seide et al. 2014; Birder Alg. 1 lines 8-9 on a worker and 12-13 on the server;
//   1-bit Adam Alg. 1 lines 7-8 and 10-11): send C(x + e) and keep e <- x + e - C(x + e), so
//   what one message could not carry is added to the next one instead of being lost.
// scaled (onebit-adam.txt Sec. 4.2, for a time-varying learning rate gamma_t): send
//   C(x + a_t e) and keep e <- x + a_t e - C(x + a_t e). The error was made at step t-1 in units
//   of that step's rate; a_t = gamma_{t-1} / gamma_t restates it in this step's units, which is
//   the factor for which gamma_t C(...) telescopes (sum_t gamma_t C_t = sum_t gamma_t x_t -
//   gamma_T e_T). The paper prints gamma_t / gamma_{t-1}; "scaled-as-printed" uses that factor.
//   With a constant rate both equal classic.
// none: send C(x); e stays zero.
//
// The compression and the error update run as one pass where the compressor has a fused kernel
// (Compressor::EncodeWithFeedback). Workers and the server each own an instance; error() is what
// the ef-norm probe measures.
#pragma once

#include <string_view>

#include "compressors/compressor.h"

namespace lemmalab {

enum class FeedbackKind { kNone, kClassic, kScaled, kScaledAsPrinted };

std::string_view FeedbackName(FeedbackKind kind);
// Reads `key` ("none", "classic", "scaled" or "scaled-as-printed") from `options`.
FeedbackKind FeedbackFromOptions(OptionTable& options, std::string_view key, FeedbackKind fallback);

template <typename T>
class ErrorFeedback {
 public:
  ErrorFeedback(FeedbackKind kind, std::int64_t dimension);

  // Compresses x at a step whose learning rate is `lr` (used by the scaled kinds only).
  EncodeStats Compress(ConstVectorRef<T> x, Compressor<T>& compressor, PhiloxStream& stream,
                       Message& out, double lr = 1.0);

  FeedbackKind kind() const { return kind_; }
  bool enabled() const { return kind_ != FeedbackKind::kNone; }
  const Vector<T>& error() const { return e_; }
  // The factor a_t applied to e in the last Compress call.
  double last_factor() const { return last_factor_; }

  void Persist(StateArchive& archive) {
    archive("e", e_);
    archive("previous_lr", previous_lr_);
    archive("last_factor", last_factor_);
  }

 private:
  FeedbackKind kind_;
  Vector<T> e_;
  double previous_lr_ = 0;  // 0 before the first call
  double last_factor_ = 1;
};

}  // namespace lemmalab
