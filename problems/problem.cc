#include "problems/problem.h"

namespace lemmalab {

std::string_view CertaintyName(Certainty certainty) {
  switch (certainty) {
    case Certainty::kExact:
      return "exact";
    case Certainty::kBound:
      return "bound";
    case Certainty::kEstimate:
      return "estimate";
  }
  return "unknown";
}

}  // namespace lemmalab
