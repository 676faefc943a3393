#include "problems/dataset.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace lemmalab {

void StandardizeFeatures(Dataset& data) {
  const auto n = static_cast<double>(data.samples());
  for (Eigen::Index j = 0; j < data.features.cols(); ++j) {
    auto column = data.features.col(j);
    // A constant column is exactly 0 once centred; computing its mean in floating point would
    // leave rounding noise that division by an equally tiny sd blows up to +-1.
    if (column.minCoeff() == column.maxCoeff()) {
      column.setZero();
      continue;
    }
    const double mean = column.sum() / n;
    column.array() -= mean;
    column /= std::sqrt(column.squaredNorm() / n);
  }
  data.description += ", standardized";
}

namespace {

Dataset LoadCsv(OptionTable& options, const DataContext& context) {
  const std::filesystem::path given = options.RequireString("path");
  const std::filesystem::path path = given.is_absolute() ? given : context.base_dir / given;
  if (!std::filesystem::exists(path)) {
    options.Fail("path", fmt::format("data file '{}' not found (looked for {})", given.string(),
                                     path.lexically_normal().string()));
  }
  if (!std::filesystem::is_regular_file(path)) {
    options.Fail("path", fmt::format("data file '{}' is not a regular file", given.string()));
  }
  return ReadCsv(path, options.GetString("label", ""));
}

Dataset LoadSyntheticLogistic(OptionTable& options, const DataContext& context) {
  const std::int64_t samples = options.GetInt("samples", 1000, 1, std::int64_t{1} << 31);
  const std::int64_t features = options.GetInt("features", 20, 1, 1 << 24);
  const double signal = options.GetDouble("signal", 4.0, Interval::NonNegative());
  return MakeSyntheticLogistic(samples, features, signal, context.seed);
}

}  // namespace

const Registry<DataSourceInfo>& DataSources() {
  static const Registry<DataSourceInfo> registry(
      "data source",
      {
          {"csv", "CSV table with a header row (plain or gzip); label column 0/1", &LoadCsv},
          {"synthetic-logistic", "Gaussian features, labels from a logistic model with seed",
           &LoadSyntheticLogistic},
      });
  return registry;
}

Dataset LoadData(OptionTable& options, const DataContext& context) {
  const DataSourceInfo& source = DataSources().Get(options, "source");
  const bool standardize = options.GetBool("standardize", false);
  Dataset data = source.load(options, context);
  options.RejectUnknownKeys();
  if (standardize) StandardizeFeatures(data);
  return data;
}

}  // namespace lemmalab
