#include "core/resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace lemmalab {
namespace {

// MemAvailable of /proc/meminfo in bytes, or nullopt-like 0 when it cannot be read.
double MemAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double value = 0;
  while (meminfo >> key >> value) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") return value * 1024;  // the file counts kB
  }
  return 0;
}

// The cgroup v2 (memory.max) or v1 (memory.limit_in_bytes) limit of this process, 0 when none.
double CgroupLimit() {
  for (const char* file :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    double bytes = 0;
    std::istringstream(text) >> bytes;
    // cgroup v1 reports "no limit" as a number near 2^63.
    if (bytes > 0 && bytes < 1e18) return bytes;
  }
  return 0;
}

}  // namespace

const MemoryLimit& MemoryLimit::Machine() {
  static const MemoryLimit machine = [] {
    const double available = MemAvailable();
    const double cgroup = CgroupLimit();
    if (cgroup > 0 && (available == 0 || cgroup < available)) {
      return MemoryLimit{cgroup, fmt::format("this process's cgroup memory limit ({}; "
                                             "--max-memory sets another)",
                                             FormatBytes(cgroup))};
    }
    if (available > 0) {
      return MemoryLimit{available,
                         fmt::format("the memory available on this machine (MemAvailable {}; "
                                     "--max-memory sets another limit)",
                                     FormatBytes(available))};
    }
    return MemoryLimit{std::numeric_limits<double>::infinity(),
                       "no known limit (/proc/meminfo unreadable; --max-memory sets one)"};
  }();
  return machine;
}

MemoryLimit MemoryLimit::Given(double bytes, std::string_view option) {
  return {bytes, fmt::format("{} {}", option, FormatBytes(bytes))};
}

MemoryLimit FreeSpaceFor(const std::filesystem::path& dir) {
  std::filesystem::path existing = std::filesystem::absolute(dir);
  while (!std::filesystem::exists(existing) && existing.has_parent_path() &&
         existing.parent_path() != existing) {
    existing = existing.parent_path();
  }
  std::error_code ec;
  const std::filesystem::space_info space = std::filesystem::space(existing, ec);
  if (ec) {
    return {std::numeric_limits<double>::infinity(),
            "no known limit (the free space is unknown; --max-results sets one)"};
  }
  const auto available = static_cast<double>(space.available);
  return {available, fmt::format("the free space on the file system of {} ({}; --max-results "
                                 "sets another limit)",
                                 existing.string(), FormatBytes(available))};
}

double MemoryEstimate::total() const {
  double sum = 0;
  for (const Part& part : parts) sum += part.bytes;
  return sum;
}

void RequireWithin(const MemoryLimit& limit, const MemoryEstimate& estimate, std::string_view where,
                   std::string_view what) {
  const double total = estimate.total();
  if (total <= limit.bytes) return;
  std::vector<MemoryEstimate::Part> parts = estimate.parts;
  std::sort(parts.begin(), parts.end(),
            [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string largest;
  for (std::size_t i = 0; i < parts.size() && i < 3; ++i) {
    if (parts[i].bytes < 0.01 * total) break;
    largest += fmt::format("{}{} {} ({})", i == 0 ? "" : "; ", parts[i].what,
                           FormatBytes(parts[i].bytes), parts[i].drivers);
  }
  throw UserError(
      fmt::format("{}: the estimated {} {} is more than {} allows; the largest parts: {}", where,
                  what, FormatBytes(total), limit.source, largest));
}

std::string FormatBytes(double bytes) {
  constexpr std::array<const char*, 7> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (!std::isfinite(bytes)) return "unlimited";
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < kUnits.size()) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.{}f} {}", bytes, bytes < 10 ? 2 : (bytes < 100 ? 1 : 0), kUnits[unit]);
}

void RequireWithin(const MemoryLimit& limit, double bytes, std::string_view what,
                   std::string_view how) {
  if (bytes <= limit.bytes) return;
  throw UserError(fmt::format("{} needs {} ({}), more than {} allows", what, FormatBytes(bytes),
                              how, limit.source));
}

}  // namespace lemmalab
