// What every probe series means: the declaration that labels a recorded series unambiguously
// (is ||e||^2 divided by d or not, whose error, which step), stored with the results in the
// probe_series table and used by `lemmalab report` to show a series as the probe's summary does
// (divided by d where `per_dimension`). tests/probe_contract_test.cc checks that every series a
// probe records is declared here.
#pragma once

#include <span>
#include <string_view>

namespace lemmalab {

struct SeriesInfo {
  std::string_view probe;    // "ef-norm"
  std::string_view series;   // "worker_sq_norm"
  std::string_view meaning;  // "||e_t^(i)||^2, worker i's error after step t (not divided by d)"
  // The probe's summary shows the series divided by the dimension d (||e||^2 / d).
  bool per_dimension = false;
};

std::span<const SeriesInfo> ProbeSeries();

// The declaration of `series` of `probe`, or nullptr.
const SeriesInfo* FindProbeSeries(std::string_view probe, std::string_view series);

}  // namespace lemmalab
