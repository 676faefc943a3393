// The assertion functions the registry (theory/assertion_registry.cc) lists, by source.
#pragma once

#include "theory/assertion.h"

namespace lemmalab {

// birder.txt (theory/birder_assertions.cc)
Verdict CheckErrorNorm(const AssertionInput& input);

}  // namespace lemmalab
