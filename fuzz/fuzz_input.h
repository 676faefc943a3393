// What the data reader fuzz targets share: the fuzzer's bytes cut into the files of a data set,
// each written to an in-memory file plain or gzip-compressed, the [data] table that loads them,
// and the memory limit the readers are fuzzed under.
//
// An input is laid out as
//   byte 0         flags: bit 0 gzips the first file, bit 1 the second, bit 6 reads them under
//                  a small memory limit, bit 7 makes two files; bits 2..5 are the target's to
//                  use (options)
//   byte 1         a parameter for the target (a class count, a width)
//   [bytes 2..3]   with two files: the first file's length, little-endian
//   the rest       the first file, then the second
// so that every byte string is an input, and a mutation of the flags tries the same text through
// gzip, as a test set, or with other options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/options.h"
#include "core/resources.h"

namespace lemmalab::fuzz {

// A memfd rewritten for each input; path() opens it like any file (as /proc/self/fd/N).
class MemoryFile {
 public:
  explicit MemoryFile(const char* name);
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the content with `bytes`, gzip-compressed when `gzip`.
  void Write(std::span<const std::uint8_t> bytes, bool gzip);
  const std::filesystem::path& path() const { return path_; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

struct FuzzInput {
  std::uint8_t flags = 0;
  std::uint8_t parameter = 0;
  std::span<const std::uint8_t> first, second;  // second is empty with one file
  bool two_files = false;
  bool option(int bit) const { return (flags >> bit & 1) != 0; }
};

// Cuts `data` as the header comment says; `two_files` makes two files whatever bit 7 says (a
// data set that always has two, as IDX images and labels).
FuzzInput SplitInput(const std::uint8_t* data, std::size_t size, bool two_files = false);

// Two memory files, written from the input (the second only with two files).
struct FuzzFiles {
  MemoryFile first{"first"};
  MemoryFile second{"second"};
  void Write(const FuzzInput& input);
};

// A [data] table for `source`, as a spec would give it.
OptionTable DataTable(std::string_view source);
void SetString(OptionTable& table, std::string_view key, std::string value);
void SetInt(OptionTable& table, std::string_view key, std::int64_t value);
void SetStrings(OptionTable& table, std::string_view key, std::span<const std::string> values);

// LoadData(table) under the input's memory limit: 64 MiB, which a reader must refuse to exceed
// (libFuzzer's -malloc_limit_mb of 256 in scripts/fuzz reports one that allocates far past it),
// or with flag bit 6 a small one from the parameter byte (256 bytes to 16 KiB), which small
// inputs can exceed. A UserError that names a file or an option is the expected answer to a bad
// file; anything else (another exception, a crash, a sanitizer report, a message that names
// neither, a loaded data set whose labels or shapes disagree) is a finding.
void Load(OptionTable& table, const FuzzInput& input);

}  // namespace lemmalab::fuzz
