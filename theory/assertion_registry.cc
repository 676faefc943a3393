// The assertion registry: the rows of every assertion source file, in one table. Each file
// defines its assertions' Make functions and, beside them, their rows (theory/assertions.h), each
// with an example the claim holds on (and runs outside its scope) for the contract test; so adding
// an assertion to a file takes that file only, and a new file its list's declaration in
// theory/assertions.h and one line below.
#include <iterator>
#include <vector>

#include "core/error.h"
#include "theory/assertion.h"
#include "theory/assertions.h"
#include "theory/evidence_rule.h"
#include "theory/verdicts.h"

namespace lemmalab {

const Registry<AssertionInfo>& Assertions() {
  // The registry orders its entries by name (core/registry.h), so the order of the lists does not
  // show.
  static const Registry<AssertionInfo> registry("assertion", [] {
    std::vector<AssertionInfo> rows;
    for (std::vector<AssertionInfo> (*list)() :
         {&BirderAssertions, &CompressorAssertions, &RateAssertions, &SpamsAssertions,
          &OneBitAssertions, &EstimatorAssertions, &ZeroOneAdamAssertions}) {
      std::vector<AssertionInfo> more = list();
      rows.insert(rows.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
    }
    return rows;
  }());
  return registry;
}

Verdict JudgeAssertion(std::string_view assertion, OptionTable& options,
                       const AssertionInput& input) {
  const AssertionInfo* info = Assertions().Find(assertion);
  LEMMALAB_CHECK(info != nullptr, "no assertion '{}'", assertion);
  AssertionContext context;
  for (const RunEvidence& run : input.experiment) context.labels.push_back(run.label);
  const Judgement judge = info->make(options, context);
  options.RejectUnknownKeys();
  return JudgeClaim(*info, judge, input);
}

}  // namespace lemmalab
