// Data sets for the problems that learn from samples, and the registry of their sources.
//
// A data source is named in a run spec's [data] table:
//   [data]
//   source = "csv"                 # or "synthetic-logistic"
//   path = "../data/breast_cancer.csv"
//   standardize = true             # explicit: per-feature z-scores over the whole set
// Paths are resolved relative to the folder of the spec that names them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "core/registry.h"
#include "core/types.h"

namespace lemmalab {

struct Dataset {
  RowMatrix<double> features;  // one sample per row
  Eigen::VectorXd labels;      // binary classification: 0 or 1
  std::vector<std::string> feature_names;
  std::string description;  // for reports: where the data came from and its shape

  std::int64_t samples() const { return features.rows(); }
  std::int64_t num_features() const { return features.cols(); }
};

// Per-feature standardisation to zero mean and unit variance (population variance) over all
// samples. Constant features become exactly 0 (centred, not scaled).
void StandardizeFeatures(Dataset& data);

struct DataContext {
  std::uint64_t seed = 0;
  std::filesystem::path base_dir;  // relative paths resolve against this folder
};

struct DataSourceInfo {
  std::string_view name;
  std::string_view summary;
  Dataset (*load)(OptionTable& options, const DataContext& context);
};

const Registry<DataSourceInfo>& DataSources();

// Loads the data set a [data] table describes, applies the common options (standardize) and
// rejects unknown keys.
Dataset LoadData(OptionTable& options, const DataContext& context);

// Readers behind the registered sources, also usable directly.
// A CSV file with a header row, plain or gzip-compressed; every field numeric; the label column
// holds 0 or 1. Errors name the file and line.
Dataset ReadCsv(const std::filesystem::path& path, std::string_view label_column);
// n samples with d standard normal features and labels y ~ Bernoulli(sigmoid(a·w*)), where
// w* ~ N(0, (signal² / d) I), so the logits have standard deviation about `signal`.
Dataset MakeSyntheticLogistic(std::int64_t samples, std::int64_t features, double signal,
                              std::uint64_t seed);

}  // namespace lemmalab
