// A results folder whose files change all at once (issue 21, finding 4: a commit that failed
// half-way left metrics.csv and params.npy of one run beside results.sqlite of another).
//
// Layout of DIR:
//   results.sqlite, metrics.csv, ...   links to .results/current/<file>, made once
//   .results/current                   a link to the generation readers see
//   .results/gen-<n>/                  one complete set of files
//   .results/next/                     the set being written (and a run's checkpoints)
//   .lock                              engine/directory_lock.h
// Publish turns `next` into a new generation and then points `current` at it with one rename(2):
// a reader that opens DIR/metrics.csv and DIR/params.npy sees both files of the old set or both
// of the new one, never a mix, and a process stopped at any moment leaves one complete set in
// place. Files a reader still holds open stay readable after the switch (the old generation is
// unlinked, not overwritten). A folder written by an older lemmalab (plain files) is adopted the
// same way: its files become generation gen-0 by hard links, then links replace them one at a
// time, each showing the same bytes as before, before the switch.
#pragma once

#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace lemmalab {

class ResultFolder {
 public:
  explicit ResultFolder(std::filesystem::path dir);

  static constexpr std::string_view kStore = ".results";

  // DIR/.results/next: where the files of the set being written go.
  std::filesystem::path staging() const;

  // An empty staging folder (what an earlier writer left there removed).
  void ResetStaging();
  // Removes the staging folder and everything in it; never throws.
  void RemoveStaging() noexcept;

  // Makes the staged files `names` DIR's results (see the top of this file); UserError naming
  // the folder when the file system refuses. Anything else staged (a run's checkpoints) is
  // removed, and the staging folder is gone afterwards.
  void Publish(std::span<const std::string_view> names);

 private:
  std::filesystem::path Store() const { return dir_ / kStore; }
  // The generation a new set becomes: one past the largest gen-<n> in the store.
  std::string NextGeneration() const;
  // Points `current` at `generation` with one rename.
  void Switch(const std::string& generation);
  // Replaces DIR/name by the link to .results/current/name with one rename.
  void LinkIntoPlace(std::string_view name);
  // Files of an older layout among `names` become a generation of their own (gen-0).
  void AdoptPlainFiles(std::span<const std::string_view> names);

  std::filesystem::path dir_;
};

// The rules of a results folder, checked when a command takes it (DirectoryLock):
//  - lemmalab follows no link in it that it did not make: .results, its generations and its
//    staging folder are folders, `current` names a generation, and each results file is absent,
//    a plain file of an older layout, or the link lemmalab made;
//  - it holds one kind of results, the command's (run, check, sweep or trace; the database's
//    meta "kind" says which, or else the files each kind writes): another command is refused,
//    since writing there would replace or mix with results not its own;
//  - a file of a name lemmalab writes (metrics.csv, runs.csv, ...) that no lemmalab results
//    database accompanies is the user's, and is never adopted, replaced or deleted: refused.
// UserError naming the folder, the file and what to do.
void RequireFolderFor(const std::filesystem::path& dir, std::string_view command);

// The kind of results `command` writes: "lemmalab check" -> "check".
std::string_view KindOfCommand(std::string_view command);

// The files that describe a folder's results (lemmalab report's tables and figures, a check's
// verdicts): removed whenever the results change, so that none describes results that are gone.
inline constexpr std::string_view kDerivedFiles[] = {"summary.csv", "report.md", "plots",
                                                     "check.json", "check.md"};

// Opens `path` as a new file for writing: whatever had that name (a file, or a link to somewhere
// else) is removed first, so that a write never goes through a link. UserError when it cannot.
std::ofstream CreateFresh(const std::filesystem::path& path);

// fsync(2) of a file or folder, so that a rename that follows is not ordered before the data
// on a crash of the machine; UserError when the file system reports a failure (a folder it
// cannot sync, EINVAL, is not one: the files in it are synced regardless).
void SyncToDisk(const std::filesystem::path& path);

// Throws, when std::filesystem's operation `what` ("create", "move into place") on `path` failed
// with `ec`, the UserError "<path>: cannot <what>: <reason>".
void CheckFileOperation(const std::error_code& ec, std::string_view what,
                        const std::filesystem::path& path);

}  // namespace lemmalab
