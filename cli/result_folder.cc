#include "cli/result_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace lemmalab {
namespace {

constexpr std::string_view kCurrent = "current";
constexpr std::string_view kGenerationPrefix = "gen-";

// The n of a "gen-<n>" entry, or -1.
long long GenerationNumber(const std::string& name) {
  if (!name.starts_with(kGenerationPrefix)) return -1;
  long long n = -1;
  const char* first = name.data() + kGenerationPrefix.size();
  const auto [end, ec] = std::from_chars(first, name.data() + name.size(), n);
  return ec == std::errc() && end == name.data() + name.size() ? n : -1;
}

}  // namespace

void SyncToDisk(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(fmt::format("{}: cannot open: {}", path.string(), strerror(errno)));
  const int rc = fsync(fd);
  const int error = errno;
  close(fd);
  // Some file systems cannot sync a folder (EINVAL); the data files are synced regardless.
  if (rc != 0 && error != EINVAL) {
    throw UserError(fmt::format("{}: cannot write: {}", path.string(), strerror(error)));
  }
}

void CheckFileOperation(const std::error_code& ec, std::string_view what,
                        const std::filesystem::path& path) {
  if (ec) throw UserError(fmt::format("{}: cannot {}: {}", path.string(), what, ec.message()));
}

ResultFolder::ResultFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path ResultFolder::staging() const { return Store() / "next"; }

void ResultFolder::ResetStaging() {
  std::error_code ec;
  std::filesystem::remove_all(staging(), ec);
  CheckFileOperation(ec, "remove", staging());
  std::filesystem::create_directories(staging(), ec);
  CheckFileOperation(ec, "create", staging());
}

void ResultFolder::RemoveStaging() noexcept {
  std::error_code ignored;
  std::filesystem::remove_all(staging(), ignored);
  // The store itself when nothing else is in it (a first run that failed).
  std::filesystem::remove(Store(), ignored);
}

std::string ResultFolder::NextGeneration() const {
  long long largest = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(Store(), ec)) {
    largest = std::max(largest, GenerationNumber(entry.path().filename().string()));
  }
  return fmt::format("{}{}", kGenerationPrefix, largest + 1);
}

void ResultFolder::Switch(const std::string& generation) {
  const std::filesystem::path link = Store() / kCurrent;
  std::filesystem::path fresh = link;
  fresh += ".new";
  std::error_code ec;
  std::filesystem::remove(fresh, ec);
  std::filesystem::create_symlink(generation, fresh, ec);
  CheckFileOperation(ec, "create", fresh);
  std::filesystem::rename(fresh, link, ec);  // the commit point
  CheckFileOperation(ec, "replace", link);
}

void ResultFolder::LinkIntoPlace(std::string_view name) {
  const std::filesystem::path target = std::filesystem::path(kStore) / kCurrent / name;
  const std::filesystem::path path = dir_ / name;
  std::error_code ec;
  if (std::filesystem::is_symlink(path) && std::filesystem::read_symlink(path, ec) == target) {
    return;
  }
  std::filesystem::path fresh = path;
  fresh += ".link";
  std::filesystem::remove(fresh, ec);
  std::filesystem::create_symlink(target, fresh, ec);
  CheckFileOperation(ec, "create", fresh);
  std::filesystem::rename(fresh, path, ec);
  CheckFileOperation(ec, "replace", path);
}

void ResultFolder::AdoptPlainFiles(std::span<const std::string_view> names) {
  std::vector<std::string_view> plain;
  for (const std::string_view name : names) {
    const std::filesystem::file_status status = std::filesystem::symlink_status(dir_ / name);
    if (std::filesystem::is_regular_file(status)) plain.push_back(name);
  }
  if (plain.empty()) return;
  // The set readers see now, as a generation: the plain files, and what the links show.
  const std::string generation = NextGeneration();
  const std::filesystem::path adopted = Store() / generation;
  std::error_code ec;
  std::filesystem::create_directories(adopted, ec);
  CheckFileOperation(ec, "create", adopted);
  try {
    for (const std::string_view name : names) {
      const std::filesystem::path shown = dir_ / name;
      if (!std::filesystem::exists(shown)) continue;
      std::filesystem::create_hard_link(std::filesystem::canonical(shown, ec), adopted / name, ec);
      CheckFileOperation(ec, "link", shown);
    }
    SyncToDisk(adopted);
  } catch (const UserError&) {
    std::filesystem::remove_all(adopted, ec);  // nothing was switched: the folder is as it was
    throw;
  }
  Switch(generation);
  for (const std::string_view name : plain) LinkIntoPlace(name);
}

void ResultFolder::Publish(std::span<const std::string_view> names) {
  std::error_code ec;
  // What else the staging folder held (a run's checkpoints) is not part of the set.
  for (const auto& entry : std::filesystem::directory_iterator(staging(), ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::filesystem::remove_all(entry.path(), ec);
      CheckFileOperation(ec, "remove", entry.path());
    }
  }
  for (const std::string_view name : names) SyncToDisk(staging() / name);
  AdoptPlainFiles(names);
  const std::string generation = NextGeneration();
  std::filesystem::rename(staging(), Store() / generation, ec);
  CheckFileOperation(ec, "move into place", Store() / generation);
  SyncToDisk(Store());
  Switch(generation);
  for (const std::string_view name : names) LinkIntoPlace(name);
  SyncToDisk(Store());
  SyncToDisk(dir_);
  // Earlier generations: a reader that still holds one of their files keeps reading it.
  for (const auto& entry : std::filesystem::directory_iterator(Store(), ec)) {
    const std::string name = entry.path().filename().string();
    if (GenerationNumber(name) >= 0 && name != generation) {
      std::error_code ignored;
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace lemmalab
