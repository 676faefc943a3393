// Building blocks the data readers share: a zlib input stream that counts offsets in the
// uncompressed data, the limit on dense feature matrices, and number parsing.
// Not part of the data interface (problems/dataset.h).
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

  // Everything left in the stream. A gzip stream cut off anywhere is an error here.
  std::vector<unsigned char> ReadToEnd();

  // Reads past the end of the expected data and returns how many bytes were left (0 for a file
  // that ends where it should). A gzip stream cut off anywhere is an error here.
  std::uint64_t SkipRest();

  // Throws "<file>: truncated: the data ends at byte <offset> of the uncompressed stream
  // [(gzip stream cut off)]; <detail>" after a short Read.
  [[noreturn]] void FailTruncated(std::string_view detail) const;

 private:
  // Throws the UserError for a failed gzread: a system error, a checksum that does not match, or
  // corrupt compressed data, each said so.
  [[noreturn]] void FailRead(int error, const char* message) const;
  [[noreturn]] void FailCutOff() const;

  std::string file_;
  gzFile in_ = nullptr;
  std::uint64_t offset_ = 0;
  bool cut_off_ = false;  // zlib saw the compressed input end inside a gzip stream
};

// Features are stored densely as doubles (byte features become doubles when standardised, and
// a problem may convert them whole); more than this is refused rather than attempted.
inline constexpr double kMaxDenseBytes = 4.0 * (1 << 30);

// Throws UserError naming `what` (a file), the shape and its size in GiB when samples x features
// doubles exceed kMaxDenseBytes.
void CheckDenseSize(std::string_view what, std::int64_t samples, std::int64_t features);

// The number `text` spells completely (std::from_chars, plus an optional leading '+'), if it is
// finite.
std::optional<double> ParseFiniteNumber(std::string_view text);

}  // namespace lemmalab
