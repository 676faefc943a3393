// The table `lemmalab run` prints: the problem, its constants and shards, then one row per run
// (status, final metrics, bits and bytes sent, step and communication time) and the probes'
// summaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/experiment.h"

namespace lemmalab {

// The runs' table within `width` columns (cli/table.h's FormatTableWithin; the whole table in
// runs.csv), the whole table by default.
std::string FormatRunTable(const ExperimentReport& report, std::size_t width = SIZE_MAX);

}  // namespace lemmalab
