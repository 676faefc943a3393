// CIFAR-10 binary reader (Krizhevsky 2009, "binary version"): records of 1 label byte (0..9) and
// 3072 pixel bytes, the red, green and blue 32x32 planes one after another, each row-major.
// Features keep that order: feature 1024 * channel + 32 * row + column.
#include <fmt/format.h>

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

// Records read at once: 96 KiB, 32 of a batch file's 10 000.
constexpr std::size_t kChunkRecords = 32;

// The samples of one or more files, in storage that grows as records arrive.
struct Records {
  ByteMatrix images{0, static_cast<Eigen::Index>(kPixels)};  // rows() is the capacity
  Eigen::VectorXi labels;
  std::int64_t count = 0;
};

// Appends the records of `path` to `out`, each checked as it arrives: its label, and the memory
// all records so far take, so that a file that inflates past the limit is refused at the first
// record beyond it.
void ReadRecords(const std::filesystem::path& path, Records& out, const MemoryLimit& memory) {
  GzipReader in(path);
  constexpr double kRecordBytes = kPixels + 4;  // what a sample holds: pixels and an int label
  std::vector<unsigned char> chunk(kChunkRecords * kRecord);
  for (std::int64_t record = 0;;) {
    const std::size_t got = in.Read(chunk.data(), chunk.size());
    for (std::size_t k = 0; k < got / kRecord; ++k, ++record) {
      const unsigned char* bytes = &chunk[k * kRecord];
      const std::uint64_t offset = static_cast<std::uint64_t>(record) * kRecord;
      if (const int label = bytes[0]; label >= kClasses) {
        throw UserError(fmt::format(
            "{}: record {} (byte {} of the uncompressed stream) has label {}; CIFAR-10 labels "
            "are 0..9",
            in.file(), record, offset, label));
      }
      const std::int64_t rows = out.count + 1;
      ReserveSamples(
          out.images, out.labels, rows, kRecordBytes, memory,
          [&] {
            return fmt::format("{}: record {} (byte {} of the uncompressed stream)", in.file(),
                               record, offset);
          },
          [&] {
            return fmt::format("{} records x ({} pixel bytes + a 4-byte label)", rows, kPixels);
          });
      out.labels[out.count] = bytes[0];
      std::copy(bytes + 1, bytes + kRecord, out.images.row(out.count).data());
      ++out.count;
    }
    if (got == chunk.size()) continue;
    if (in.cut_off()) in.FailCutOff();
    if (in.offset() == 0) {
      throw UserError(fmt::format(
          "{}: empty file, expected CIFAR-10 records of {} bytes (1 label byte + {} pixel bytes)",
          in.file(), kRecord, kPixels));
    }
    if (got % kRecord != 0) {
      in.FailTruncated(fmt::format(
          "the incomplete record {} starts at byte {} (CIFAR-10 records are {} bytes: 1 label "
          "byte + {} pixel bytes)",
          record, static_cast<std::uint64_t>(record) * kRecord, kRecord, kPixels));
    }
    return;
  }
}

}  // namespace

Samples ReadCifar10(const std::vector<std::filesystem::path>& files, const MemoryLimit& memory) {
  if (files.empty()) throw UserError("CIFAR-10: no files to read");
  Records records;
  for (const std::filesystem::path& file : files) ReadRecords(file, records, memory);
  // Shrinking gives the unused capacity back in place.
  records.images.conservativeResize(records.count, Eigen::NoChange);
  records.labels.conservativeResize(records.count);
  Samples samples;
  samples.labels = std::move(records.labels);
  samples.bytes = std::make_shared<const ByteMatrix>(std::move(records.images));
  return samples;
}

Dataset LoadCifar10(OptionTable& options, const DataContext& context) {
  // Every option first, then the files.
  options.Describe("dir",
                   "a string: a folder with data_batch_1.bin .. 5 and test_batch.bin as "
                   "CIFAR-10 ships them (or .gz); or give the files");
  const bool from_dir = options.Has("dir");
  if (from_dir) options.RequireString("dir");
  const std::vector<std::string> train_given = options.GetStringList("train");
  const std::vector<std::string> test_given = options.GetStringList("test");
  for (const std::string_view key : {"train", "test"}) {
    if (from_dir && options.Has(key)) {
      options.Fail(key, fmt::format("give either dir or the files (train, test), not both; {} "
                                    "is set with dir",
                                    key));
    }
    if (options.Has(key) && (key == "train" ? train_given : test_given).empty()) {
      options.Fail(key, fmt::format("{} must name at least one file", key));
    }
  }
  if (!from_dir && train_given.empty()) {
    options.Fail("dir", "missing the data: give dir = \"<folder>\" or train = [\"<file>\", ...]");
  }
  if (context.options_only) return {};

  std::vector<std::filesystem::path> train, test;
  std::string name;
  if (from_dir) {
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
    for (const std::string& given : train_given) {
      train.push_back(ResolveDataPath(options, "train", given, context));
    }
    for (const std::string& given : test_given) {
      test.push_back(ResolveDataPath(options, "test", given, context));
    }
    name = train.front().filename().string();
  }
  Dataset data;
  data.classes = kClasses;
  data.train = ReadCifar10(train, context.memory);
  data.description = fmt::format("{}: {} train", name, data.train.size());
  if (!test.empty()) {
    data.test = ReadCifar10(test, TestSetLimit(context.memory, data.train));
    data.description += fmt::format(" + {} test", data.test->size());
  }
  data.description += " images 32x32x3";
  return data;
}

}  // namespace lemmalab
