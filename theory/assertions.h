// The assertions the registry (theory/assertion_registry.cc) lists, by source: each reads and
// validates its [[assert]] keys and returns the judgement (theory/assertion.h).
#pragma once

#include "theory/assertion.h"

namespace lemmalab {

// birder.txt (theory/birder_assertions.cc)
Judgement MakeErrorNormCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeQuantizerDomainCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeDenominatorFloorCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeRawDenominatorPositiveCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeZSequenceCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeBirderTheorem1Check(OptionTable& options, const AssertionContext& context);

// Compressor contracts (theory/compressor_assertions.cc)
Judgement MakeUnbiasedCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeQuantizerVarianceCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeDeviationCheck(OptionTable& options, const AssertionContext& context);

// Rates and end points (theory/rate_assertions.cc)
Judgement MakeRateCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeSpeedupCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeOptimalityGapCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeTracksReferenceCheck(OptionTable& options, const AssertionContext& context);

// spams.txt (theory/spams_assertions.cc)
Judgement MakeSpamsLemma2Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsLemma4Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsLemma5Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsTheorem1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsCorollary1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsCorollary2Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsLemma1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeSpamsLemma3Check(OptionTable& options, const AssertionContext& context);

// onebit-adam-icml-with-appendix.txt and onebit-lamb.txt (theory/one_bit_assertions.cc)
Judgement MakeOneBitErrorBoundedCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeVarianceStableCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeOneBitLambClipsCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeOneBitAdamTheorem1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeOneBitLambTheorem1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeRatioAdaptsCheck(OptionTable& options, const AssertionContext& context);

// EF21, EF21-SGDM, MARINA and DIANA with full gradients (theory/estimator_assertions.cc)
Judgement MakeEf21Theorem1Check(OptionTable& options, const AssertionContext& context);
Judgement MakeEf21SgdmFullGradientCheck(OptionTable& options, const AssertionContext& context);
Judgement MakeMarinaTheorem21Check(OptionTable& options, const AssertionContext& context);
Judgement MakeDianaNonconvexCheck(OptionTable& options, const AssertionContext& context);
// 0/1 Adam's communication volume (theory/zero_one_adam_assertions.cc)
Judgement MakeZeroOneAdamVolumeCheck(OptionTable& options, const AssertionContext& context);

// One judgement by name, as a check makes it from an [[assert]] table: for tests and tools.
Verdict JudgeAssertion(std::string_view assertion, OptionTable& options,
                       const AssertionInput& input);

}  // namespace lemmalab
