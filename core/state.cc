#include "core/state.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lemmalab {

std::string_view StateKindName(StateKind kind) {
  switch (kind) {
    case StateKind::kF32:
      return "f32";
    case StateKind::kF64:
      return "f64";
    case StateKind::kI64:
      return "i64";
    case StateKind::kU64:
      return "u64";
    case StateKind::kI32:
      return "i32";
    case StateKind::kU32:
      return "u32";
    case StateKind::kU8:
      return "u8";
    case StateKind::kBool:
      return "bool";
    case StateKind::kText:
      return "text";
  }
  return "unknown";
}

std::optional<StateKind> StateKindNamed(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(StateKind::kText); ++k) {
    if (StateKindName(static_cast<StateKind>(k)) == name) return static_cast<StateKind>(k);
  }
  return std::nullopt;
}

void StateArchive::operator()(std::string_view name, std::string& text) {
  if (!restoring()) {
    Save(name, StateKind::kText, std::as_bytes(std::span<const char>(text.data(), text.size())));
    return;
  }
  const std::span<const std::byte> bytes = Load(name, StateKind::kText);
  text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void SavingArchive::Save(std::string_view name, StateKind kind, std::span<const std::byte> bytes) {
  const std::string path = Path(name);
  const auto [it, inserted] =
      snapshot_.emplace(path, StateItem{kind, std::vector<std::byte>(bytes.begin(), bytes.end())});
  LEMMALAB_CHECK(inserted, "state item '{}' saved twice", path);
}

std::span<const std::byte> SavingArchive::Load(std::string_view name, StateKind /*kind*/) {
  throw InternalError(fmt::format("state item '{}' loaded while saving", Path(name)));
}

void SavingArchive::Fail(std::string_view name, std::string_view what) const {
  throw InternalError(fmt::format("saving state item '{}': expected {}", Path(name), what));
}

void RestoringArchive::Save(std::string_view name, StateKind /*kind*/,
                            std::span<const std::byte> /*bytes*/) {
  throw InternalError(fmt::format("state item '{}' saved while restoring", Path(name)));
}

std::span<const std::byte> RestoringArchive::Load(std::string_view name, StateKind kind) {
  const std::string path = Path(name);
  const auto it = snapshot_.find(path);
  if (it == snapshot_.end()) Fail(name, "an item of this name, which it does not have");
  if (it->second.kind != kind) {
    Fail(name, fmt::format("kind {}, but it holds {}", StateKindName(kind),
                           StateKindName(it->second.kind)));
  }
  if (!read_.insert(path).second) Fail(name, "to be read once, but it was read twice");
  return it->second.bytes;
}

std::size_t RestoringArchive::StoredItems() const {
  const std::string prefix = Path("");
  std::size_t n = 0;
  for (auto it = snapshot_.lower_bound(prefix);
       it != snapshot_.end() && it->first.starts_with(prefix); ++it) {
    ++n;
  }
  return n;
}

void RestoringArchive::Fail(std::string_view name, std::string_view what) const {
  throw UserError(
      fmt::format("{}: state item '{}': expected {} (was it written by another spec or build?)",
                  origin_, Path(name), what));
}

void RestoringArchive::Finish() const {
  for (const auto& [path, item] : snapshot_) {
    if (!read_.contains(path)) {
      throw UserError(fmt::format(
          "{}: state item '{}' is not part of this run's state (was it written by another spec "
          "or build?)",
          origin_, path));
    }
  }
}

}  // namespace lemmalab
