// Runs a test body once per SIMD target Highway compiled and this CPU supports, with dispatch
// forced to that target, so a kernel's every variant is checked against its scalar definition.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdint>
#include <vector>

namespace lemmalab::testing {

template <typename F>
void ForEachHighwayTarget(F&& body) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace lemmalab::testing
