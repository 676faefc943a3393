// The assertion registry: adding an assertion is one function and one line in the table below.
#include "theory/assertion.h"
#include "theory/assertions.h"

namespace lemmalab {

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kHolds:
      return "holds";
    case VerdictKind::kViolated:
      return "violated";
    case VerdictKind::kInconclusive:
      break;
  }
  return "inconclusive";
}

const Registry<AssertionInfo>& Assertions() {
  static const Registry<AssertionInfo> registry(
      "assertion",
      {
          {"ef-norm", "E||e||^2 <= d for worker and server error feedback (running mean of ||e||^2/d <= 1)",
           "birder.txt Lemma 1, Eq. 16 and 19", {"ef-norm"}, AssertionScope::kRun,
           &CheckErrorNorm},
      });
  return registry;
}

}  // namespace lemmalab
