// The memory a command may use, decided once, and the check that every large allocation's size
// passes before the allocation is made (issue 21: a hostile header, a decompression bomb or a
// spec asking for a million workers is refused with a message naming what drives the size,
// instead of exhausting the machine).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lemmalab {

struct MemoryLimit {
  double bytes = 0;    // the most a command may hold at once
  std::string source;  // where the limit comes from, for messages ("--max-memory 8 GiB")

  // What this machine can give a process now: MemAvailable of /proc/meminfo, or the memory limit
  // of the process's cgroup when that is lower. Read once per process.
  static const MemoryLimit& Machine();
  // A limit the user gave (--max-memory): `bytes` named as `option`.
  static MemoryLimit Given(double bytes, std::string_view option);
};

// The free space of the file system `dir` is on (of its nearest existing parent), as a limit on
// what may be written there.
MemoryLimit FreeSpaceFor(const std::filesystem::path& dir);

// What a command will hold, part by part, each with what drives its size.
struct MemoryEstimate {
  struct Part {
    std::string what;  // "every worker's optimizer state"
    double bytes = 0;
    std::string drivers;  // "workers = 8 x d = 203530 x 5 vectors x 4 bytes"
  };
  std::vector<Part> parts;

  void Add(std::string what, double bytes, std::string drivers) {
    parts.push_back({std::move(what), bytes, std::move(drivers)});
  }
  double total() const;
};

// Throws UserError "<where>: the estimated <what> <total> is more than <limit.source> allows;
// the largest parts: <part> <size> (<drivers>), ..." when the estimate exceeds the limit.
void RequireWithin(const MemoryLimit& limit, const MemoryEstimate& estimate, std::string_view where,
                   std::string_view what);

// "512 B", "3.0 KiB", "1.5 GiB": binary units, two significant decimals at most.
std::string FormatBytes(double bytes);

// Throws UserError "<what> needs <size> (<how>), more than <limit.source> allows (<size>)" when
// `bytes` exceeds the limit. `what` names the file or options that drive the size and `how` the
// arithmetic ("60000 samples x 784 features x 8 bytes").
void RequireWithin(const MemoryLimit& limit, double bytes, std::string_view what,
                   std::string_view how);

}  // namespace lemmalab
