#include "engine/checkpoint.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <optional>

#include "core/error.h"

namespace lemmalab {
namespace {

// A SQLite handle closed on every path.
struct Database {
  sqlite3* db = nullptr;
  ~Database() { sqlite3_close(db); }
};

[[noreturn]] void Fail(const std::filesystem::path& path, std::string_view what, sqlite3* db) {
  throw UserError(fmt::format("{}: {}: {}", path.string(), what,
                              db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

// A CRC-32 (zlib) of a snapshot: every item's path, kind and bytes, in path order. A state file
// records it, and a restore recomputes it: a file damaged or edited since is refused whole.
std::uint32_t Checksum(const StateSnapshot& snapshot) {
  std::uint32_t crc = 0;
  for (const auto& [name, item] : snapshot) {
    const std::uint64_t sizes[2] = {name.size(), item.bytes.size()};
    crc = Crc32(crc, std::as_bytes(std::span(sizes)));
    crc = Crc32(crc, std::as_bytes(std::span(name.data(), name.size())));
    crc = Crc32(crc, std::as_bytes(std::span(&item.kind, 1)));
    crc = Crc32(crc, item.bytes);
  }
  return crc;
}

}  // namespace

std::uint32_t Crc32(std::uint32_t crc, std::span<const std::byte> bytes) {
  uLong sum = crc;
  while (!bytes.empty()) {
    const std::size_t chunk = std::min<std::size_t>(bytes.size(), 1u << 30);
    sum = crc32(sum, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(chunk));
    bytes = bytes.subspan(chunk);
  }
  return static_cast<std::uint32_t>(sum);
}

void WriteStateFile(const std::filesystem::path& path, const StateSnapshot& snapshot) {
  std::filesystem::path partial = path;
  partial += ".partial";
  std::filesystem::remove(partial);
  {
    Database file;
    if (sqlite3_open(partial.c_str(), &file.db) != SQLITE_OK)
      Fail(partial, "cannot create", file.db);
    const std::string cannot_write = fmt::format("{}: cannot write", partial.string());
    ExecSql(file.db,
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;"
            "CREATE TABLE state(path TEXT PRIMARY KEY, kind TEXT NOT NULL, bytes BLOB NOT NULL);"
            "CREATE TABLE integrity(crc32 INTEGER NOT NULL);",
            cannot_write);
    ExecSql(file.db, fmt::format("INSERT INTO integrity VALUES ({})", Checksum(snapshot)).c_str(),
            cannot_write);
    sqlite3_stmt* insert = nullptr;
    if (sqlite3_prepare_v2(file.db, "INSERT INTO state VALUES (?, ?, ?)", -1, &insert, nullptr) !=
        SQLITE_OK) {
      Fail(partial, "cannot write", file.db);
    }
    for (const auto& [name, item] : snapshot) {
      sqlite3_reset(insert);
      sqlite3_bind_text(insert, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
      const std::string_view kind = StateKindName(item.kind);
      sqlite3_bind_text(insert, 2, kind.data(), static_cast<int>(kind.size()), SQLITE_STATIC);
      // A zero-length blob must still be a blob, not NULL.
      static const std::byte kEmpty{};
      sqlite3_bind_blob64(insert, 3, item.bytes.empty() ? &kEmpty : item.bytes.data(),
                          item.bytes.size(), SQLITE_STATIC);
      if (sqlite3_step(insert) != SQLITE_DONE) {
        sqlite3_finalize(insert);
        Fail(partial, "cannot write", file.db);
      }
    }
    sqlite3_finalize(insert);
    ExecSql(file.db, "COMMIT", cannot_write);
    if (sqlite3_close(file.db) != SQLITE_OK) Fail(partial, "cannot close", file.db);
    file.db = nullptr;
  }
  // The bytes reach the disk before the name does: a machine that crashes after the rename
  // finds the whole file.
  SyncToDisk(partial);
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  CheckFileOperation(ec, "move into place", path);
}

StateSnapshot ReadStateFile(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw UserError(fmt::format(
        "{}: the checkpoint's state file is missing (was the folder copied without it?)",
        path.string()));
  }
  Database file;
  if (sqlite3_open_v2(path.c_str(), &file.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Fail(path, "cannot open", file.db);
  }
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(file.db, "SELECT path, kind, bytes FROM state", -1, &query, nullptr) !=
      SQLITE_OK) {
    Fail(path, "not a lemmalab state file", file.db);
  }
  StateSnapshot snapshot;
  int rc;
  while ((rc = sqlite3_step(query)) == SQLITE_ROW) {
    const auto* path_text = reinterpret_cast<const char*>(sqlite3_column_text(query, 0));
    const auto* kind_text = reinterpret_cast<const char*>(sqlite3_column_text(query, 1));
    if (path_text == nullptr || kind_text == nullptr) {
      sqlite3_finalize(query);
      throw UserError(fmt::format("{}: not a lemmalab state file (an item without a name or kind)",
                                  path.string()));
    }
    const std::string name = path_text;
    const std::string_view kind = kind_text;
    const std::optional<StateKind> known = StateKindNamed(kind);
    if (!known) {
      sqlite3_finalize(query);
      throw UserError(
          fmt::format("{}: state item '{}' has an unknown kind '{}'", path.string(), name, kind));
    }
    StateItem item;
    item.kind = *known;
    const auto* bytes = static_cast<const std::byte*>(sqlite3_column_blob(query, 2));
    item.bytes.assign(bytes, bytes + sqlite3_column_bytes(query, 2));
    snapshot.emplace(name, std::move(item));
  }
  sqlite3_finalize(query);
  if (rc != SQLITE_DONE) Fail(path, "cannot read", file.db);
  if (sqlite3_prepare_v2(file.db, "SELECT crc32 FROM integrity", -1, &query, nullptr) !=
      SQLITE_OK) {
    Fail(path, "not a lemmalab state file (it records no checksum)", file.db);
  }
  const bool recorded = sqlite3_step(query) == SQLITE_ROW;
  const auto expected = static_cast<std::uint32_t>(sqlite3_column_int64(query, 0));
  sqlite3_finalize(query);
  const std::uint32_t actual = Checksum(snapshot);
  if (!recorded || expected != actual) {
    throw UserError(fmt::format(
        "{}: the checkpoint's state file is damaged (CRC-32 {:08x} recorded, {:08x} read); it "
        "cannot be resumed: run the spec again without --resume",
        path.string(), expected, actual));
  }
  return snapshot;
}

Checkpointer::Checkpointer(ResultsWriter& writer, std::filesystem::path staging, std::int64_t every,
                           Transport* transport, int rank)
    : writer_(writer),
      staging_(std::move(staging)),
      every_(every),
      transport_(transport),
      rank_(rank) {}

std::filesystem::path Checkpointer::StateFile(const CheckpointMark& mark) const {
  return staging_ / fmt::format("state-run{}-step{}-rank{}.sqlite", mark.run, mark.step, rank_);
}

void Checkpointer::Meet() const {
  if (transport_ == nullptr) return;
  std::int64_t nothing = 0;
  transport_->Sum(std::span(&nothing, 1));
}

void Checkpointer::Save(const CheckpointMark& mark, const StateSnapshot& state) {
  std::error_code ec;
  std::filesystem::create_directories(staging_, ec);  // a rank whose file system rank 0 cannot see
  const std::filesystem::path file = StateFile(mark);
  WriteStateFile(file, state);
  Meet();
  writer_.CommitCheckpoint(mark);
  Meet();
  // This process's older state files: the committed checkpoint no longer names them.
  const std::string own = fmt::format("-rank{}.sqlite", rank_);
  for (const auto& entry : std::filesystem::directory_iterator(staging_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("state-run") && name.ends_with(own) && entry.path() != file) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

CheckpointMark Checkpointer::SharedMark() const {
  if (transport_ == nullptr) return writer_.resumed();
  std::array<std::int64_t, 2> mark = {0, 0};
  if (rank_ == 0) mark = {writer_.resumed().run, writer_.resumed().step};
  transport_->Sum(mark);
  return {mark[0], mark[1]};
}

StateSnapshot Checkpointer::Load(const CheckpointMark& mark) const {
  return ReadStateFile(StateFile(mark));
}

}  // namespace lemmalab
