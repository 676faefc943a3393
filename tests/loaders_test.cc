// The IDX, CIFAR-10 and LIBSVM readers and their sources: round trips through files the tests
// write in the exact formats (plain and gzip), every rejection naming the file and where in it,
// the real Fashion-MNIST that scripts/install-deps installs, and the hostile files of issue 21
// (every reader, CSV included), each refused within a few MiB of memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <new>
#include <utility>

#include "core/error.h"
#include "core/options.h"
#include "core/resources.h"
#include "problems/dataset.h"
#include "tests/test_util.h"

// AddressSanitizer and ThreadSanitizer reserve their heap and shadow memory up front, so a bound
// on the address space (RLIMIT_AS) neither holds their allocations back nor leaves them room.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LEMMALAB_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LEMMALAB_SANITIZER_HEAP 1
#endif
#endif

namespace lemmalab {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;
using testing::UserErrorOf;
using testing::WriteFile;
using testing::WriteGzipFile;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The address space this process has mapped (VmSize), in bytes.
std::size_t MappedBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// What UserErrorOf(f) says, with f run in a child process that may map at most `budget` bytes
// more than it starts with; "out of memory" when f tried to allocate beyond that. This is how a
// test shows that a hostile file is refused before the allocation it asks for rather than after
// (RLIMIT_AS counts what is allocated, touched or not). Under a sanitizer that reserves its heap
// (above), f runs here without the bound.
std::string UserErrorWithin(std::size_t budget, const std::function<void()>& f) {
#ifdef LEMMALAB_SANITIZER_HEAP
  (void)budget;
  return UserErrorOf(f);
#else
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    const rlim_t most = MappedBytes() + budget;
    const rlimit bound{most, most};
    std::string message = "(setrlimit failed)";
    if (setrlimit(RLIMIT_AS, &bound) == 0) {
      try {
        f();
        message = "(no error)";
      } catch (const UserError& e) {
        message = e.what();
      } catch (const std::bad_alloc&) {
        message = "out of memory";
      } catch (const std::exception& e) {
        message = std::string("unexpected exception: ") + e.what();
      }
    }
    for (std::size_t done = 0; done < message.size();) {
      const ssize_t wrote = write(fds[1], message.data() + done, message.size() - done);
      if (wrote <= 0) break;
      done += static_cast<std::size_t>(wrote);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, got);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return fmt::format("(child ended by signal {})", WTERMSIG(status));
  return message;
#endif
}

MemoryLimit Limit(double bytes) { return MemoryLimit::Given(bytes, "--max-memory"); }

std::string CsvErrorWithin(const std::filesystem::path& path, const MemoryLimit& memory) {
  return UserErrorOf([&] { ReadCsv(path, "", memory); });
}

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

std::string LibsvmError(const std::filesystem::path& path, std::int64_t features = 0,
                        const MemoryLimit& memory = MemoryLimit::Machine()) {
  return UserErrorOf([&] { ReadLibsvm(path, features, memory); });
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

// ---------------------------------------------------------------------------------------------
// Hostile files (issue 21): each is refused at the first byte that proves it, with a message
// naming the file, where, the value and the rule, and within a few MiB of memory.

TEST(Loaders, TheMemoryBoundOfTheseTestsCatchesALargeAllocation) {
#ifdef LEMMALAB_SANITIZER_HEAP
  GTEST_SKIP() << "no address-space bound under AddressSanitizer or ThreadSanitizer";
#endif
  EXPECT_EQ(UserErrorWithin(16 * kMiB, [] { std::vector<char> big(256 * kMiB, 1); }),
            "out of memory");
  EXPECT_EQ(UserErrorWithin(16 * kMiB, [] { throw UserError("refused"); }), "refused");
}

TEST(Libsvm, OneHugeIndexIsRefusedOnItsLineBeforeTheDenseMatrixIsMade) {
  // Finding 1: 23 bytes asking for 2 x 50 000 000 doubles (763 MiB) once took 1.5-3 GB.
  TempDir dir;
  WriteFile(dir / "huge.svm", "-1 1:0.5\n+1 50000000:1\n");
  EXPECT_EQ(
      UserErrorWithin(16 * kMiB, [&] { ReadLibsvm(dir / "huge.svm", 0, Limit(256.0 * kMiB)); }),
      (dir / "huge.svm").string() +
          ":2: index 50000000 needs 763 MiB (2 samples x 50000000 features x 8 bytes as "
          "dense doubles, and 56 B for the 2 index:value pairs and 2 labels held until the "
          "width is known), more than --max-memory 256 MiB allows");
  // The same as gzip, and with the index on the first line of a long file: refused there.
  std::string text = "+1 50000000:1\n";
  for (int i = 0; i < 1000; ++i) text += "-1 1:1\n";
  WriteGzipFile(dir / "first.svm.gz", text);
  EXPECT_EQ(
      UserErrorWithin(16 * kMiB, [&] { ReadLibsvm(dir / "first.svm.gz", 0, Limit(64.0 * kMiB)); }),
      (dir / "first.svm.gz").string() +
          ":1: index 50000000 needs 381 MiB (1 samples x 50000000 features x 8 bytes as "
          "dense doubles, and 28 B for the 1 index:value pairs and 1 labels held until the "
          "width is known), more than --max-memory 64.0 MiB allows");
}

TEST(Libsvm, SamplesArePassedAgainstTheLimitAsTheyArrive) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20; ++i) text += "+1 10:1\n";
  WriteFile(dir / "rows.svm", text);
  // Sample k needs 10 k doubles, its label and end (12 bytes) and the pairs before it (16 bytes
  // each): the 10th is the first past 1000 bytes.
  EXPECT_EQ(LibsvmError(dir / "rows.svm", 0, Limit(1000)),
            (dir / "rows.svm").string() +
                ":10: sample 10 needs 1.04 KiB (10 samples x 10 features x 8 bytes as dense "
                "doubles, and 264 B for the 9 index:value pairs and 10 labels held until the width "
                "is known), more than --max-memory 1000 B allows");
  EXPECT_EQ(ReadLibsvm(dir / "rows.svm", 0, Limit(3000)).size(), 20);
  // A fixed width counts from the first sample.
  EXPECT_THAT(LibsvmError(dir / "rows.svm", std::int64_t{1} << 40),
              HasSubstr(":1: sample 1 needs 8.00 TiB (1 samples x 1099511627776 features"));
}

TEST(Libsvm, TheTestSetIsCountedWithTheTrainingSet) {
  TempDir dir;
  WriteFile(dir / "train.svm", "+1 1:1 3:3\n-1 2:2\n");
  WriteFile(dir / "test.svm", "-1 5000000:1\n");
  OptionTable options = DataTable(
      {{"source", Text("libsvm")}, {"path", Text("train.svm")}, {"test_path", Text("test.svm")}});
  EXPECT_EQ(UserErrorWithin(16 * kMiB,
                            [&] {
                              LoadData(options, {0, dir.path(), Limit(kMiB)});
                            }),
            (dir / "test.svm").string() +
                ":1: index 5000000 needs 114 MiB (3 samples (1 here, 2 in " +
                (dir / "train.svm").string() +
                ") x 5000000 features x 8 bytes as dense doubles, and 100 B for the 4 "
                "index:value pairs and 3 labels held until the width is known), more than "
                "--max-memory 1.00 MiB allows");
}

TEST(Libsvm, ARunawayTokenIsRefusedPastOneKibibyte) {
  TempDir dir;
  WriteFile(dir / "long.svm", "+1 1:" + std::string(2000, '1') + "\n");
  EXPECT_EQ(LibsvmError(dir / "long.svm"),
            (dir / "long.svm").string() +
                ":1: token '1:11111111111111111111111111111111111111...' runs past 1024 bytes; "
                "labels and index:value pairs are a few dozen characters (is this a LIBSVM text "
                "file?)");
  // 16 MiB of digits in a gzip file of a few KiB: refused after 1 KiB, not after inflating.
  WriteGzipFile(dir / "bomb.svm.gz", "-1 " + std::string(16 * kMiB, '7'));
  EXPECT_THAT(UserErrorWithin(8 * kMiB, [&] { ReadLibsvm(dir / "bomb.svm.gz", 0); }),
              HasSubstr("bomb.svm.gz:1: token '7777777777777777777777777777777777777777...' runs "
                        "past 1024 bytes"));
}

TEST(Idx, HeaderCountsAreComparedBeforeAnyBodyIsRead) {
  // Finding 2: a labels header claiming 5 x 10^8 labels allocated 500 MB before failing.
  SmallIdx idx;
  WriteFile(idx.dir / "claims", BigEndian32(0x801) + BigEndian32(500000000) + Bytes({1, 2, 0}));
  EXPECT_EQ(UserErrorWithin(16 * kMiB, [&] { ReadIdx(idx.dir / "images", idx.dir / "claims", 3); }),
            (idx.dir / "images").string() + " holds 3 images but " + (idx.dir / "claims").string() +
                " holds 500000000 labels");
}

TEST(Idx, AHeaderClaimBeyondTheLimitIsRefusedAndOneWithinItAllocatesOnlyWhatArrives) {
  TempDir dir;
  WriteFile(dir / "images", IdxImages(500000000, 1, 1, Bytes({1, 2, 3})));
  WriteFile(dir / "labels", BigEndian32(0x801) + BigEndian32(500000000) + Bytes({1, 2, 0}));
  EXPECT_EQ(
      UserErrorWithin(16 * kMiB,
                      [&] { ReadIdx(dir / "images", dir / "labels", 3, Limit(1.0 * (1 << 30))); }),
      (dir / "images").string() +
          ": the IDX header (bytes 4..15) declares 500000000 images of 1x1 needs 2.33 GiB "
          "(500000000 images x (1 pixel bytes + a 4-byte label)), more than --max-memory "
          "1.00 GiB allows");
  // Within a limit the claim passes, and the truncated labels fail with what arrived held.
  EXPECT_EQ(
      UserErrorWithin(16 * kMiB, [&] { ReadIdx(dir / "images", dir / "labels", 3, Limit(1e13)); }),
      (dir / "labels").string() +
          ": truncated: the data ends at byte 11 of the uncompressed stream; the header "
          "promises 500000008 bytes (500000000 labels after an 8-byte header)");
  // 200 000 images of 28x28 (157 MB) promised, 1000 bytes given, plain and gzip.
  WriteFile(dir / "many-labels", IdxLabels(std::string(200000, '\1')));
  const std::string images = IdxImages(200000, 28, 28, NoiseBytes(1000, 3));
  WriteFile(dir / "few-images", images);
  WriteGzipFile(dir / "few-images.gz", images);
  for (const char* file : {"few-images", "few-images.gz"}) {
    EXPECT_EQ(UserErrorWithin(16 * kMiB,
                              [&] { ReadIdx(dir / file, dir / "many-labels", 3, Limit(1e13)); }),
              (dir / file).string() +
                  ": truncated: the data ends at byte 1016 of the uncompressed stream; the header "
                  "promises 156800016 bytes (200000 images of 28x28 after a 16-byte header)");
  }
}

TEST(IdxSource, TheTestSetIsCountedWithTheTrainingSet) {
  SmallIdx idx;
  // 3 training images of 6 pixels take 30 bytes with their labels: 39 bytes leave 9 for the
  // test set, less than its one image needs (10).
  WriteFile(idx.dir / "test-images", IdxImages(1, 2, 3, Bytes({0, 0, 0, 0, 0, 51})));
  WriteFile(idx.dir / "test-labels", IdxLabels(Bytes({1})));
  OptionTable options = DataTable({{"source", Text("idx")},
                                   {"train_images", Text("images")},
                                   {"train_labels", Text("labels")},
                                   {"test_images", Text("test-images")},
                                   {"test_labels", Text("test-labels")}});
  EXPECT_EQ(UserErrorOf([&] {
              LoadData(options, {0, idx.dir.path(), Limit(39)});
            }),
            (idx.dir / "test-images").string() +
                ": the IDX header (bytes 4..15) declares 1 images of 2x3 needs 10 B (1 images x "
                "(6 pixel bytes + a 4-byte label)), more than --max-memory 39 B, less the 30 B the "
                "training set holds allows");
}

TEST(Cifar10, ADecompressionBombIsRefusedAtTheFirstRecordPastTheLimit) {
  // Finding 3: a small .bin.gz inflating far beyond its size was inflated whole before any
  // check. 16 MiB of zeros are 5459 valid records (and a cut one); 1 MB holds 325 of them.
  TempDir dir;
  WriteGzipFile(dir / "bomb.bin.gz", std::string(16 * kMiB, '\0'));
  EXPECT_LT(ReadFile(dir / "bomb.bin.gz").size(), 100000);
  EXPECT_EQ(UserErrorWithin(8 * kMiB, [&] { ReadCifar10({dir / "bomb.bin.gz"}, Limit(1e6)); }),
            (dir / "bomb.bin.gz").string() +
                ": record 325 (byte 998725 of the uncompressed stream) needs 979 KiB (326 records "
                "x (3072 pixel bytes + a 4-byte label)), more than --max-memory 977 KiB allows");
  // Every file of a set counts: the second file's first record is the one refused.
  WriteFile(dir / "one.bin", CifarRecord(1));
  EXPECT_EQ(UserErrorOf([&] {
              ReadCifar10({dir / "one.bin", dir / "one.bin"}, Limit(6000));
            }),
            (dir / "one.bin").string() +
                ": record 0 (byte 0 of the uncompressed stream) needs 6.01 KiB (2 records x (3072 "
                "pixel bytes + a 4-byte label)), more than --max-memory 5.86 KiB allows");
  EXPECT_EQ(ReadCifar10({dir / "one.bin", dir / "one.bin"}, Limit(7000)).size(), 2);
}

TEST(Csv, AHeaderRowPastOneMebibyteIsRefusedThere) {
  // Finding 4: a 100 MB header line peaked at 2.1 GB. 1 MiB is refused at its first byte past.
  TempDir dir;
  std::string header;
  for (int i = 0; i < 1 << 20; ++i) header += "a,";
  WriteFile(dir / "wide.csv", header + "y\n1,0\n");
  WriteGzipFile(dir / "wide.csv.gz", header + header + header + header + "y\n");
  for (const char* file : {"wide.csv", "wide.csv.gz"}) {
    EXPECT_EQ(UserErrorWithin(16 * kMiB, [&] { ReadCsv(dir / file, ""); }),
              (dir / file).string() +
                  ":1: the header row runs past 1.00 MiB at byte 1048576 of the uncompressed "
                  "stream; a header that long would name more columns than any real table has "
                  "(is this a CSV file?)");
  }
  // A quote that never closes makes one field of the rest of the file, lines and all.
  std::string runaway = "a,\"b\n";
  for (int i = 0; i < 1 << 20; ++i) runaway += "x\n";
  WriteFile(dir / "quote.csv", runaway);
  EXPECT_EQ(UserErrorWithin(16 * kMiB, [&] { ReadCsv(dir / "quote.csv", ""); }),
            (dir / "quote.csv").string() +
                ":524287: the header row runs past 1.00 MiB at byte 1048576 of the uncompressed "
                "stream; a header that long would name more columns than any real table has (is "
                "this a CSV file?)");
}

TEST(Csv, ADataRowIsBoundedByItsColumnsAndTheRowsByTheLimit) {
  TempDir dir;
  WriteFile(dir / "long.csv", "a,y\n" + std::string(2 * kMiB, '1') + ",0\n");
  EXPECT_EQ(UserErrorWithin(16 * kMiB, [&] { ReadCsv(dir / "long.csv", ""); }),
            (dir / "long.csv").string() +
                ":2: the row runs past 1.00 MiB at byte 1048580 of the uncompressed stream; the "
                "header's 2 columns allow 128 bytes per column or 1 MiB, far more than numbers "
                "take");
  std::string text = "a,b,y\n";
  for (int i = 0; i < 10; ++i) text += "1,2,0\n";
  WriteFile(dir / "rows.csv", text);
  // A row holds 2 doubles and a label: 20 bytes, 5 rows in 100 bytes.
  EXPECT_EQ(CsvErrorWithin(dir / "rows.csv", Limit(100)),
            (dir / "rows.csv").string() +
                ":7: data row 6 needs 120 B (6 rows x (2 features x 8 bytes + a 4-byte label)), "
                "more than --max-memory 100 B allows");
  EXPECT_EQ(ReadCsv(dir / "rows.csv", "", Limit(200)).samples.size(), 10);
}

TEST(Csv, TheMemoryOfAWideTableIsItsNumbers) {
  // 100 000 columns x 10 rows: 8 MB of doubles from 2.6 MB of text. The reader once held each
  // row's fields as strings and every number twice.
  TempDir dir;
  std::string header, row;
  for (int c = 0; c < 100000; ++c) {
    header += fmt::format("c{},", c);
    row += "1,";
  }
  std::string text = header + "y\n";
  for (int r = 0; r < 10; ++r) text += row + "0\n";
  WriteGzipFile(dir / "wide.csv.gz", text);
  EXPECT_EQ(UserErrorWithin(32 * kMiB,
                            [&] {
                              const CsvTable table = ReadCsv(dir / "wide.csv.gz", "");
                              if (table.samples.features.cols() != 100000)
                                throw UserError("wrong width");
                            }),
            "(no error)");
}

// Issue 33, finding 8, over every reader: bytes after a gzip file's last stream are refused
// (zlib's gzread skips them) in CSV, LIBSVM, IDX images and labels, and CIFAR-10 alike, while the
// same file without them reads. The readers share GzipReader; a reader that stopped reading
// before the end of its file would let them through.
TEST(EveryReader, RefusesBytesAfterTheGzipData) {
  TempDir dir;
  std::string records;
  for (int i = 0; i < 3; ++i) records += CifarRecord(i);
  const SmallIdx idx;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"t.csv.gz", "a,b,y\n1,2,0\n3,4,1\n"},
      {"t.svm.gz", "+1 1:0.5 2:1\n-1 2:2\n"},
      {"images.gz", idx.images},
      {"labels.gz", idx.labels},
      {"t.bin.gz", records}};
  const std::map<std::string, std::function<void()>> read = {
      {"t.csv.gz", [&] { ReadCsv(dir / "t.csv.gz", "y"); }},
      {"t.svm.gz", [&] { ReadLibsvm(dir / "t.svm.gz", 0); }},
      {"images.gz", [&] { ReadIdx(dir / "images.gz", idx.dir / "labels", 3); }},
      {"labels.gz", [&] { ReadIdx(idx.dir / "images", dir / "labels.gz", 3); }},
      {"t.bin.gz", [&] { ReadCifar10({dir / "t.bin.gz"}); }}};
  for (const auto& [name, text] : files) {
    SCOPED_TRACE(name);
    WriteGzipFile(dir / name, text);
    EXPECT_EQ(UserErrorOf(read.at(name)), "(no error)");
    WriteFile(dir / name, ReadFile(dir / name) + "appended later");
    EXPECT_THAT(UserErrorOf(read.at(name)), HasSubstr("14 bytes follow the end of the gzip data"));
  }
}

}  // namespace
}  // namespace lemmalab
