// The IDX, CIFAR-10 and LIBSVM readers and their sources: round trips through files the tests
// write in the exact formats (plain and gzip), every rejection naming the file and where in it,
// and the real Fashion-MNIST that scripts/install-deps installs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/error.h"
#include "core/options.h"
#include "problems/dataset.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;
using testing::UserErrorOf;
using testing::WriteFile;
using testing::WriteGzipFile;

std::string BigEndian32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string Bytes(std::initializer_list<int> values) {
  std::string s;
  for (const int v : values) s.push_back(static_cast<char>(v));
  return s;
}

// Hard to compress, so that cutting a gzip file in half cuts its payload.
std::string NoiseBytes(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  for (char& c : s) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

std::string IdxImages(std::uint32_t n, std::uint32_t rows, std::uint32_t cols,
                      const std::string& pixels) {
  return BigEndian32(0x803) + BigEndian32(n) + BigEndian32(rows) + BigEndian32(cols) + pixels;
}

std::string IdxLabels(const std::string& labels) {
  return BigEndian32(0x801) + BigEndian32(static_cast<std::uint32_t>(labels.size())) + labels;
}

// A [data] table as a spec file would give it: key k on line k + 2 of s.toml.
OptionTable DataTable(std::initializer_list<std::pair<std::string, OptionValue>> entries) {
  OptionTable options("[data]", "s.toml:1:1");
  int line = 2;
  for (auto [key, value] : entries) {
    value.where = fmt::format("s.toml:{}:1", line++);
    options.Set(key, std::move(value));
  }
  return options;
}

OptionValue Text(std::string s) { return {std::move(s), ""}; }

OptionValue List(std::initializer_list<std::string> items) {
  OptionValue::Array array;
  for (const std::string& item : items) array.push_back({item, ""});
  return {std::move(array), ""};
}

std::string LoadError(OptionTable options, const std::filesystem::path& base) {
  return UserErrorOf([&] { LoadData(options, {0, base}); });
}

// ---------------------------------------------------------------------------------------------
// IDX

// Three 2x3 images with labels 2, 0, 1.
struct SmallIdx {
  TempDir dir;
  std::string pixels = Bytes({0, 1, 2, 3, 4, 5, 255, 254, 253, 252, 251, 250, 9, 8, 7, 6, 5, 4});
  std::string images = IdxImages(3, 2, 3, pixels);
  std::string labels = IdxLabels(Bytes({2, 0, 1}));
  SmallIdx() {
    WriteFile(dir / "images", images);
    WriteFile(dir / "labels", labels);
  }
  std::string Error(const std::string& image_file = "images",
                    const std::string& label_file = "labels", int classes = 3) const {
    return UserErrorOf([&] { ReadIdx(dir / image_file, dir / label_file, classes); });
  }
};

TEST(Idx, ReadsImagesRowMajorOnePerSamplePlainOrGzip) {
  SmallIdx idx;
  WriteGzipFile(idx.dir / "images.gz", idx.images);
  WriteGzipFile(idx.dir / "labels.gz", idx.labels);
  RowMatrix<double> expected(3, 6);
  expected << 0, 1, 2, 3, 4, 5,      //
      255, 254, 253, 252, 251, 250,  //
      9, 8, 7, 6, 5, 4;
  for (const auto& [images, labels] :
       {std::pair{"images", "labels"}, {"images.gz", "labels.gz"}, {"images.gz", "labels"}}) {
    const Samples s = ReadIdx(idx.dir / images, idx.dir / labels, 3);
    ASSERT_TRUE(s.holds_bytes());
    EXPECT_EQ(s.Dense(), expected) << images;
    EXPECT_EQ(s.labels, Eigen::Vector3i(2, 0, 1)) << labels;
  }
}

TEST(Idx, WrongMagicNumberNamesTheFileAndTheValue) {
  SmallIdx idx;
  WriteFile(idx.dir / "zip", "PK\x03\x04" + idx.images.substr(4));
  EXPECT_EQ(idx.Error("zip"),
            (idx.dir / "zip").string() +
                ": not an IDX file: magic number 0x504b0304 at byte 0, expected 0x00000803 "
                "(images: unsigned bytes, 3 dimensions)");
  WriteFile(idx.dir / "floats", BigEndian32(0xD03) + idx.images.substr(4));
  EXPECT_EQ(idx.Error("floats"),
            (idx.dir / "floats").string() +
                ": IDX element type 0x0d (32-bit float) in magic number 0x00000d03 is not "
                "supported; expected 0x00000803 (unsigned bytes, as in MNIST)");
  EXPECT_EQ(idx.Error("labels", "images"),
            (idx.dir / "labels").string() +
                ": magic number 0x00000801 declares 1 dimension(s), but IDX images have 3 (magic "
                "0x00000803); are images and labels swapped?");
}

TEST(Idx, ImpossibleImageSizesInACorruptHeaderAreAClearError) {
  // 0xFFFFFFFF x 0xFFFFFFFF pixels overflows a 64-bit product: the reader must judge the sizes
  // before multiplying them, and say which file is corrupt rather than run out of memory.
  SmallIdx idx;
  WriteFile(idx.dir / "huge", IdxImages(3, 0xFFFFFFFFu, 0xFFFFFFFFu, idx.pixels));
  EXPECT_EQ(idx.Error("huge"), (idx.dir / "huge").string() +
                                   ": the IDX header (bytes 8..15) declares images of "
                                   "4294967295x4294967295 pixels, more than the 16777216 pixels "
                                   "an image may have; is the file corrupt?");
  WriteFile(idx.dir / "many", IdxImages(3, 4097, 4096, idx.pixels));
  EXPECT_THAT(idx.Error("many"), HasSubstr("4097x4096 pixels"));
}

TEST(Idx, TruncatedFileNamesWhereTheDataEndsAndWhatTheHeaderPromised) {
  SmallIdx idx;
  const std::string cut = idx.images.substr(0, idx.images.size() - 5);
  WriteFile(idx.dir / "cut", cut);
  WriteGzipFile(idx.dir / "cut.gz", cut);
  for (const char* file : {"cut", "cut.gz"}) {
    EXPECT_EQ(idx.Error(file),
              (idx.dir / file).string() +
                  ": truncated: the data ends at byte 29 of the uncompressed stream; the header "
                  "promises 34 bytes (3 images of 2x3 after a 16-byte header)");
  }
  WriteFile(idx.dir / "short-header", idx.images.substr(0, 10));
  EXPECT_EQ(idx.Error("short-header"),
            (idx.dir / "short-header").string() +
                ": truncated: the data ends at byte 10 of the uncompressed stream; the 16-byte "
                "IDX header (3 dimension sizes) is incomplete");
  WriteFile(idx.dir / "short-labels", idx.labels.substr(0, 9));
  EXPECT_EQ(idx.Error("images", "short-labels"),
            (idx.dir / "short-labels").string() +
                ": truncated: the data ends at byte 9 of the uncompressed stream; the header "
                "promises 11 bytes (3 labels after an 8-byte header)");
}

TEST(Idx, GzipFileCutShortIsTruncation) {
  // 50 images of 20x20 noise: the compressed file is about as long as the data, so cutting it
  // in half stops the data halfway through the pixels.
  TempDir dir;
  WriteGzipFile(dir / "images.gz", IdxImages(50, 20, 20, NoiseBytes(50 * 400, 1)));
  WriteFile(dir / "labels", IdxLabels(std::string(50, '\1')));
  const std::string zipped = ReadFile(dir / "images.gz");
  WriteFile(dir / "half.gz", zipped.substr(0, zipped.size() / 2));
  EXPECT_THAT(UserErrorOf([&] { ReadIdx(dir / "half.gz", dir / "labels", 10); }),
              AllOf(HasSubstr((dir / "half.gz").string() + ": truncated: the data ends at byte "),
                    HasSubstr(" of the uncompressed stream (gzip stream cut off); the header "
                              "promises 20016 bytes (50 images of 20x20 after a 16-byte header)")));
  // All the data, but not the gzip trailer (CRC and length): still a truncated file.
  WriteFile(dir / "no-trailer.gz", zipped.substr(0, zipped.size() - 4));
  EXPECT_EQ(UserErrorOf([&] { ReadIdx(dir / "no-trailer.gz", dir / "labels", 10); }),
            (dir / "no-trailer.gz").string() +
                ": truncated: the gzip stream is cut off after byte 20016 of the uncompressed "
                "stream (unexpected end of file)");
  // A damaged CRC: zlib's check fails.
  std::string damaged = zipped;
  damaged[damaged.size() - 6] ^= 0x55;
  WriteFile(dir / "damaged.gz", damaged);
  EXPECT_EQ(UserErrorOf([&] { ReadIdx(dir / "damaged.gz", dir / "labels", 10); }),
            (dir / "damaged.gz").string() +
                ": corrupt file: its gzip checksum does not match the data it holds (zlib: "
                "incorrect data check); the file was damaged after it was compressed");
  // Garbled compressed data (the first block's type set to the invalid 3) is said so, with where
  // (both once said "read error after byte 0").
  std::string garbled = zipped;
  garbled[10] = static_cast<char>(garbled[10] | 0x06);
  WriteFile(dir / "garbled.gz", garbled);
  EXPECT_THAT(UserErrorOf([&] { ReadIdx(dir / "garbled.gz", dir / "labels", 10); }),
              HasSubstr((dir / "garbled.gz").string() +
                        ": corrupt gzip data near byte 11 of the compressed file (zlib: invalid "
                        "block type); 0 bytes of data were read before it"));
}

TEST(Idx, LabelOutOfRangeNamesSampleAndOffset) {
  SmallIdx idx;
  EXPECT_EQ(idx.Error("images", "labels", 2),
            (idx.dir / "labels").string() +
                ": label 2 of sample 0 (byte 8 of the uncompressed stream) is not below "
                "classes = 2");
  WriteFile(idx.dir / "nine", IdxLabels(Bytes({0, 1, 9})));
  EXPECT_THAT(idx.Error("images", "nine", 3),
              HasSubstr("nine: label 9 of sample 2 (byte 10 of the uncompressed stream)"));
}

TEST(Idx, TrailingBytesAndCountMismatchAreErrors) {
  SmallIdx idx;
  WriteFile(idx.dir / "long", idx.images + "xy");
  EXPECT_EQ(idx.Error("long"), (idx.dir / "long").string() +
                                   ": 2 unexpected byte(s) after the images the header declares, "
                                   "from byte 34 of the uncompressed stream");
  WriteGzipFile(idx.dir / "long-labels.gz", idx.labels + "z");
  EXPECT_THAT(idx.Error("images", "long-labels.gz"),
              HasSubstr("long-labels.gz: 1 unexpected byte(s) after the labels the header "
                        "declares, from byte 11 of the uncompressed stream"));
  WriteFile(idx.dir / "two", IdxLabels(Bytes({0, 1})));
  EXPECT_EQ(idx.Error("images", "two"), (idx.dir / "images").string() + " holds 3 images but " +
                                            (idx.dir / "two").string() + " holds 2 labels");
  WriteFile(idx.dir / "empty", "");
  EXPECT_THAT(idx.Error("empty"),
              HasSubstr("empty: truncated: the data ends at byte 0 of the uncompressed stream; "
                        "an IDX file starts with a 4-byte magic number (0x00000803 for images)"));
}

TEST(IdxSource, FindsTheMnistFileNamesInAFolderWithOrWithoutGz) {
  SmallIdx idx;
  const std::filesystem::path folder = idx.dir / "digits";
  std::filesystem::create_directory(folder);
  WriteGzipFile(folder / "train-images-idx3-ubyte.gz", idx.images);
  WriteFile(folder / "train-labels-idx1-ubyte", idx.labels);
  OptionTable train_only = DataTable({{"source", Text("idx")}, {"dir", Text("digits/")}});
  const Dataset a = LoadData(train_only, {0, idx.dir.path()});
  EXPECT_EQ(a.train.size(), 3);
  EXPECT_FALSE(a.test.has_value());
  EXPECT_EQ(a.classes, 10);
  EXPECT_TRUE(a.feature_names.empty());
  EXPECT_EQ(a.description, "digits: 3 train images 2x3");

  WriteFile(folder / "t10k-images-idx3-ubyte", IdxImages(1, 2, 3, Bytes({0, 0, 0, 0, 0, 51})));
  EXPECT_EQ(
      LoadError(DataTable({{"source", Text("idx")}, {"dir", Text("digits")}}), idx.dir.path()),
      "s.toml:3:1: [data]: folder '" + folder.string() +
          "' has t10k-images-idx3-ubyte but no t10k-labels-idx1-ubyte (or "
          "t10k-labels-idx1-ubyte.gz); the test set needs both files or neither");
  WriteGzipFile(folder / "t10k-labels-idx1-ubyte.gz", IdxLabels(Bytes({1})));
  OptionTable both =
      DataTable({{"source", Text("idx")}, {"dir", Text("digits")}, {"normalize", Text("pixels")}});
  const Dataset b = LoadData(both, {0, idx.dir.path()});
  ASSERT_TRUE(b.test.has_value());
  EXPECT_EQ(b.test->Dense()(0, 5), 0.2);
  EXPECT_EQ(b.train.Dense()(1, 0), 1.0);
  EXPECT_EQ(b.description, "digits: 3 train + 1 test images 2x3, pixels / 255");

  WriteFile(folder / "train-images-idx3-ubyte", idx.images);
  EXPECT_THAT(
      LoadError(DataTable({{"source", Text("idx")}, {"dir", Text("digits")}}), idx.dir.path()),
      HasSubstr("s.toml:3:1: [data]: '" + folder.string() +
                "' holds both train-images-idx3-ubyte and train-images-idx3-ubyte.gz; "
                "keep one"));
}

TEST(IdxSource, ExplicitFilesAndTheirErrorsNameTheOption) {
  SmallIdx idx;
  OptionTable files = DataTable({{"source", Text("idx")},
                                 {"train_images", Text("images")},
                                 {"train_labels", Text("labels")},
                                 {"classes", {std::int64_t{3}, ""}}});
  const Dataset data = LoadData(files, {0, idx.dir.path()});
  EXPECT_EQ(data.classes, 3);
  EXPECT_EQ(data.description, "images: 3 train images 2x3");

  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")},
                                 {"train_images", Text("images")},
                                 {"train_labels", Text("nope")}}),
                      idx.dir.path()),
            "s.toml:4:1: [data]: data file 'nope' not found (looked for " +
                (idx.dir / "nope").string() + ")");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")},
                                 {"train_images", Text("images")},
                                 {"train_labels", Text("labels")},
                                 {"test_labels", Text("labels")}}),
                      idx.dir.path()),
            "s.toml:5:1: [data]: test_labels needs test_images too: the test set needs both "
            "files or neither");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")},
                                 {"dir", Text(".")},
                                 {"train_images", Text("images")}}),
                      idx.dir.path()),
            "s.toml:4:1: [data]: give either dir or the files (train_images, ...), not both; "
            "train_images is set with dir");
  EXPECT_EQ(
      LoadError(DataTable({{"source", Text("idx")}, {"dir", Text("missing")}}), idx.dir.path()),
      "s.toml:3:1: [data]: data folder 'missing' not found (looked for " +
          (idx.dir / "missing").string() + ")");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")}, {"dir", Text(".")}}), idx.dir.path()),
            "s.toml:3:1: [data]: folder '" + (idx.dir / ".").string() +
                "' has no train-images-idx3-ubyte (or train-images-idx3-ubyte.gz)");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")}}), idx.dir.path()),
            "s.toml:1:1: [data]: missing the data: give dir = \"<folder>\" or train_images and "
            "train_labels");
  WriteFile(idx.dir / "tall", IdxImages(1, 3, 2, Bytes({1, 2, 3, 4, 5, 6})));
  WriteFile(idx.dir / "one", IdxLabels(Bytes({0})));
  EXPECT_EQ(LoadError(DataTable({{"source", Text("idx")},
                                 {"train_images", Text("images")},
                                 {"train_labels", Text("labels")},
                                 {"test_images", Text("tall")},
                                 {"test_labels", Text("one")}}),
                      idx.dir.path()),
            "s.toml:5:1: [data]: the test images are 3x2, the train images 2x3");
  EXPECT_THAT(LoadError(DataTable({{"source", Text("idx")},
                                   {"train_images", Text("images")},
                                   {"train_labels", Text("labels")},
                                   {"classes", {std::int64_t{300}, ""}}}),
                        idx.dir.path()),
              HasSubstr("s.toml:5:1: [data]: classes must be in [2, 256], got 300"));
}

// Whether every entry is k * scale for an integer k in [0, 255]; one pass, as the matrices are
// large.
bool AllBytesTimes(const RowMatrix<double>& x, double scale) {
  return std::all_of(x.data(), x.data() + x.size(), [scale](double v) {
    const double k = v / scale;
    return k >= 0 && k <= 255 && k == std::round(k);
  });
}

// The real data set, installed by scripts/install-deps (Debian package dataset-fashion-mnist).
TEST(IdxSource, ReadsFashionMnist) {
  const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << dir << " is missing: run scripts/install-deps (Debian package dataset-fashion-mnist)";
  const Samples raw =
      ReadIdx(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz", 10);
  const RowMatrix<double> raw_features = raw.Dense();
  EXPECT_EQ(raw_features.rows(), 10000);
  EXPECT_EQ(raw_features.cols(), 784);
  EXPECT_TRUE(AllBytesTimes(raw_features, 1.0));
  EXPECT_EQ(raw_features.maxCoeff(), 255);

  OptionTable options = DataTable(
      {{"source", Text("idx")}, {"dir", Text(dir.string())}, {"normalize", Text("pixels")}});
  const Dataset data = LoadData(options, {0, "/nonexistent"});
  EXPECT_EQ(data.description, "fashion-mnist: 60000 train + 10000 test images 28x28, pixels / 255");
  EXPECT_EQ(data.classes, 10);
  const RowMatrix<double> train = data.train.Dense();
  EXPECT_EQ(train.rows(), 60000);
  EXPECT_EQ(train.cols(), 784);
  ASSERT_TRUE(data.test.has_value());
  EXPECT_EQ(data.test->labels, raw.labels);
  // The same division as on the raw test set: pixels / 255 exactly.
  EXPECT_EQ(data.test->Dense(), raw_features / 255.0);
  EXPECT_GE(train.minCoeff(), 0.0);
  EXPECT_LE(train.maxCoeff(), 1.0);
  // k / 255 divided by (1 / 255) gives k back exactly for every byte k.
  EXPECT_TRUE(AllBytesTimes(train, 1 / 255.0));
  for (const Samples* s : {&data.train, &*data.test}) {
    const std::int64_t per_class = s->size() / 10;
    for (int c = 0; c < 10; ++c) EXPECT_EQ((s->labels.array() == c).count(), per_class) << c;
  }
}

// ---------------------------------------------------------------------------------------------
// CIFAR-10

// A record whose red plane is 10, green 20 and blue 30, but for three marked pixels.
std::string CifarRecord(int label) {
  std::string r(3073, '\0');
  r[0] = static_cast<char>(label);
  std::fill(r.begin() + 1, r.begin() + 1025, 10);
  std::fill(r.begin() + 1025, r.begin() + 2049, 20);
  std::fill(r.begin() + 2049, r.end(), 30);
  r[1 + 1] = 1;                    // red, row 0, column 1
  r[1 + 1024 + 32 * 1 + 0] = 2;    // green, row 1, column 0
  r[1 + 2048 + 32 * 31 + 31] = 3;  // blue, row 31, column 31
  return r;
}

TEST(Cifar10, KeepsTheRecordOrderRedGreenBluePlanesRowMajor) {
  TempDir dir;
  WriteFile(dir / "a.bin", CifarRecord(7) + CifarRecord(0));
  WriteGzipFile(dir / "b.bin.gz", CifarRecord(9));
  const Samples s = ReadCifar10({dir / "a.bin", dir / "b.bin.gz"});
  ASSERT_TRUE(s.holds_bytes());
  const RowMatrix<double> features = s.Dense();
  ASSERT_EQ(features.rows(), 3);
  ASSERT_EQ(features.cols(), 3072);
  EXPECT_EQ(s.labels, Eigen::Vector3i(7, 0, 9));
  for (Eigen::Index i = 0; i < 3; ++i) {
    EXPECT_EQ(features(i, 0), 10);
    EXPECT_EQ(features(i, 1), 1);
    EXPECT_EQ(features(i, 1023), 10);
    EXPECT_EQ(features(i, 1024), 20);
    EXPECT_EQ(features(i, 1056), 2);
    EXPECT_EQ(features(i, 2048), 30);
    EXPECT_EQ(features(i, 3071), 3);
    EXPECT_EQ(features.row(i).sum(), 1023 * 10 + 1 + 1023 * 20 + 2 + 1023 * 30 + 3);
  }
}

TEST(Cifar10, TruncatedLabelOutOfRangeAndEmptyFilesAreErrors) {
  TempDir dir;
  const std::string cut = CifarRecord(1) + CifarRecord(2) + std::string(100, '\5');
  WriteFile(dir / "cut.bin", cut);
  WriteGzipFile(dir / "cut.bin.gz", cut);
  for (const char* file : {"cut.bin", "cut.bin.gz"}) {
    EXPECT_EQ(UserErrorOf([&] { ReadCifar10({dir / file}); }),
              (dir / file).string() +
                  ": truncated: the data ends at byte 6246 of the uncompressed stream; the "
                  "incomplete record 2 starts at byte 6146 (CIFAR-10 records are 3073 bytes: 1 "
                  "label byte + 3072 pixel bytes)");
  }
  std::string records;
  for (int i = 0; i < 20; ++i) records += CifarRecord(i % 10);
  for (int i = 0; i < 20; ++i)
    std::copy_n(NoiseBytes(3072, i).begin(), 3072, &records[3073 * i + 1]);
  WriteGzipFile(dir / "whole.bin.gz", records);
  const std::string zipped = ReadFile(dir / "whole.bin.gz");
  WriteFile(dir / "half.bin.gz", zipped.substr(0, zipped.size() / 2));
  EXPECT_THAT(UserErrorOf([&] { ReadCifar10({dir / "half.bin.gz"}); }),
              AllOf(HasSubstr("half.bin.gz: truncated: the gzip stream is cut off after byte "),
                    HasSubstr(" of the uncompressed stream (unexpected end of file)")));

  WriteFile(dir / "label.bin", CifarRecord(3) + CifarRecord(10));
  EXPECT_EQ(UserErrorOf([&] {
              ReadCifar10({dir / "a.bin", dir / "label.bin"});
            }),
            (dir / "a.bin").string() + ": cannot open for reading: No such file or directory");
  EXPECT_EQ(UserErrorOf([&] { ReadCifar10({dir / "label.bin"}); }),
            (dir / "label.bin").string() +
                ": record 1 (byte 3073 of the uncompressed stream) has label 10; CIFAR-10 labels "
                "are 0..9");
  WriteFile(dir / "empty.bin", "");
  EXPECT_EQ(UserErrorOf([&] { ReadCifar10({dir / "empty.bin"}); }),
            (dir / "empty.bin").string() +
                ": empty file, expected CIFAR-10 records of 3073 bytes (1 label byte + 3072 pixel "
                "bytes)");
}

TEST(Cifar10Source, ReadsConsecutiveBatchesFromAFolderOrListedFiles) {
  TempDir dir;
  const std::filesystem::path folder = dir / "cifar-10-batches-bin";
  std::filesystem::create_directory(folder);
  WriteFile(folder / "data_batch_1.bin", CifarRecord(1));
  WriteGzipFile(folder / "data_batch_2.bin.gz", CifarRecord(2) + CifarRecord(3));
  WriteFile(folder / "test_batch.bin", CifarRecord(4));
  WriteFile(folder / "batches.meta.txt", "airplane\n");
  OptionTable options =
      DataTable({{"source", Text("cifar10")}, {"dir", Text("cifar-10-batches-bin")}});
  const Dataset data = LoadData(options, {0, dir.path()});
  EXPECT_EQ(data.train.labels, Eigen::Vector3i(1, 2, 3));
  ASSERT_TRUE(data.test.has_value());
  EXPECT_EQ(data.test->labels, Eigen::VectorXi::Constant(1, 4));
  EXPECT_EQ(data.classes, 10);
  EXPECT_EQ(data.description, "cifar-10-batches-bin: 3 train + 1 test images 32x32x3");

  WriteFile(folder / "data_batch_4.bin", CifarRecord(5));
  EXPECT_EQ(
      LoadError(DataTable({{"source", Text("cifar10")}, {"dir", Text("cifar-10-batches-bin")}}),
                dir.path()),
      "s.toml:3:1: [data]: folder '" + folder.string() +
          "' has data_batch_4.bin but no data_batch_3.bin; the batches must be consecutive "
          "from data_batch_1.bin");

  OptionTable listed = DataTable({{"source", Text("cifar10")},
                                  {"train", List({"cifar-10-batches-bin/data_batch_4.bin",
                                                  "cifar-10-batches-bin/data_batch_1.bin"})},
                                  {"test", List({folder.string() + "/test_batch.bin"})}});
  const Dataset listed_data = LoadData(listed, {0, dir.path()});
  EXPECT_EQ(listed_data.train.labels, Eigen::Vector2i(5, 1));
  EXPECT_EQ(listed_data.description, "data_batch_4.bin: 2 train + 1 test images 32x32x3");

  EXPECT_EQ(LoadError(DataTable({{"source", Text("cifar10")},
                                 {"train", List({"cifar-10-batches-bin/data_batch_1.bin",
                                                 "data_batch_9.bin"})}}),
                      dir.path()),
            "s.toml:3:1: [data]: data file 'data_batch_9.bin' not found (looked for " +
                (dir / "data_batch_9.bin").string() + ")");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("cifar10")}, {"train", List({})}}), dir.path()),
            "s.toml:3:1: [data]: train must name at least one file");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("cifar10")}, {"dir", Text(".")}}), dir.path()),
            "s.toml:3:1: [data]: folder '" + (dir / ".").string() +
                "' has no data_batch_1.bin (or .bin.gz)");
}

// ---------------------------------------------------------------------------------------------
// LIBSVM

std::string LibsvmError(const std::filesystem::path& path, std::int64_t features = 0) {
  return UserErrorOf([&] { ReadLibsvm(path, features); });
}

TEST(Libsvm, ReadsSparseLinesDenselyPlainOrGzip) {
  TempDir dir;
  // Comments, a blank line, tabs, CRLF, SVMlight's qid, "+1", and no newline at the end.
  const std::string text =
      "# a9a-like\n"
      "+1 1:0.5 3:-2 # first\n"
      "\n"
      "-1\tqid:7\t2:1e-3 4:+4\r\n"
      "   # only a comment\n"
      "1 4:1.25";
  WriteFile(dir / "t.svm", text);
  WriteGzipFile(dir / "t.svm.gz", text);
  RowMatrix<double> expected(3, 4);
  expected << 0.5, 0, -2, 0,  //
      0, 1e-3, 0, 4,          //
      0, 0, 0, 1.25;
  for (const char* file : {"t.svm", "t.svm.gz"}) {
    const Samples s = ReadLibsvm(dir / file, 0);
    EXPECT_EQ(s.features, expected) << file;
    EXPECT_EQ(s.labels, Eigen::Vector3i(1, 0, 1)) << file;
  }
  const Samples wide = ReadLibsvm(dir / "t.svm", 6);
  EXPECT_EQ(wide.features.cols(), 6);
  EXPECT_EQ(wide.features.leftCols(4), expected);
  EXPECT_EQ(wide.features.rightCols(2), RowMatrix<double>::Zero(3, 2));

  WriteFile(dir / "zero-one.svm", "0 2:1\n1 1:3\n0\n");
  const Samples zero_one = ReadLibsvm(dir / "zero-one.svm", 0);
  EXPECT_EQ(zero_one.labels, Eigen::Vector3i(0, 1, 0));
  EXPECT_EQ(zero_one.features.row(1), Eigen::RowVector2d(3, 0));
}

TEST(Libsvm, MalformedLinesNameFileLineAndToken) {
  TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"+1 0:1", ":2: token '0:1': index 0; indices start at 1"},
      {"+1 3:1 2:1", ":2: token '2:1': index 2 after index 3; indices must be strictly ascending"},
      {"+1 2:1 2:5", ":2: token '2:5': index 2 after index 2; indices must be strictly ascending"},
      {"+1 9:1", ":2: token '9:1': index 9 exceeds features = 8"},
      {"+1 2:abc", ":2: token '2:abc': value 'abc' is not a finite number"},
      {"+1 2:nan", ":2: token '2:nan': value 'nan' is not a finite number"},
      {"+1 2:inf", ":2: token '2:inf': value 'inf' is not a finite number"},
      {"+1 2:", ":2: token '2:': value '' is not a finite number"},
      {"+1 x:1", ":2: token 'x:1': index 'x' is not a positive integer"},
      {"+1 -3:1", ":2: token '-3:1': index '-3' is not a positive integer"},
      {"+1 7", ":2: token '7' is not index:value"},
      {"2 1:1", ":2: label '2': labels must all be -1/+1 or all 0/1 (binary classification)"},
      {"0.5 1:1", ":2: label '0.5': labels must all be -1/+1 or all 0/1"},
      {"yes 1:1", ":2: label 'yes': labels must all be -1/+1 or all 0/1"},
      {"0 1:1",
       ":2: label '0' mixes conventions: label -1 on line 1 and label 0 on line 2; "
       "labels must all be -1/+1 or all 0/1"},
  };
  for (const auto& [line, message] : cases) {
    WriteFile(dir / "bad.svm", "-1 1:1\n" + line + "\n+1 1:1\n");
    EXPECT_THAT(LibsvmError(dir / "bad.svm", 8), HasSubstr((dir / "bad.svm").string() + message))
        << line;
  }
  WriteFile(dir / "nul.svm", std::string("+1 1:1\n-1 1:\0\n", 14));
  EXPECT_EQ(LibsvmError(dir / "nul.svm"),
            (dir / "nul.svm").string() + ":2: NUL byte: not a text file");
}

TEST(Libsvm, EmptyTruncatedAndTooLargeFilesAreErrors) {
  TempDir dir;
  WriteFile(dir / "empty.svm", "# nothing\n\n");
  EXPECT_EQ(LibsvmError(dir / "empty.svm"),
            (dir / "empty.svm").string() + ": no samples (only blank or comment lines)");
  WriteFile(dir / "labels.svm", "+1\n-1\n");
  EXPECT_EQ(LibsvmError(dir / "labels.svm"),
            (dir / "labels.svm").string() + ": no features: no line has an index:value pair");

  // Long enough that half the compressed file ends in the middle of the text.
  std::string text;
  for (int i = 0; i < 4000; ++i)
    text += fmt::format("{} 1:{} 7:{}\n", i % 2 ? "+1" : "-1", i, 3 * i + 1);
  WriteGzipFile(dir / "long.svm.gz", text);
  const std::string zipped = ReadFile(dir / "long.svm.gz");
  WriteFile(dir / "cut.svm.gz", zipped.substr(0, zipped.size() / 2));
  EXPECT_THAT(
      LibsvmError(dir / "cut.svm.gz"),
      AllOf(HasSubstr((dir / "cut.svm.gz").string() + ": truncated: the data ends at byte "),
            HasSubstr(" of the uncompressed stream (gzip stream cut off); lines after "
                      "line ")));
  EXPECT_EQ(ReadLibsvm(dir / "long.svm.gz", 0).size(), 4000);

  // 1 x 600 million doubles is 4.5 GiB: refused before any allocation.
  WriteFile(dir / "wide.svm", "+1 600000000:1\n");
  EXPECT_EQ(LibsvmError(dir / "wide.svm"),
            (dir / "wide.svm").string() +
                ": 1 samples x 600000000 features would take 4.5 GiB as dense doubles, more than "
                "the 4 GiB lemmalab allows");
}

TEST(LibsvmSource, BothSetsGetTheWiderWidthUnlessFeaturesIsGiven) {
  TempDir dir;
  WriteFile(dir / "train.svm", "+1 1:1 3:3\n-1 2:2\n");
  WriteFile(dir / "test.svm", "-1 5:5\n");
  OptionTable options = DataTable(
      {{"source", Text("libsvm")}, {"path", Text("train.svm")}, {"test_path", Text("test.svm")}});
  const Dataset data = LoadData(options, {0, dir.path()});
  EXPECT_EQ(data.classes, 2);
  EXPECT_EQ(data.num_features(), 5);
  EXPECT_EQ(data.test->features.cols(), 5);
  EXPECT_EQ(data.test->features(0, 4), 5);
  EXPECT_EQ(data.train.labels, Eigen::Vector2i(1, 0));
  EXPECT_EQ(data.description, "train.svm (libsvm: 2 samples x 5 features, 1 test samples)");

  OptionTable fixed = DataTable({{"source", Text("libsvm")},
                                 {"path", Text("train.svm")},
                                 {"features", {std::int64_t{7}, ""}}});
  EXPECT_EQ(LoadData(fixed, {0, dir.path()}).num_features(), 7);

  EXPECT_EQ(LoadError(DataTable({{"source", Text("libsvm")},
                                 {"path", Text("train.svm")},
                                 {"test_path", Text("test.svm")},
                                 {"features", {std::int64_t{4}, ""}}}),
                      dir.path()),
            (dir / "test.svm").string() + ":1: token '5:5': index 5 exceeds features = 4");
  EXPECT_EQ(LoadError(DataTable({{"source", Text("libsvm")},
                                 {"path", Text("train.svm")},
                                 {"test_path", Text("nope.svm")}}),
                      dir.path()),
            "s.toml:4:1: [data]: data file 'nope.svm' not found (looked for " +
                (dir / "nope.svm").string() + ")");
  EXPECT_THAT(LoadError(DataTable({{"source", Text("libsvm")},
                                   {"path", Text("train.svm")},
                                   {"features", {std::int64_t{0}, ""}}}),
                        dir.path()),
              HasSubstr("s.toml:4:1: [data]: features must be in [1, "));
}

}  // namespace
}  // namespace lemmalab
