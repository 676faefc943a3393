// NumPy's .npy format (version 1.0), so other tools can load lemmalab's parameters with
// numpy.load. Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <filesystem>

#include "core/types.h"

namespace lemmalab {

// Writes `rows` as a C-ordered float32 ('<f4') or float64 ('<f8') array of shape
// (rows, cols); all rows must have the same length.
void WriteNpy(const std::filesystem::path& path, const std::vector<Eigen::VectorXd>& rows,
              Precision precision);

}  // namespace lemmalab
