// The table `lemmalab run` prints: the problem, its constants and shards, then one row per run
// (status, final metrics, bits and bytes sent, step and communication time) and the probes'
// summaries.
#pragma once

#include <string>

#include "engine/experiment.h"

namespace lemmalab {

std::string FormatRunTable(const ExperimentReport& report);

}  // namespace lemmalab
