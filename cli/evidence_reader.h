// Reads a results folder written by `lemmalab run` (engine/results.h) back into the RunEvidence the
// assertions judge (theory/evidence.h).
#pragma once

#include <filesystem>
#include <vector>

#include "theory/evidence.h"

namespace lemmalab {

// Every run of DIR/results.sqlite, in spec order, with the options it resolved when it ran (its
// `hyperparameters` rows: the ones the run used, even if the spec or the defaults changed since).
// UserError when DIR holds no complete results.
std::vector<RunEvidence> ReadEvidence(const std::filesystem::path& dir);

}  // namespace lemmalab
