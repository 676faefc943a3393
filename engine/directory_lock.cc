#include "engine/directory_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "engine/result_folder.h"

namespace lemmalab {
namespace {

struct Held {
  int fd = -1;
  int count = 0;
  std::filesystem::path file;
  bool created = false;  // the folder did not exist: removed again if nothing was written there
};

std::mutex g_mutex;
std::map<std::string, Held> g_held;  // this process's locks, by folder

// Opens and locks `file`; -1 with errno set when another process holds it. After the lock is
// taken the path must still name the locked file: a holder that released it meanwhile has
// unlinked it, and a lock on an unlinked file locks nothing.
int LockFile(const std::filesystem::path& file) {
  for (;;) {
    // Never through a link: a .lock linked to a file elsewhere would have that file truncated.
    const int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      close(fd);
      errno = error;
      return -1;
    }
    struct stat opened {
    }, named{};
    if (fstat(fd, &opened) == 0 && stat(file.c_str(), &named) == 0 &&
        opened.st_ino == named.st_ino && opened.st_dev == named.st_dev) {
      return fd;
    }
    close(fd);
  }
}

std::string Holder(const std::filesystem::path& file) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "pid unknown";
  std::string text(256, '\0');
  const ssize_t n = read(fd, text.data(), text.size());
  close(fd);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text.empty() ? "pid unknown" : text;
}

// Releases the lock `it` holds and forgets it (g_mutex held). The file is unlinked while still
// locked: a process that opened it meanwhile finds, once it gets the lock, that the path no
// longer names it, and starts over (LockFile). A folder the lock created goes too when nothing
// was written there.
void Release(std::map<std::string, Held>::iterator it) {
  unlink(it->second.file.c_str());
  close(it->second.fd);
  if (it->second.created) {
    std::error_code ignored;  // fails, as it should, when results were written there
    std::filesystem::remove(it->second.file.parent_path(), ignored);
  }
  g_held.erase(it);
}

}  // namespace

DirectoryLock::DirectoryLock(const std::filesystem::path& dir, std::string_view command) {
  std::error_code ec;
  const bool created = !std::filesystem::exists(dir);
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format("--out {}: cannot create the results folder: {}", dir.string(),
                                ec ? ec.message() : "a file of that name exists"));
  }
  key_ = std::filesystem::canonical(dir).string();
  const std::lock_guard guard(g_mutex);
  Held& held = g_held[key_];
  if (held.count++ > 0) return;
  held.file = dir / kFile;
  held.created = created;
  held.fd = LockFile(held.file);
  if (held.fd < 0) {
    const int error = errno;
    g_held.erase(key_);
    if (created) std::filesystem::remove(dir, ec);
    if (error == EWOULDBLOCK) {
      throw UserError(fmt::format(
          "--out {}: another lemmalab process ({}) is writing its results there; wait for it "
          "to finish or choose another --out",
          dir.string(), Holder(dir / kFile)));
    }
    if (error == ELOOP) {
      throw UserError(fmt::format(
          "--out {}: {} is a link that lemmalab did not make; lemmalab follows no link in a "
          "results folder: remove it, or choose another --out",
          dir.string(), (dir / kFile).string()));
    }
    throw UserError(fmt::format("--out {}: cannot lock {}: {}", dir.string(),
                                (dir / kFile).string(), std::strerror(error)));
  }
  try {
    RequireFolderFor(dir, command);
  } catch (...) {
    Release(g_held.find(key_));
    throw;
  }
  const std::string holder = fmt::format("{}, pid {}", command, getpid());
  // The text only helps a refused process's message; the lock holds without it.
  if (ftruncate(held.fd, 0) != 0 || pwrite(held.fd, holder.data(), holder.size(), 0) < 0) {
    (void)0;
  }
}

DirectoryLock::~DirectoryLock() {
  if (key_.empty()) return;
  const std::lock_guard guard(g_mutex);
  const auto it = g_held.find(key_);
  if (it == g_held.end() || --it->second.count > 0) return;
  Release(it);
}

}  // namespace lemmalab
