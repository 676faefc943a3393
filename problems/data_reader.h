// Building blocks the data readers share: a zlib input stream that counts offsets in the
// uncompressed data, storage that grows with the data that arrive (never with what a header
// claims) inside the memory limit, and number parsing.
// Not part of the data interface (problems/dataset.h).
#pragma once

#include <zlib.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/resources.h"

namespace lemmalab {

// A file read through zlib, plain or gzip-compressed alike. Offsets in messages are positions in
// the uncompressed stream, the only positions both kinds of file share.
class GzipReader {
 public:
  // Fails (UserError) when the file cannot be opened.
  explicit GzipReader(const std::filesystem::path& path);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  const std::string& file() const { return file_; }
  // Bytes delivered so far, i.e. the offset of the next byte in the uncompressed stream.
  std::uint64_t offset() const { return offset_; }

  // Reads up to `size` bytes; fewer only where the data ends (the file, or a gzip stream cut
  // off). Corrupt gzip data and read errors throw UserError naming the file and the offset.
  std::size_t Read(void* data, std::size_t size);
  // Whether a Read stopped because the compressed input ended inside a gzip stream.
  bool cut_off() const { return cut_off_; }

  // Reads past the end of the expected data and returns how many bytes were left (0 for a file
  // that ends where it should). A gzip stream cut off anywhere is an error here.
  std::uint64_t SkipRest();

  // Throws "<file>: truncated: the data ends at byte <offset> of the uncompressed stream
  // [(gzip stream cut off)]; <detail>" after a short Read.
  [[noreturn]] void FailTruncated(std::string_view detail) const;
  // Throws "<file>: truncated: the gzip stream is cut off after byte <offset> of the uncompressed
  // stream (unexpected end of file)", for a cut_off() stream whose data end where they may.
  [[noreturn]] void FailCutOff() const;

 private:
  // Throws the UserError for a failed gzread: a system error, a checksum that does not match, or
  // corrupt compressed data, each said so.
  [[noreturn]] void FailRead(int error, const char* message) const;

  // At the end of a gzip file's data: UserError when bytes that are not gzip data follow its
  // last stream (zlib's gzread skips them silently; a plain file's extra bytes are data, which
  // the readers refuse).
  void RequireNothingAfterTheStreams() const;

  std::string file_;
  gzFile in_ = nullptr;
  std::uint64_t offset_ = 0;
  bool cut_off_ = false;  // zlib saw the compressed input end inside a gzip stream
  bool ended_ = false;    // a Read reached the end of the data
};

// The most rows of `row_bytes` bytes each that fit in `limit` (0 when none does). The readers
// grow their storage no further, so the first row past the limit is refused when it arrives.
std::int64_t RowsWithin(const MemoryLimit& limit, double row_bytes);

// Makes row-major `m` hold at least `rows` rows (at most `most`), keeping its rows: storage that
// grows as the data arrive rather than from a count a header claims. Growth is geometric, so
// reading n rows costs O(n), and it goes through realloc (Eigen's conservativeResize of a
// row-major matrix or of a vector of plain scalars), which glibc does for large blocks by remapping
// their pages: the old and the new block are never held at once, as they would be in a
// std::vector's growth.
template <typename Matrix>
void ReserveRows(Matrix& m, Eigen::Index rows,
                 Eigen::Index most = std::numeric_limits<Eigen::Index>::max()) {
  static_assert(Matrix::IsRowMajor || Matrix::ColsAtCompileTime == 1,
                "rows are appended in place only in row-major storage");
  if (rows <= m.rows()) return;
  LEMMALAB_CHECK(rows <= most, "{} rows asked for, at most {} allowed", rows, most);
  const Eigen::Index twice = m.rows() < most / 2 ? 2 * m.rows() : most;
  const Eigen::Index grown = std::min(most, std::max(rows, twice));
  // Only these two overloads reallocate; a column vector's (rows, NoChange) would copy.
  if constexpr (Matrix::IsVectorAtCompileTime) {
    m.conservativeResize(grown);
  } else {
    m.conservativeResize(grown, Eigen::NoChange);
  }
}

// Room for `rows` samples of `sample_bytes` each (features and label) in `features` and
// `labels`, grown no further than `limit` allows; RequireWithin's UserError, with where() and
// how() for its message, when `rows` samples do not fit. Does nothing until the storage must
// grow, so a reader calls it for every sample it adds.
template <typename Features, typename Where, typename How>
void ReserveSamples(Features& features, Eigen::VectorXi& labels, std::int64_t rows,
                    double sample_bytes, const MemoryLimit& limit, Where&& where, How&& how) {
  if (rows <= features.rows()) return;
  RequireWithin(limit, static_cast<double>(rows) * sample_bytes, where(), how());
  const std::int64_t most = std::max(rows, RowsWithin(limit, sample_bytes));
  ReserveRows(features, rows, most);
  ReserveRows(labels, rows, most);
}

// `text` quoted for a message: whole when short, else its start and its length
// ("'aaaa...' (1048576 bytes)"), so that a hostile field or token cannot make a message as large
// as itself.
std::string Excerpt(std::string_view text);
// How much of a long text Excerpt shows.
inline constexpr std::size_t kExcerptChars = 40;

// The number `text` spells completely (std::from_chars, plus an optional leading '+'), if it is
// finite.
std::optional<double> ParseFiniteNumber(std::string_view text);

}  // namespace lemmalab
