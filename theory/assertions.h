// The assertions the registry (theory/assertion_registry.cc) lists, one list per source file: each
// file defines its assertions' Make functions (which read and validate the [[assert]] keys and
// return the judgement, theory/assertion.h) and, beside them, their registry rows, so that adding
// an assertion to a file touches that file only.
#pragma once

#include <string_view>
#include <vector>

#include "theory/assertion.h"

namespace lemmalab {

// birder.txt (theory/birder_assertions.cc)
std::vector<AssertionInfo> BirderAssertions();
// Compressor contracts (theory/compressor_assertions.cc)
std::vector<AssertionInfo> CompressorAssertions();
// Rates and end points (theory/rate_assertions.cc)
std::vector<AssertionInfo> RateAssertions();
// spams.txt (theory/spams_assertions.cc)
std::vector<AssertionInfo> SpamsAssertions();
// onebit-adam-icml-with-appendix.txt and onebit-lamb.txt (theory/one_bit_assertions.cc)
std::vector<AssertionInfo> OneBitAssertions();
// EF21, EF21-SGDM, MARINA and DIANA with full gradients (theory/estimator_assertions.cc)
std::vector<AssertionInfo> EstimatorAssertions();
// 0/1 Adam's communication volume (theory/zero_one_adam_assertions.cc)
std::vector<AssertionInfo> ZeroOneAdamAssertions();

// One judgement by name, as a check makes it from an [[assert]] table: for tests and tools.
Verdict JudgeAssertion(std::string_view assertion, OptionTable& options,
                       const AssertionInput& input);

}  // namespace lemmalab
