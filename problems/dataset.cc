#include "problems/dataset.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace lemmalab {

void StandardizeFeatures(Dataset& data) {
  const auto n = static_cast<double>(data.samples());
  for (Eigen::Index j = 0; j < data.features.cols(); ++j) {
    auto column = data.features.col(j);
    const double mean = column.sum() / n;
    column.array() -= mean;
    const double sd = std::sqrt(column.squaredNorm() / n);
    if (sd > 0) column /= sd;
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
  return ReadCsv(path, options.GetString("label", ""));
}

Dataset LoadSyntheticLogistic(OptionTable& options, const DataContext& context) {
  const std::int64_t samples = options.GetInt("samples", 1000, 1);
  const std::int64_t features = options.GetInt("features", 20, 1);
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
