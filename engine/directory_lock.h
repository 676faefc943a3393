// An exclusive lock on a results folder, so that two lemmalab processes (run, check or sweep)
// never write into the same folder at once: the second is refused with a clear error instead of
// both "succeeding" with a mix of each other's files. The lock is flock(2) on DIR/.lock, which
// the kernel releases when the process ends however it ends (SIGKILL included), so a stale lock
// never blocks the next command; the file is removed when the lock is released normally, and so
// is the folder when the lock created it and nothing was written there (a command that fails
// leaves no empty folder behind).
// Within one process the lock is re-entrant (check locks its folder, and the run it makes there
// locks it again).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace lemmalab {

class DirectoryLock {
 public:
  // Creates `dir` if needed and locks it; UserError naming the folder and the holder's command
  // and pid when another process holds it. `command` ("lemmalab sweep") is what this process
  // tells a later one.
  DirectoryLock(const std::filesystem::path& dir, std::string_view command);
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept : key_(std::exchange(other.key_, {})) {}
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  static constexpr std::string_view kFile = ".lock";

 private:
  std::string key_;  // the folder's canonical path; empty once moved from
};

}  // namespace lemmalab
