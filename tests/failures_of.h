// Counting the failed expectations of a piece of test code without failing the test, for
// negative controls: a planted fault must make a checker report failures.
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace lemmalab::testing {

// The number of failed expectations `f` reports (intercepted, so they do not fail this test).
template <typename F>
int FailuresOf(F&& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  return results.size();
}

}  // namespace lemmalab::testing
