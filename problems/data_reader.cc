#include "problems/data_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace lemmalab {

GzipReader::GzipReader(const std::filesystem::path& path) : file_(path.string()) {
  in_ = gzopen(file_.c_str(), "rb");
  if (in_ == nullptr) {
    throw UserError(fmt::format("{}: cannot open for reading: {}", file_, std::strerror(errno)));
  }
  // zlib's default 8 KiB input buffer costs a system call per 8 KiB; large reads inflate straight
  // into the caller's buffer, so a bigger input buffer is all that is left to gain.
  gzbuffer(in_, 1 << 18);
}

GzipReader::~GzipReader() { gzclose(in_); }

std::size_t GzipReader::Read(void* data, std::size_t size) {
  auto* out = static_cast<unsigned char*>(data);
  std::size_t done = 0;
  while (done < size) {
    // gzread counts in unsigned and answers in int.
    const auto want = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
    const int got = gzread(in_, out + done, want);
    int error = Z_OK;
    const char* message = gzerror(in_, &error);
    if (got < 0 || (error != Z_OK && error != Z_BUF_ERROR)) FailRead(error, message);
    done += static_cast<std::size_t>(got);
    offset_ += static_cast<std::uint64_t>(got);
    // Z_BUF_ERROR: the compressed input ended inside a gzip stream ("unexpected end of file").
    if (error == Z_BUF_ERROR) cut_off_ = true;
    if (static_cast<unsigned>(got) < want) {
      if (!ended_ && !cut_off_ && gzdirect(in_) == 0) RequireNothingAfterTheStreams();
      ended_ = true;
      break;
    }
  }
  return done;
}

void GzipReader::RequireNothingAfterTheStreams() const {
  std::ifstream file(file_, std::ios::binary | std::ios::ate);
  const std::streamoff size = file.tellg();
  // A gzip stream's header and trailer alone take 18 bytes; inflate counts in 32 bits.
  if (!file || size < 18 || size > (std::streamoff{1} << 30)) return;
  // The usual case, one stream: its trailer ends the file, and its last four bytes are the
  // length of the data mod 2^32.
  unsigned char tail[4];
  file.seekg(size - 4);
  file.read(reinterpret_cast<char*>(tail), 4);
  const std::uint32_t length =
      tail[0] | (tail[1] << 8) | (tail[2] << 16) | (static_cast<std::uint32_t>(tail[3]) << 24);
  if (file && length == static_cast<std::uint32_t>(offset_)) return;
  // Otherwise (several streams one after another, or bytes after them): inflated again, stream
  // by stream, to find where the last one ends. (The compressed file is smaller than the data
  // already read from it.)
  std::vector<unsigned char> in(static_cast<std::size_t>(size)), out(1 << 16);
  file.clear();
  file.seekg(0);
  file.read(reinterpret_cast<char*>(in.data()), size);
  if (file.gcount() != size) return;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return;
  z.next_in = in.data();
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), 1u << 30));
  std::uint64_t consumed = 0;  // compressed bytes up to the end of the last whole stream
  for (;;) {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      consumed = static_cast<std::uint64_t>(z.next_in - in.data());
      // Another stream follows only where its magic bytes do.
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) break;
      inflateReset(&z);
    } else if (rc != Z_OK) {
      break;  // gzread reported what it found; only what follows whole streams is judged here
    }
  }
  inflateEnd(&z);
  const auto total = static_cast<std::uint64_t>(size);
  if (consumed > 0 && consumed < total) {
    throw UserError(fmt::format(
        "{}: {} bytes follow the end of the gzip data (at byte {} of {}) and are not gzip data; "
        "the file was damaged or appended to",
        file_, total - consumed, consumed, total));
  }
}

void GzipReader::FailRead(int error, const char* message) const {
  if (error == Z_ERRNO) {
    throw UserError(fmt::format("{}: read error after byte {} of the uncompressed stream: {}",
                                file_, offset_, std::strerror(errno)));
  }
  // gzerror's text starts with the file's name, which the message gives already.
  std::string_view reason = message;
  if (const std::string prefix = file_ + ": "; reason.starts_with(prefix)) {
    reason.remove_prefix(prefix.size());
  }
  // zlib checks a gzip stream's CRC-32 and length when the stream ends: the data inflated, but
  // is not what was compressed.
  if (reason == "incorrect data check" || reason == "incorrect length check") {
    throw UserError(fmt::format(
        "{}: corrupt file: its gzip checksum does not match the data it holds (zlib: {}); the "
        "file was damaged after it was compressed",
        file_, reason));
  }
  throw UserError(fmt::format(
      "{}: corrupt gzip data near byte {} of the compressed file (zlib: {}); {} bytes of data "
      "were read before it",
      file_, gzoffset(in_), reason, offset_));
}

std::uint64_t GzipReader::SkipRest() {
  const std::uint64_t start = offset_;
  std::vector<unsigned char> scratch(1 << 16);
  while (Read(scratch.data(), scratch.size()) == scratch.size()) {
  }
  if (cut_off_) FailCutOff();
  return offset_ - start;
}

void GzipReader::FailTruncated(std::string_view detail) const {
  throw UserError(
      fmt::format("{}: truncated: the data ends at byte {} of the uncompressed stream{}; {}", file_,
                  offset_, cut_off_ ? " (gzip stream cut off)" : "", detail));
}

void GzipReader::FailCutOff() const {
  throw UserError(fmt::format(
      "{}: truncated: the gzip stream is cut off after byte {} of the uncompressed stream "
      "(unexpected end of file)",
      file_, offset_));
}

std::int64_t RowsWithin(const MemoryLimit& limit, double row_bytes) {
  LEMMALAB_CHECK(row_bytes > 0, "rows of {} bytes", row_bytes);
  const double rows = std::floor(limit.bytes / row_bytes);
  // An infinite limit (no known memory) still bounds the rows by what an index can count.
  return rows <= 0 ? 0 : static_cast<std::int64_t>(std::min(rows, 0x1p62));
}

std::string Excerpt(std::string_view text) {
  if (text.size() <= kExcerptChars) return fmt::format("'{}'", text);
  return fmt::format("'{}...' ({} bytes)", text.substr(0, kExcerptChars), text.size());
}

std::optional<double> ParseFiniteNumber(std::string_view text) {
  // from_chars takes no leading '+'; accept one only where a number follows ("+-1" stays bad).
  if (text.size() > 1 && text[0] == '+' &&
      (std::isdigit(static_cast<unsigned char>(text[1])) || text[1] == '.')) {
    text.remove_prefix(1);
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace lemmalab
