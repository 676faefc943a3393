// IDX reader (the format of MNIST and Fashion-MNIST, LeCun et al.): a big-endian header (magic
// number 0x0000TTDD: element type TT, DD dimensions, then DD 32-bit sizes) and the elements in
// row-major order. Only unsigned bytes (TT = 0x08) occur in these data sets.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/data_sources.h"
#include "problems/dataset.h"

namespace lemmalab {
namespace {

constexpr int kUnsignedByte = 0x08;
// Far above any image data set (CIFAR-size images have 3072 pixels, ImageNet-size 150528).
constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 24;

std::string_view ElementTypeName(int type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "16-bit integer";
    case 0x0C:
      return "32-bit integer";
    case 0x0D:
      return "32-bit float";
    case 0x0E:
      return "64-bit float";
    default:
      return "unknown type";
  }
}

// Reads the magic number and the `rank` sizes of an IDX file of unsigned bytes; `kind` names the
// expected content ("images") in messages.
std::vector<std::uint32_t> ReadIdxHeader(GzipReader& in, int rank, std::string_view kind) {
  const std::uint32_t expected = (kUnsignedByte << 8) | rank;
  std::array<unsigned char, 4> magic;
  if (in.Read(magic.data(), 4) < 4) {
    in.FailTruncated(fmt::format("an IDX file starts with a 4-byte magic number (0x{:08x} for {})",
                                 expected, kind));
  }
  const std::uint32_t found = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                              (std::uint32_t{magic[2]} << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0) {
    throw UserError(fmt::format(
        "{}: not an IDX file: magic number 0x{:08x} at byte 0, expected 0x{:08x} ({}: unsigned "
        "bytes, {} dimension{})",
        in.file(), found, expected, kind, rank, rank == 1 ? "" : "s"));
  }
  if (magic[2] != kUnsignedByte) {
    throw UserError(fmt::format(
        "{}: IDX element type 0x{:02x} ({}) in magic number 0x{:08x} is not supported; expected "
        "0x{:08x} (unsigned bytes, as in MNIST)",
        in.file(), magic[2], ElementTypeName(magic[2]), found, expected));
  }
  if (magic[3] != rank) {
    throw UserError(fmt::format(
        "{}: magic number 0x{:08x} declares {} dimension(s), but IDX {} have {} (magic 0x{:08x}); "
        "are images and labels swapped?",
        in.file(), found, magic[3], kind, rank, expected));
  }
  std::vector<unsigned char> bytes(4 * static_cast<std::size_t>(rank));
  if (in.Read(bytes.data(), bytes.size()) < bytes.size()) {
    in.FailTruncated(fmt::format("the {}-byte IDX header ({} dimension sizes) is incomplete",
                                 4 + bytes.size(), rank));
  }
  std::vector<std::uint32_t> sizes;
  for (int k = 0; k < rank; ++k) {
    const unsigned char* p = &bytes[4 * static_cast<std::size_t>(k)];
    sizes.push_back((std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                    (std::uint32_t{p[2]} << 8) | p[3]);
    if (sizes.back() == 0) {
      throw UserError(fmt::format("{}: dimension {} of the IDX header (bytes {}..{}) is 0",
                                  in.file(), k + 1, 4 + 4 * k, 7 + 4 * k));
    }
  }
  return sizes;
}

// After the data the header declares, the file must end: extra bytes mean a different layout.
void ExpectEnd(GzipReader& in, std::string_view what) {
  const std::uint64_t end = in.offset();
  if (const std::uint64_t extra = in.SkipRest(); extra > 0) {
    throw UserError(fmt::format(
        "{}: {} unexpected byte(s) after the {} the header declares, from byte {} of the "
        "uncompressed stream",
        in.file(), extra, what, end));
  }
}

struct IdxImages {
  Samples samples;
  std::uint32_t rows = 0, cols = 0;
};

IdxImages ReadImagesAndLabels(const std::filesystem::path& images,
                              const std::filesystem::path& labels, int classes,
                              const MemoryLimit& memory) {
  LEMMALAB_CHECK(classes >= 2 && classes <= 256, "classes = {} outside [2, 256]", classes);
  GzipReader image_in(images);
  GzipReader label_in(labels);
  // Both headers are judged before either body is read.
  const std::vector<std::uint32_t> image_sizes = ReadIdxHeader(image_in, 3, "images");
  const std::vector<std::uint32_t> label_sizes = ReadIdxHeader(label_in, 1, "labels");
  const std::int64_t n = image_sizes[0];
  if (label_sizes[0] != n) {
    throw UserError(fmt::format("{} holds {} images but {} holds {} labels", image_in.file(), n,
                                label_in.file(), label_sizes[0]));
  }
  // Two 32-bit sizes can multiply past int64: judge a corrupt header before forming the product.
  if (static_cast<double>(image_sizes[1]) * static_cast<double>(image_sizes[2]) > kMaxImagePixels) {
    throw UserError(fmt::format(
        "{}: the IDX header (bytes 8..15) declares images of {}x{} pixels, more than the {} "
        "pixels an image may have; is the file corrupt?",
        image_in.file(), image_sizes[1], image_sizes[2], kMaxImagePixels));
  }
  const std::int64_t pixels = std::int64_t{image_sizes[1]} * image_sizes[2];
  // What the samples will hold: a byte per pixel and an int per label. A header that claims
  // more than the limit allows is refused now; one that claims less than the file holds is
  // caught by the reads below, which allocate only as the data arrive.
  const double sample_bytes = static_cast<double>(pixels) + 4;
  RequireWithin(memory, static_cast<double>(n) * sample_bytes,
                fmt::format("{}: the IDX header (bytes 4..15) declares {} images of {}x{}",
                            image_in.file(), n, image_sizes[1], image_sizes[2]),
                fmt::format("{} images x ({} pixel bytes + a 4-byte label)", n, pixels));

  IdxImages result{{}, image_sizes[1], image_sizes[2]};
  Samples& samples = result.samples;
  // Labels in chunks, each checked as it arrives.
  std::vector<unsigned char> chunk(1 << 16);
  for (std::int64_t i = 0; i < n;) {
    const auto want = static_cast<std::size_t>(std::min<std::int64_t>(n - i, chunk.size()));
    const std::size_t got = label_in.Read(chunk.data(), want);
    ReserveRows(samples.labels, i + static_cast<std::int64_t>(got), n);
    for (std::size_t k = 0; k < got; ++k, ++i) {
      if (chunk[k] >= classes) {
        throw UserError(fmt::format(
            "{}: label {} of sample {} (byte {} of the uncompressed stream) is not below "
            "classes = {}",
            label_in.file(), chunk[k], i, 8 + i, classes));
      }
      samples.labels[i] = chunk[k];
    }
    if (got < want) {
      label_in.FailTruncated(
          fmt::format("the header promises {} bytes ({} labels after an 8-byte header)", 8 + n, n));
    }
  }
  ExpectEnd(label_in, "labels");

  // Images straight into the matrix the samples keep, which grows (to twice the images read at
  // most) as they arrive: a header's claim alone allocates nothing.
  const std::int64_t chunk_images = std::max<std::int64_t>(1, (std::int64_t{1} << 20) / pixels);
  ByteMatrix pixel_bytes(0, pixels);
  for (std::int64_t i = 0; i < n;) {
    ReserveRows(pixel_bytes, std::min(n, i + chunk_images), n);
    const auto want = static_cast<std::size_t>((pixel_bytes.rows() - i) * pixels);
    if (image_in.Read(pixel_bytes.row(i).data(), want) < want) {
      const std::uint64_t total =
          static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(pixels);
      image_in.FailTruncated(
          fmt::format("the header promises {} bytes ({} images of {}x{} after a 16-byte header)",
                      16 + total, n, image_sizes[1], image_sizes[2]));
    }
    i = pixel_bytes.rows();
  }
  ExpectEnd(image_in, "images");
  samples.bytes = std::make_shared<const ByteMatrix>(std::move(pixel_bytes));
  return result;
}

}  // namespace

Samples ReadIdx(const std::filesystem::path& images, const std::filesystem::path& labels,
                int classes, const MemoryLimit& memory) {
  return ReadImagesAndLabels(images, labels, classes, memory).samples;
}

Dataset LoadIdx(OptionTable& options, const DataContext& context) {
  const int classes = static_cast<int>(options.GetInt("classes", 10, 2, 256));
  // The keys of the explicit files and the names of the files in a folder, as MNIST ships them.
  constexpr std::array<std::string_view, 4> kKeys = {"train_images", "train_labels", "test_images",
                                                     "test_labels"};
  const std::array<std::string, 4> kNames = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  // Every option first, then the files.
  options.Describe("dir",
                   "a string: a folder with the four files as MNIST ships them (or "
                   ".gz); or give the files");
  for (std::size_t k = 0; k < 4; ++k) {
    options.Describe(kKeys[k], k < 2 ? "a string: an IDX file; required without dir"
                                     : "a string: an IDX file; default: no test set");
  }
  const bool from_dir = options.Has("dir");
  if (from_dir) {
    options.RequireString("dir");
    for (const std::string_view key : kKeys) {
      if (options.Has(key)) {
        options.Fail(key, fmt::format("give either dir or the files (train_images, ...), not "
                                      "both; {} is set with dir",
                                      key));
      }
    }
  } else {
    if (!options.Has("train_images")) {
      options.Fail("dir",
                   "missing the data: give dir = \"<folder>\" or train_images and "
                   "train_labels");
    }
    for (std::size_t k = 0; k < 4; ++k) {
      if (k < 2 || options.Has(kKeys[k])) options.RequireString(kKeys[k]);
    }
  }
  if (context.options_only) return {};

  std::array<std::optional<std::filesystem::path>, 4> files;
  std::string name;
  std::string_view test_key = "dir";  // where a problem with the test files is reported
  if (from_dir) {
    const std::filesystem::path dir = ResolveDataDir(options, "dir", context);
    for (std::size_t k = 0; k < 4; ++k) files[k] = FindDataFile(options, "dir", dir, kNames[k]);
    for (std::size_t k = 0; k < 2; ++k) {
      if (!files[k]) {
        options.Fail("dir", fmt::format("folder '{}' has no {} (or {}.gz)", dir.string(), kNames[k],
                                        kNames[k]));
      }
    }
    if (files[2].has_value() != files[3].has_value()) {
      const std::size_t present = files[2] ? 2 : 3, absent = 5 - present;
      options.Fail("dir", fmt::format("folder '{}' has {} but no {} (or {}.gz); the test set "
                                      "needs both files or neither",
                                      dir.string(), files[present]->filename().string(),
                                      kNames[absent], kNames[absent]));
    }
    name = FolderName(dir);
  } else {
    for (std::size_t k = 0; k < 4; ++k) {
      if (k < 2 || options.Has(kKeys[k])) files[k] = ResolveDataFile(options, kKeys[k], context);
    }
    if (files[2].has_value() != files[3].has_value()) {
      const std::string_view present = files[2] ? kKeys[2] : kKeys[3];
      const std::string_view absent = files[2] ? kKeys[3] : kKeys[2];
      options.Fail(present, fmt::format("{} needs {} too: the test set needs both files or neither",
                                        present, absent));
    }
    test_key = kKeys[2];
    name = files[0]->filename().string();
  }

  IdxImages train = ReadImagesAndLabels(*files[0], *files[1], classes, context.memory);
  Dataset data;
  data.classes = classes;
  data.train = std::move(train.samples);
  data.description = fmt::format("{}: {} train", name, data.train.size());
  if (files[2]) {
    IdxImages test = ReadImagesAndLabels(*files[2], *files[3], classes,
                                         TestSetLimit(context.memory, data.train));
    if (test.rows != train.rows || test.cols != train.cols) {
      options.Fail(test_key, fmt::format("the test images are {}x{}, the train images {}x{}",
                                         test.rows, test.cols, train.rows, train.cols));
    }
    data.test = std::move(test.samples);
    data.description += fmt::format(" + {} test", data.test->size());
  }
  data.description += fmt::format(" images {}x{}", train.rows, train.cols);
  return data;
}

}  // namespace lemmalab
