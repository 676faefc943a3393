#include "fuzz/fuzz_input.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "problems/dataset.h"

namespace lemmalab::fuzz {
namespace {

// `bytes` as a gzip stream (zlib's deflate with a gzip wrapper: window bits 15 + 16).
std::vector<std::uint8_t> Gzip(std::span<const std::uint8_t> bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32);
  z.next_in = const_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (result != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

}  // namespace

MemoryFile::MemoryFile(const char* name) {
  fd_ = memfd_create(name, 0);
  if (fd_ < 0) {
    throw std::runtime_error(fmt::format("memfd_create failed: {}", std::strerror(errno)));
  }
  path_ = fmt::format("/proc/self/fd/{}", fd_);
}

MemoryFile::~MemoryFile() { close(fd_); }

void MemoryFile::Write(std::span<const std::uint8_t> bytes, bool gzip) {
  std::vector<std::uint8_t> zipped;
  if (gzip) {
    zipped = Gzip(bytes);
    bytes = zipped;
  }
  if (ftruncate(fd_, 0) != 0) throw std::runtime_error("ftruncate failed");
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t wrote =
        pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (wrote <= 0) throw std::runtime_error("pwrite failed");
    done += static_cast<std::size_t>(wrote);
  }
}

FuzzInput SplitInput(const std::uint8_t* data, std::size_t size, bool two_files) {
  FuzzInput input;
  std::span<const std::uint8_t> rest(data, size);
  const auto take = [&rest](std::size_t n) {
    n = std::min(n, rest.size());
    const std::span<const std::uint8_t> front = rest.first(n);
    rest = rest.subspan(n);
    return front;
  };
  if (const auto b = take(1); !b.empty()) input.flags = b[0];
  if (const auto b = take(1); !b.empty()) input.parameter = b[0];
  input.two_files = two_files || input.option(7);
  if (input.two_files) {
    const auto b = take(2);
    const std::size_t length = b.size() == 2 ? b[0] | (std::size_t{b[1]} << 8) : 0;
    input.first = take(length);
    input.second = rest;
  } else {
    input.first = rest;
  }
  return input;
}

void FuzzFiles::Write(const FuzzInput& input) {
  first.Write(input.first, input.option(0));
  if (input.two_files) second.Write(input.second, input.option(1));
}

OptionTable DataTable(std::string_view source) {
  OptionTable table("[data]", "fuzz.toml:1:1");
  SetString(table, "source", std::string(source));
  return table;
}

void SetString(OptionTable& table, std::string_view key, std::string value) {
  table.Set(std::string(key), {std::move(value), "fuzz.toml:2:1"});
}

void SetInt(OptionTable& table, std::string_view key, std::int64_t value) {
  table.Set(std::string(key), {value, "fuzz.toml:2:1"});
}

void SetStrings(OptionTable& table, std::string_view key, std::span<const std::string> values) {
  OptionValue::Array array;
  for (const std::string& value : values) array.push_back({value, "fuzz.toml:2:1"});
  table.Set(std::string(key), {std::move(array), "fuzz.toml:2:1"});
}

namespace {

MemoryLimit LimitFor(const FuzzInput& input) {
  if (!input.option(6)) return MemoryLimit::Given(64 << 20, "the fuzzer's limit");
  return MemoryLimit::Given(256 + 64.0 * input.parameter, "the fuzzer's small limit");
}

// A finding that is not a crash: printed, then abort() so that libFuzzer keeps the input.
[[noreturn]] void Finding(std::string_view what) {
  fmt::print(stderr, "fuzz finding: {}\n", what);
  std::abort();
}

// What every loaded data set must be: as many labels as samples, each below the class count,
// and a test set as wide as the training set.
void CheckDataset(const Dataset& data) {
  for (const Samples* set : {&data.train, data.test ? &*data.test : nullptr}) {
    if (set == nullptr) continue;
    if (set->size() == 0) Finding("a data set without samples loaded");
    if (set->labels.size() != set->size()) {
      Finding(fmt::format("{} labels for {} samples", set->labels.size(), set->size()));
    }
    if (set->holds_bytes() && set->features.size() != 0) {
      Finding("samples that hold bytes and dense features both");
    }
    if (set->num_features() != data.num_features()) {
      Finding(fmt::format("a test set of {} features for {} training features", set->num_features(),
                          data.num_features()));
    }
    if (set->labels.size() > 0 &&
        (set->labels.minCoeff() < 0 || set->labels.maxCoeff() >= data.classes)) {
      Finding(fmt::format("labels in [{}, {}] for {} classes", set->labels.minCoeff(),
                          set->labels.maxCoeff(), data.classes));
    }
  }
}

}  // namespace

void Load(OptionTable& table, const FuzzInput& input) {
  try {
    CheckDataset(LoadData(table, {0, "/", LimitFor(input)}));
  } catch (const UserError& e) {
    // Every refusal names where: a file (the memory files are /proc/self/fd/N) or an option.
    const std::string_view message = e.what();
    if (message.find("/proc/self/fd/") == std::string_view::npos &&
        message.find("fuzz.toml:") == std::string_view::npos) {
      Finding(fmt::format("a message that names no file or option: {}", message));
    }
  }
}

}  // namespace lemmalab::fuzz
