#include "engine/result_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.h"
#include "engine/results.h"
#include "engine/results_reader.h"

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

// The names a command writes into its folder, besides the derived files.
constexpr std::string_view kResultFiles[] = {"results.sqlite", "metrics.csv", "runs.csv",
                                             "params.npy",     "trace.csv",   "symbols.csv"};

[[noreturn]] void Refuse(const std::filesystem::path& dir, const std::string& why) {
  throw UserError(fmt::format("--out {}: {}", dir.string(), why));
}

bool IsLink(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec));
}

bool Exists(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

// The links lemmalab makes, and nothing else: see RequireFolderFor.
void RequireOwnLinks(const std::filesystem::path& dir) {
  const std::filesystem::path store = dir / ResultFolder::kStore;
  const auto foreign_link = [&](const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    Refuse(dir, fmt::format("{} is a link (to {}) that lemmalab did not make; lemmalab follows no "
                            "link in a results folder: remove it, or choose another --out",
                            path.string(), target.string()));
  };
  if (IsLink(store)) foreign_link(store);
  if (Exists(store)) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(store, ec)) {
      const std::string name = entry.path().filename().string();
      if (name == kCurrent) {
        if (!IsLink(entry.path()) ||
            GenerationNumber(std::filesystem::read_symlink(entry.path(), ec).string()) < 0) {
          foreign_link(entry.path());
        }
      } else if (IsLink(entry.path())) {
        foreign_link(entry.path());
      }
    }
  }
  for (const std::string_view name : kResultFiles) {
    const std::filesystem::path path = dir / name;
    if (!IsLink(path)) {
      // Beside a store, every results file is one of its links: a plain one is not lemmalab's.
      if (Exists(store) && Exists(path)) {
        Refuse(dir, fmt::format("{} was not written by lemmalab (its results are links into {}); "
                                "lemmalab replaces only results it wrote: move it, or choose "
                                "another --out",
                                path.string(), store.string()));
      }
      continue;
    }
    std::error_code ec;
    if (std::filesystem::read_symlink(path, ec) !=
        std::filesystem::path(ResultFolder::kStore) / kCurrent / name) {
      foreign_link(path);
    }
  }
  for (const std::string_view name : kDerivedFiles) {
    if (IsLink(dir / name)) foreign_link(dir / name);
  }
}

// The value of `key` in the meta table of the lemmalab database `file`; nullopt when the file is
// no lemmalab results database (no meta table with lemmalab's commit).
std::optional<std::string> DatabaseMeta(const std::filesystem::path& file, std::string_view key) {
  bool lemmalab = false;
  std::string value;
  try {
    ResultsReader reader(file);
    reader.ForEachRow("SELECT key, value FROM meta", [&](sqlite3_stmt* row) {
      const std::string name = ResultsReader::Text(row, 0);
      lemmalab = lemmalab || name == "commit";
      if (name == key) value = ResultsReader::Text(row, 1);
    });
  } catch (const UserError&) {
    return std::nullopt;  // not a database, or no meta table
  }
  return lemmalab ? std::optional(value) : std::nullopt;
}

}  // namespace

void RequireFolderFor(const std::filesystem::path& dir, std::string_view command) {
  RequireOwnLinks(dir);
  // The kind of results the folder holds, from the files each kind writes.
  std::string kind;
  const std::filesystem::path database = dir / ResultsWriter::kDatabase;
  if (Exists(database)) {
    const std::optional<std::string> meta = DatabaseMeta(database, "kind");
    if (!meta) {
      Refuse(dir, fmt::format("{} is not a lemmalab results database; lemmalab replaces only "
                              "results it wrote: move it, or choose another --out",
                              database.string()));
    }
    // Databases before the run's kind was recorded: a check's has check.json beside it (unless
    // the check stopped between publishing its run and its verdicts).
    kind = !meta->empty() ? *meta : Exists(dir / "check.json") ? "check" : "run";
  } else if (Exists(dir / "check.json")) {
    kind = "check";  // a check over several seeds: its runs are in folders of their own
  } else if (Exists(dir / ResultFolder::kStore)) {
    kind = "run";  // a run stopped before its first publication
  } else if (Exists(dir / "trace.csv")) {
    kind = "trace";
  } else {
    std::vector<std::string_view> names(std::begin(kResultFiles), std::end(kResultFiles));
    names.insert(names.end(), std::begin(kDerivedFiles), std::end(kDerivedFiles));
    for (const std::string_view name : names) {
      if (Exists(dir / name)) {
        Refuse(dir, fmt::format("{} was not written by lemmalab (no lemmalab results database is "
                                "beside it); lemmalab replaces only results it wrote: move it, "
                                "or choose another --out",
                                (dir / name).string()));
      }
    }
    return;
  }
  if (kind != KindOfCommand(command)) {
    Refuse(dir, fmt::format("it holds the results of a lemmalab {}, which {} would replace or mix "
                            "with its own; choose another --out (a folder holds one kind of "
                            "results)",
                            kind, command));
  }
}

std::string_view KindOfCommand(std::string_view command) {
  return command.substr(command.rfind(' ') + 1);
}

std::ofstream CreateFresh(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);  // a link is removed, not what it points to
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw UserError(fmt::format("{}: cannot create: {}", path.string(), std::strerror(errno)));
  }
  return out;
}

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
  // What described the earlier results (a report, verdicts) describes them no longer.
  for (const std::string_view name : kDerivedFiles) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_ / name, ignored);  // a link goes, not what it points to
  }
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
