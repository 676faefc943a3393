#include "problems/dataset.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/data_sources.h"

namespace lemmalab {

namespace {

// The value of every byte as T, computed as a dense double of the same data would be converted.
template <typename T>
std::array<T, 256> ByteTable(const std::array<double, 256>& values) {
  std::array<T, 256> table;
  for (std::size_t b = 0; b < 256; ++b) table[b] = static_cast<T>(values[b]);
  return table;
}

}  // namespace

template <typename T>
void Samples::RowsAs(std::int64_t begin, std::int64_t count, T* out) const {
  LEMMALAB_CHECK(begin >= 0 && count >= 0 && begin + count <= size(), "rows {}..{} of {} samples",
                 begin, begin + count - 1, size());
  const std::int64_t width = num_features();
  if (holds_bytes()) {
    const std::array<T, 256> table = ByteTable<T>(byte_values);
    const std::uint8_t* in = bytes->data() + begin * width;
    for (std::int64_t k = 0; k < count * width; ++k) out[k] = table[in[k]];
  } else {
    Eigen::Map<RowMatrix<T>>(out, count, width) =
        features.middleRows(begin, count).template cast<T>();
  }
}

template <typename T>
void Samples::GatherAs(std::span<const std::int64_t> rows, T* out) const {
  const std::int64_t width = num_features();
  std::array<T, 256> table{};
  if (holds_bytes()) table = ByteTable<T>(byte_values);
  for (const std::int64_t row : rows) {
    LEMMALAB_CHECK(row >= 0 && row < size(), "row {} of {} samples", row, size());
    if (holds_bytes()) {
      const std::uint8_t* in = bytes->row(row).data();
      for (std::int64_t k = 0; k < width; ++k) out[k] = table[in[k]];
    } else {
      Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(out, width) =
          features.row(row).template cast<T>();
    }
    out += width;
  }
}

std::vector<std::span<const std::byte>> Samples::Buffers() const {
  const auto of = [](const auto* data, std::int64_t count) {
    return std::as_bytes(std::span(data, static_cast<std::size_t>(count)));
  };
  std::vector<std::span<const std::byte>> buffers;
  if (holds_bytes()) {
    buffers.push_back(of(bytes->data(), bytes->size()));
    buffers.push_back(std::as_bytes(std::span(byte_values)));
  } else {
    buffers.push_back(of(features.data(), features.size()));
  }
  buffers.push_back(of(labels.data(), labels.size()));
  return buffers;
}

std::vector<std::span<const std::byte>> Dataset::Buffers() const {
  std::vector<std::span<const std::byte>> buffers = train.Buffers();
  if (test) {
    for (const auto& buffer : test->Buffers()) buffers.push_back(buffer);
  }
  return buffers;
}

MemoryLimit TestSetLimit(const MemoryLimit& limit, const Samples& train) {
  // A byte or a double per feature, a 4-byte label per sample.
  const double feature_bytes = train.holds_bytes() ? 1 : 8;
  const double held = static_cast<double>(train.size()) *
                      (feature_bytes * static_cast<double>(train.num_features()) + 4);
  return {std::max(0.0, limit.bytes - held),
          fmt::format("{}, less the {} the training set holds", limit.source, FormatBytes(held))};
}

template void Samples::RowsAs(std::int64_t, std::int64_t, float*) const;
template void Samples::RowsAs(std::int64_t, std::int64_t, double*) const;
template void Samples::GatherAs(std::span<const std::int64_t>, float*) const;
template void Samples::GatherAs(std::span<const std::int64_t>, double*) const;

RowMatrix<double> Samples::Dense() const {
  RowMatrix<double> dense(size(), num_features());
  RowsAs(0, size(), dense.data());
  return dense;
}

void StandardizeFeatures(Dataset& data) {
  // The statistics need arbitrary doubles: byte features become dense, valued as they were.
  for (Samples* set : {&data.train, data.test ? &*data.test : nullptr}) {
    if (set == nullptr || !set->holds_bytes()) continue;
    set->features = set->Dense();
    set->bytes.reset();
  }
  RowMatrix<double>& train = data.train.features;
  RowMatrix<double>* test = data.test ? &data.test->features : nullptr;
  const auto n = static_cast<double>(train.rows());
  for (Eigen::Index j = 0; j < train.cols(); ++j) {
    auto column = train.col(j);
    // A constant column is exactly 0 once centred; computing its mean in floating point would
    // leave rounding noise that division by an equally tiny sd blows up to +-1.
    if (column.minCoeff() == column.maxCoeff()) {
      if (test != nullptr) test->col(j).array() -= column[0];
      column.setZero();
      continue;
    }
    const double mean = column.sum() / n;
    column.array() -= mean;
    const double sd = std::sqrt(column.squaredNorm() / n);
    column /= sd;
    if (test != nullptr) test->col(j) = (test->col(j).array() - mean) / sd;
  }
  data.description += ", standardized";
}

void ScalePixels(Dataset& data) {
  for (Samples* set : {&data.train, data.test ? &*data.test : nullptr}) {
    if (set == nullptr) continue;
    if (set->holds_bytes()) {
      // The same division a dense double b would get, once per byte value.
      for (double& value : set->byte_values) value /= 255.0;
    } else {
      set->features /= 255.0;
    }
  }
  data.description += ", pixels / 255";
}

namespace {

// `given` resolved against the spec's folder; fails, naming the option, when nothing is there.
std::filesystem::path ExistingPath(OptionTable& options, std::string_view key,
                                   const std::filesystem::path& given, std::string_view kind,
                                   const DataContext& context) {
  const std::filesystem::path path = given.is_absolute() ? given : context.base_dir / given;
  if (!std::filesystem::exists(path)) {
    options.Fail(key, fmt::format("data {} '{}' not found (looked for {})", kind, given.string(),
                                  path.lexically_normal().string()));
  }
  return path;
}

}  // namespace

std::filesystem::path ResolveDataPath(OptionTable& options, std::string_view key,
                                      const std::string& given_text, const DataContext& context) {
  const std::filesystem::path given = given_text;
  const std::filesystem::path path = ExistingPath(options, key, given, "file", context);
  if (!std::filesystem::is_regular_file(path)) {
    options.Fail(key, fmt::format("data file '{}' is not a regular file", given.string()));
  }
  return path;
}

std::filesystem::path ResolveDataFile(OptionTable& options, std::string_view key,
                                      const DataContext& context) {
  return ResolveDataPath(options, key, options.RequireString(key), context);
}

std::filesystem::path ResolveDataDir(OptionTable& options, std::string_view key,
                                     const DataContext& context) {
  const std::filesystem::path given = options.RequireString(key);
  const std::filesystem::path path = ExistingPath(options, key, given, "folder", context);
  if (!std::filesystem::is_directory(path)) {
    options.Fail(key, fmt::format("data folder '{}' is not a folder", given.string()));
  }
  return path;
}

std::optional<std::filesystem::path> FindDataFile(OptionTable& options, std::string_view key,
                                                  const std::filesystem::path& dir,
                                                  const std::string& name) {
  const std::filesystem::path plain = dir / name;
  const std::filesystem::path zipped = dir / (name + ".gz");
  const bool has_plain = std::filesystem::is_regular_file(plain);
  const bool has_zipped = std::filesystem::is_regular_file(zipped);
  if (has_plain && has_zipped) {
    options.Fail(key,
                 fmt::format("'{}' holds both {} and {}.gz; keep one", dir.string(), name, name));
  }
  if (has_plain) return plain;
  if (has_zipped) return zipped;
  return std::nullopt;
}

std::string FolderName(const std::filesystem::path& dir) {
  std::filesystem::path normal = std::filesystem::absolute(dir).lexically_normal();
  if (!normal.has_filename()) normal = normal.parent_path();
  return normal.filename().string();
}

namespace {

// The `classes` option, read before the data: absent, the data's labels decide (CountClasses).
std::optional<int> ReadClasses(OptionTable& options) {
  options.Describe("classes",
                   "an integer in [2, 1048576]; default: one more than the largest "
                   "label (at least 2)");
  if (!options.Has("classes")) return std::nullopt;
  return static_cast<int>(options.GetInt("classes", 2, 2, 1 << 20));
}

// The number of classes: the `classes` option, or one more than the largest label seen (at
// least 2). Labels must be below it.
int CountClasses(OptionTable& options, std::optional<int> given, const Samples& train,
                 const Samples* test) {
  int largest = train.labels.size() > 0 ? train.labels.maxCoeff() : 0;
  if (test != nullptr && test->labels.size() > 0)
    largest = std::max(largest, test->labels.maxCoeff());
  if (!given) return std::max(2, largest + 1);
  const int classes = *given;
  if (largest >= classes) {
    options.Fail("classes", fmt::format("the data has label {}, but classes = {} allows 0..{}",
                                        largest, classes, classes - 1));
  }
  return classes;
}

Dataset LoadCsv(OptionTable& options, const DataContext& context) {
  const std::string given = options.RequireString("path");
  const std::string label = options.GetString("label", "");
  options.Describe("test_path", "a string: a CSV file with the same columns; default: none");
  const std::optional<std::string> test_given =
      options.Has("test_path") ? std::optional(options.RequireString("test_path")) : std::nullopt;
  const std::optional<int> classes = ReadClasses(options);
  if (context.options_only) return {};
  const std::filesystem::path path = ResolveDataPath(options, "path", given, context);
  CsvTable train = ReadCsv(path, label, context.memory);
  Dataset data;
  data.train = std::move(train.samples);
  data.feature_names = std::move(train.feature_names);
  if (test_given) {
    const std::filesystem::path test_path =
        ResolveDataPath(options, "test_path", *test_given, context);
    CsvTable test = ReadCsv(test_path, label, TestSetLimit(context.memory, data.train));
    if (test.feature_names != data.feature_names) {
      options.Fail("test_path", fmt::format("'{}' has other feature columns than '{}'",
                                            test_path.string(), path.string()));
    }
    data.test = std::move(test.samples);
  }
  data.classes = CountClasses(options, classes, data.train, data.test ? &*data.test : nullptr);
  data.description = fmt::format("{} ({} samples x {} features", path.filename().string(),
                                 data.train.size(), data.num_features());
  if (data.test) data.description += fmt::format(", {} test samples", data.test->size());
  data.description += ")";
  return data;
}

Dataset LoadSyntheticLogistic(OptionTable& options, const DataContext& context) {
  const std::int64_t samples = options.GetInt("samples", 1000, 1, std::int64_t{1} << 31);
  const std::int64_t features = options.GetInt("features", 20, 1, 1 << 24);
  const double signal = options.GetDouble("signal", 4.0, Interval::NonNegative());
  if (context.options_only) return {};
  RequireWithin(
      context.memory, static_cast<double>(samples) * (8 * static_cast<double>(features) + 4),
      fmt::format("synthetic-logistic with samples = {} and features = {}", samples, features),
      fmt::format("{} samples x ({} features x 8 bytes + a 4-byte label)", samples, features));
  return MakeSyntheticLogistic(samples, features, signal, context.seed);
}

}  // namespace

const Registry<DataSourceInfo>& DataSources() {
  static const Registry<DataSourceInfo> registry(
      "data source",
      {
          {"cifar10",
           "CIFAR-10 binary batches (plain or gzip): dir, or train = [...], test = [...]",
           &LoadCifar10},
          {"csv", "CSV table with a header row (plain or gzip); label column of class indices",
           &LoadCsv},
          {"idx", "IDX images and labels, MNIST / Fashion-MNIST (plain or gzip): dir, or files",
           &LoadIdx},
          {"libsvm", "LIBSVM / SVMlight text, binary labels -1/+1 or 0/1 (plain or gzip)",
           &LoadLibsvm},
          {"synthetic-logistic", "Gaussian features, labels from a logistic model with seed",
           &LoadSyntheticLogistic, /*uses_seed=*/true},
      });
  return registry;
}

Dataset LoadData(OptionTable& options, const DataContext& context) {
  const DataSourceInfo& source = DataSources().Get(options, "source");
  static const std::array<std::string, 3> kNormalize = {"none", "standardize", "pixels"};
  const std::string normalize = options.GetChoice("normalize", "none", kNormalize);
  // The first `samples` training (and test) samples only: runs of seconds for teaching and for
  // the smoke tests of runs/.
  const std::optional<std::int64_t> samples = options.GetOptionalInt("samples", 1);
  Dataset data = source.load(options, context);
  if (context.options_only) return data;
  options.RejectUnknownKeys();
  if (samples) {
    const auto keep = [&](Samples& set) {
      const Eigen::Index n = std::min<Eigen::Index>(set.size(), *samples);
      if (set.holds_bytes()) {
        set.bytes = std::make_shared<const ByteMatrix>(set.bytes->topRows(n));
      } else {
        set.features.conservativeResize(n, Eigen::NoChange);
      }
      set.labels.conservativeResize(n);
    };
    keep(data.train);
    if (data.test) keep(*data.test);
    data.description += fmt::format(" (first {} samples)", data.train.size());
  }
  if (normalize == "standardize") {
    // Byte features become dense doubles, eight times their size, while the bytes are held.
    double bytes = 0;
    for (const Samples* set : {&data.train, data.test ? &*data.test : nullptr}) {
      if (set != nullptr && set->holds_bytes()) {
        bytes += static_cast<double>(set->size()) * static_cast<double>(set->num_features());
      }
    }
    try {
      RequireWithin(context.memory, 9 * bytes, "standardizing the byte features",
                    fmt::format("{:.0f} bytes, and as many 8-byte doubles", bytes));
    } catch (const UserError& e) {
      options.Fail("normalize", e.what());
    }
    StandardizeFeatures(data);
  }
  if (normalize == "pixels") ScalePixels(data);
  return data;
}

}  // namespace lemmalab
