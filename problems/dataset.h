// Data sets for the problems that learn from samples, and the registry of their sources.
//
// A data source is named in a run spec's [data] table:
//   [data]
//   source = "idx"                 # csv, libsvm, idx, cifar10, synthetic-logistic
//   dir = "/usr/share/datasets/fashion-mnist"
//   normalize = "pixels"           # none (default), standardize, pixels
//   samples = 1000                 # optional: the first 1000 training and test samples only
// Paths are resolved relative to the folder of the spec that names them. Every reader validates
// while it streams (magic numbers, sizes, truncation, labels) and names the file and the line or
// byte offset of the first problem.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "core/registry.h"
#include "core/resources.h"
#include "core/types.h"

namespace lemmalab {

using ByteMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Labelled samples, one per row of features; labels are class indices 0 .. classes-1.
//
// The features are held one of two ways: dense doubles in `features` (CSV, LIBSVM, synthetic
// data; `bytes` is null), or, for data that are bytes (IDX and CIFAR-10 images), the bytes
// themselves with the value each byte stands for in `byte_values` (b, or b / 255 once scaled;
// `features` is then empty). Bytes take an eighth of the memory (47 MB instead of 376 MB for
// Fashion-MNIST's training set), and they are never modified once read, so copies of the samples
// and the problems built on them share one matrix instead of copying it.
// Consumers read rows through RowsAs / GatherAs, which give the same values both ways.
struct Samples {
  RowMatrix<double> features;
  std::shared_ptr<const ByteMatrix> bytes;
  std::array<double, 256> byte_values = [] {
    std::array<double, 256> identity;
    for (int b = 0; b < 256; ++b) identity[static_cast<std::size_t>(b)] = b;
    return identity;
  }();
  Eigen::VectorXi labels;

  bool holds_bytes() const { return bytes != nullptr; }
  std::int64_t size() const { return holds_bytes() ? bytes->rows() : features.rows(); }
  std::int64_t num_features() const { return holds_bytes() ? bytes->cols() : features.cols(); }

  // Writes rows begin .. begin + count - 1, converted to T, row-major to `out`
  // (count x num_features() entries). A byte b becomes static_cast<T>(byte_values[b]), the value
  // a dense double of the same data would give.
  template <typename T>
  void RowsAs(std::int64_t begin, std::int64_t count, T* out) const;
  // The same for the listed rows, in the order listed.
  template <typename T>
  void GatherAs(std::span<const std::int64_t> rows, T* out) const;

  // All features as dense doubles.
  RowMatrix<double> Dense() const;

  // The memory the samples hold, buffer by buffer: the features (bytes and the values they
  // stand for, or doubles) and the labels. What a checksum of the data reads and what a memory
  // estimate counts.
  std::vector<std::span<const std::byte>> Buffers() const;
};

struct Dataset {
  Samples train;
  std::optional<Samples> test;  // when the source provides one
  int classes = 2;
  std::vector<std::string> feature_names;  // may be empty (images)
  std::string description;                 // for reports: where the data came from and its shape

  std::int64_t num_features() const { return train.num_features(); }
  // The training set's buffers, then the test set's (Samples::Buffers).
  std::vector<std::span<const std::byte>> Buffers() const;
};

// Per-feature standardisation to zero mean and unit variance (population variance), with the
// statistics of the training set applied to both sets. Features constant on the training set
// become exactly 0 (centred, not scaled). Byte features become dense doubles first.
void StandardizeFeatures(Dataset& data);
// Divides every feature by 255: byte-valued pixels to [0, 1]. Byte features keep their bytes
// and divide their value map.
void ScalePixels(Dataset& data);

struct DataContext {
  std::uint64_t seed = 0;
  std::filesystem::path base_dir;  // relative paths resolve against this folder
  // What the data may take in memory, training and test set together: the readers refuse, at
  // the first byte that proves it, data that would need more.
  MemoryLimit memory = MemoryLimit::Machine();
  // Read and check the options only, touching no file, and return no data (`lemmalab list`):
  // every loader reads all its options before it opens anything.
  bool options_only = false;
};

struct DataSourceInfo {
  std::string_view name;
  std::string_view summary;
  Dataset (*load)(OptionTable& options, const DataContext& context);
  bool uses_seed = false;  // the data depend on DataContext::seed (generated data)
};

const Registry<DataSourceInfo>& DataSources();

// Loads the data set a [data] table describes, applies the common option `normalize` and rejects
// unknown keys.
Dataset LoadData(OptionTable& options, const DataContext& context);

// The path an option names, resolved against the spec's folder; fails (naming the option) when
// it does not exist or is not a regular file.
std::filesystem::path ResolveDataFile(OptionTable& options, std::string_view key,
                                      const DataContext& context);

// Readers behind the registered sources, also usable directly. All throw UserError naming the
// file and where in it the problem is. Each streams its files and holds only what has arrived:
// storage grows with the data, never with a count a header claims, and data that would take
// more than `memory` are refused when the first byte that proves it arrives.

// A CSV file with a header row, plain or gzip-compressed; every field numeric; the label column
// (the last one when `label_column` is empty) holds class indices 0, 1, ...
// Returns the samples and the feature names.
struct CsvTable {
  Samples samples;
  std::vector<std::string> feature_names;
};
CsvTable ReadCsv(const std::filesystem::path& path, std::string_view label_column,
                 const MemoryLimit& memory = MemoryLimit::Machine());

// IDX images and labels (MNIST, Fashion-MNIST), each plain or gzip-compressed: unsigned bytes,
// images n x rows x cols (one row-major image per sample), labels n values below `classes`
// (2..256). Offsets in messages count bytes of the uncompressed stream. The samples hold bytes.
Samples ReadIdx(const std::filesystem::path& images, const std::filesystem::path& labels,
                int classes, const MemoryLimit& memory = MemoryLimit::Machine());

// CIFAR-10 binary batches, each plain or gzip-compressed, concatenated in order: 3072 features
// per image, the red, green and blue 32x32 planes one after another (row-major), labels 0..9.
// The samples hold bytes.
Samples ReadCifar10(const std::vector<std::filesystem::path>& files,
                    const MemoryLimit& memory = MemoryLimit::Machine());

// A LIBSVM / SVMlight text file for binary classification, plain or gzip-compressed. Labels are
// all -1/+1 or all 0/1 (class 0 and class 1). `features` fixes the number of columns (indices
// above it are errors); 0 takes the largest index in the file.
Samples ReadLibsvm(const std::filesystem::path& path, std::int64_t features,
                   const MemoryLimit& memory = MemoryLimit::Machine());

// n samples with d standard normal features and labels y ~ Bernoulli(sigmoid(a·w*)), where
// w* ~ N(0, (signal² / d) I), so the logits have standard deviation about `signal`.
Dataset MakeSyntheticLogistic(std::int64_t samples, std::int64_t features, double signal,
                              std::uint64_t seed);

}  // namespace lemmalab
