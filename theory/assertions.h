// The assertion functions the registry (theory/assertion_registry.cc) lists, by source.
#pragma once

#include "theory/assertion.h"

namespace lemmalab {

// birder.txt (theory/birder_assertions.cc)
Verdict CheckErrorNorm(const AssertionInput& input);
Verdict CheckQuantizerDomain(const AssertionInput& input);
Verdict CheckDenominatorFloor(const AssertionInput& input);
Verdict CheckRawDenominatorPositive(const AssertionInput& input);
Verdict CheckZSequence(const AssertionInput& input);
Verdict CheckBirderTheorem1(const AssertionInput& input);

// Compressor contracts (theory/compressor_assertions.cc)
Verdict CheckUnbiased(const AssertionInput& input);
Verdict CheckQuantizerVariance(const AssertionInput& input);
Verdict CheckDeviation(const AssertionInput& input);

// Rates and end points (theory/rate_assertions.cc)
Verdict CheckRate(const AssertionInput& input);
Verdict CheckSpeedup(const AssertionInput& input);
Verdict CheckOptimalityGap(const AssertionInput& input);
Verdict CheckTracksReference(const AssertionInput& input);

// spams.txt (theory/spams_assertions.cc)
Verdict CheckSpamsLemma2(const AssertionInput& input);
Verdict CheckSpamsLemma4(const AssertionInput& input);
Verdict CheckSpamsLemma5(const AssertionInput& input);
Verdict CheckSpamsTheorem1(const AssertionInput& input);

// onebit-adam-icml-with-appendix.txt and onebit-lamb.txt (theory/onebit_assertions.cc)
Verdict CheckOnebitErrorBounded(const AssertionInput& input);
Verdict CheckVarianceStable(const AssertionInput& input);
Verdict CheckOnebitLambClips(const AssertionInput& input);
Verdict CheckOnebitAdamTheorem1(const AssertionInput& input);

}  // namespace lemmalab
