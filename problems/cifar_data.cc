// CIFAR-10 binary reader (Krizhevsky 2009, "binary version"): records of 1 label byte (0..9) and
// 3072 pixel bytes, the red, green and blue 32x32 planes one after another, each row-major.
// Features keep that order: feature 1024 * channel + 32 * row + column.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/data_sources.h"
#include "problems/dataset.h"

namespace lemmalab {
namespace {

constexpr std::size_t kPixels = 3 * 32 * 32;
constexpr std::size_t kRecord = 1 + kPixels;
constexpr int kClasses = 10;

// The whole (uncompressed) file, checked to be whole records with valid labels.
std::vector<unsigned char> ReadRecords(const std::filesystem::path& path) {
  GzipReader in(path);
  std::vector<unsigned char> bytes = in.ReadToEnd();
  if (bytes.empty()) {
    throw UserError(fmt::format(
        "{}: empty file, expected CIFAR-10 records of {} bytes (1 label byte + {} pixel bytes)",
        in.file(), kRecord, kPixels));
  }
  if (const std::size_t whole = bytes.size() / kRecord; bytes.size() % kRecord != 0) {
    in.FailTruncated(fmt::format(
        "the incomplete record {} starts at byte {} (CIFAR-10 records are {} bytes: 1 label byte "
        "+ {} pixel bytes)",
        whole, whole * kRecord, kRecord, kPixels));
  }
  for (std::size_t r = 0; r < bytes.size() / kRecord; ++r) {
    if (const int label = bytes[r * kRecord]; label >= kClasses) {
      throw UserError(fmt::format(
          "{}: record {} (byte {} of the uncompressed stream) has label {}; CIFAR-10 labels are "
          "0..9",
          in.file(), r, r * kRecord, label));
    }
  }
  return bytes;
}

}  // namespace

Samples ReadCifar10(const std::vector<std::filesystem::path>& files) {
  if (files.empty()) throw UserError("CIFAR-10: no files to read");
  std::vector<std::vector<unsigned char>> contents;
  std::int64_t records = 0;
  for (const std::filesystem::path& file : files) {
    contents.push_back(ReadRecords(file));
    records += static_cast<std::int64_t>(contents.back().size() / kRecord);
  }
  std::vector<std::string> names;
  for (const std::filesystem::path& file : files) names.push_back(file.string());
  CheckDenseSize(fmt::format("{}", fmt::join(names, ", ")), records, kPixels);

  Samples samples;
  ByteMatrix images(records, static_cast<Eigen::Index>(kPixels));
  samples.labels.resize(records);
  std::int64_t row = 0;
  for (std::vector<unsigned char>& bytes : contents) {
    for (std::size_t r = 0; r < bytes.size() / kRecord; ++r, ++row) {
      const unsigned char* record = &bytes[r * kRecord];
      samples.labels[row] = record[0];
      std::copy(record + 1, record + kRecord, images.row(row).data());
    }
    bytes = {};  // the file's records go as soon as they are copied
  }
  samples.bytes = std::make_shared<const ByteMatrix>(std::move(images));
  return samples;
}

Dataset LoadCifar10(OptionTable& options, const DataContext& context) {
  std::vector<std::filesystem::path> train, test;
  std::string name;
  if (options.Has("dir")) {
    for (const std::string_view key : {"train", "test"}) {
      if (options.Has(key)) {
        options.Fail(key, fmt::format("give either dir or the files (train, test), not both; {} "
                                      "is set with dir",
                                      key));
      }
    }
    // The batches as the CIFAR-10 archive ships them: data_batch_1.bin .. data_batch_5.bin.
    const std::filesystem::path dir = ResolveDataDir(options, "dir", context);
    int gap = 0;  // the first missing batch
    for (int b = 1; b <= 5; ++b) {
      const std::string batch = fmt::format("data_batch_{}.bin", b);
      std::optional<std::filesystem::path> file = FindDataFile(options, "dir", dir, batch);
      if (!file) {
        gap = gap == 0 ? b : gap;
        continue;
      }
      if (gap != 0) {
        options.Fail("dir", fmt::format("folder '{}' has {} but no data_batch_{}.bin; the batches "
                                        "must be consecutive from data_batch_1.bin",
                                        dir.string(), file->filename().string(), gap));
      }
      train.push_back(std::move(*file));
    }
    if (train.empty()) {
      options.Fail("dir",
                   fmt::format("folder '{}' has no data_batch_1.bin (or .bin.gz)", dir.string()));
    }
    if (auto file = FindDataFile(options, "dir", dir, "test_batch.bin")) test.push_back(*file);
    name = FolderName(dir);
  } else {
    if (!options.Has("train")) {
      options.Fail("dir", "missing the data: give dir = \"<folder>\" or train = [\"<file>\", ...]");
    }
    for (const std::string_view key : {"train", "test"}) {
      std::vector<std::filesystem::path>& files = key == "train" ? train : test;
      for (const std::string& given : options.GetStringList(key)) {
        files.push_back(ResolveDataPath(options, key, given, context));
      }
      if (files.empty() && options.Has(key)) {
        options.Fail(key, fmt::format("{} must name at least one file", key));
      }
    }
    name = train.front().filename().string();
  }
  Dataset data;
  data.classes = kClasses;
  data.train = ReadCifar10(train);
  data.description = fmt::format("{}: {} train", name, data.train.size());
  if (!test.empty()) {
    data.test = ReadCifar10(test);
    data.description += fmt::format(" + {} test", data.test->size());
  }
  data.description += " images 32x32x3";
  return data;
}

}  // namespace lemmalab
