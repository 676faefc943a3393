// A run's state for checkpoints: what each component carries from one step to the next, saved
// and restored through one method.
//
// A stateful component (an optimizer, its exchange and error feedback, a compressor with a warm
// start, a probe's running sums) has
//   void Persist(StateArchive& archive);
// which names every member that a later step reads before it writes it:
//   archive("m", m_);  archive("t", t_);  archive.Nested("exchange", exchange_);
// Saving, the archive copies the members out; restoring, it overwrites them. One method does
// both, so what is saved and what is restored cannot disagree. Members a step overwrites before
// reading them (scratch, the last message, the last encode's statistics) are not state.
//
// Names form paths ("run/optimizer/worker 2/e"). Restoring checks the kind and requires every
// name the save wrote to be read exactly once, so a checkpoint is restored whole or not at all.
// Sizes come from the run, never from the file: an array is restored only at the length the run
// gave it, or, for state sized at a later step, declared with Later(), at the length it will
// have. Values are stored as their bytes: a restored float is the saved float, bit for bit.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/types.h"

namespace lemmalab {

enum class StateKind : std::uint8_t { kF32, kF64, kI64, kU64, kI32, kU32, kU8, kBool, kText };

std::string_view StateKindName(StateKind kind);
// The kind StateKindName calls `name`, if any.
std::optional<StateKind> StateKindNamed(std::string_view name);

// One saved item: its kind and its elements' bytes (native byte order).
struct StateItem {
  StateKind kind = StateKind::kU8;
  std::vector<std::byte> bytes;
};

// An Eigen vector, matrix or array that owns its elements.
template <typename D>
concept EigenDense = std::is_base_of_v<Eigen::PlainObjectBase<D>, D>;

// Everything a save wrote, by path.
using StateSnapshot = std::map<std::string, StateItem, std::less<>>;

class StateArchive {
 public:
  virtual ~StateArchive() = default;

  virtual bool restoring() const = 0;

  // Arrays of numbers (Eigen vectors and matrices, std::vectors); a matrix also saves its number
  // of rows, under name/rows. Restoring requires the shape the run gave the member before the
  // restore: no size comes from the file.
  template <EigenDense D>
  void operator()(std::string_view name, D& m) {
    Dense(name, m, m.rows(), m.cols(), /*may_be_empty=*/false);
  }
  template <typename E>
  requires std::is_arithmetic_v<E>
  void operator()(std::string_view name, std::vector<E>& v) {
    Array(name, v.data(), v.size(), v.size(), false, [&](std::size_t n) {
      v.resize(n);
      return v.data();
    });
  }
  // State a component sizes at a later step than its construction (local parameters at the first
  // local step, a frozen denominator when the warm-up ends): empty until then, `rows` x `cols`
  // afterwards. Restoring accepts these two shapes and no other.
  template <EigenDense D>
  void Later(std::string_view name, D& m, Eigen::Index rows, Eigen::Index cols = 1) {
    Dense(name, m, rows, cols, /*may_be_empty=*/true);
  }
  // One vector or matrix per worker (or per layer): name/count, then name/0, name/1, ...
  // Restoring requires as many as the run holds, each of its shape (or, with Later, each empty
  // or rows x cols).
  template <EigenDense D>
  void operator()(std::string_view name, std::vector<D>& vectors) {
    Vectors(name, vectors, [&](std::string_view item, D& v) { (*this)(item, v); });
  }
  template <EigenDense D>
  void Later(std::string_view name, std::vector<D>& vectors, Eigen::Index rows,
             Eigen::Index cols = 1) {
    Vectors(name, vectors, [&](std::string_view item, D& v) { Later(item, v, rows, cols); });
  }
  // Scalars.
  template <typename E>
  requires std::is_arithmetic_v<E>
  void operator()(std::string_view name, E& x) {
    Array(name, &x, 1, 1, false, [&](std::size_t) { return &x; });
  }
  template <typename E>
  void operator()(std::string_view name, std::optional<E>& x) {
    bool present = x.has_value();
    (*this)(std::string(name) + "?", present);
    if (!present) {
      x.reset();
      return;
    }
    if (!x) x.emplace();
    (*this)(name, *x);
  }
  void operator()(std::string_view name, std::string& text);

  // A member with its own Persist method, under `name`.
  template <typename S>
  void Nested(std::string_view name, S& stateful) {
    Scope(name, [&] { stateful.Persist(*this); });
  }
  // Whatever `f` visits, under `name`.
  template <typename F>
  void Scope(std::string_view name, F&& f) {
    const std::size_t size = prefix_.size();
    prefix_.append(name).push_back('/');
    f();
    prefix_.resize(size);
  }
  // What f(item) visits for each of `items` (one per worker, say), under name/0, name/1, ...
  template <typename V, typename F>
  void Each(std::string_view name, V& items, F&& f) {
    Scope(name, [&] {
      for (std::size_t i = 0; i < items.size(); ++i) Scope(std::to_string(i), [&] { f(items[i]); });
    });
  }
  // The same for a vector whose length is state too: saved as name/count, restored first.
  template <typename V, typename F>
  void List(std::string_view name, V& items, F&& f) {
    std::uint64_t count = items.size();
    (*this)(std::string(name) + "/count", count);
    if (restoring()) Scope(name, [&] { RequireStored("", count); });
    items.resize(count);
    Each(name, items, std::forward<F>(f));
  }

 protected:
  // The path of `name` in the current scope.
  std::string Path(std::string_view name) const { return prefix_ + std::string(name); }
  // Saving: stores the bytes under the path. Restoring: returns the stored bytes after checking
  // that the path exists, has `kind` and has not been read before.
  virtual void Save(std::string_view name, StateKind kind, std::span<const std::byte> bytes) = 0;
  virtual std::span<const std::byte> Load(std::string_view name, StateKind kind) = 0;
  // Restoring: UserError naming the checkpoint and the path ("expected <what>").
  [[noreturn]] virtual void Fail(std::string_view name, std::string_view what) const = 0;
  // Restoring: the number of stored items under the current scope. A count read from a
  // checkpoint is checked against it before anything is sized by it, so that a damaged count
  // is refused instead of allocating what it says.
  virtual std::size_t StoredItems() const = 0;
  // Restoring: UserError unless the scope holds `count` elements besides its count item (each
  // element is at least one item).
  void RequireStored(std::string_view name, std::uint64_t count) const {
    const std::size_t stored = StoredItems();
    if (stored == 0 || count > stored - 1) {
      Fail(name.empty() ? "count" : name,
           fmt::format("at most {} elements (the items stored), but it says {}",
                       stored > 0 ? stored - 1 : 0, count));
    }
  }

 private:
  template <typename E>
  static constexpr StateKind KindOf() {
    if constexpr (std::is_same_v<E, float>) return StateKind::kF32;
    if constexpr (std::is_same_v<E, double>) return StateKind::kF64;
    if constexpr (std::is_same_v<E, bool>) return StateKind::kBool;
    if constexpr (std::is_same_v<E, std::uint8_t>) return StateKind::kU8;
    if constexpr (std::is_integral_v<E> && sizeof(E) == 4)
      return std::is_signed_v<E> ? StateKind::kI32 : StateKind::kU32;
    if constexpr (std::is_integral_v<E> && sizeof(E) == 8)
      return std::is_signed_v<E> ? StateKind::kI64 : StateKind::kU64;
  }

  template <EigenDense D, typename F>
  void Vectors(std::string_view name, std::vector<D>& vectors, F&& each) {
    Scope(name, [&] {
      std::uint64_t count = vectors.size();
      (*this)("count", count);
      if (restoring() && count != vectors.size()) {
        Fail("count", fmt::format("{} (as this run has), but it says {}", vectors.size(), count));
      }
      for (std::size_t i = 0; i < vectors.size(); ++i) each(std::to_string(i), vectors[i]);
    });
  }

  // A matrix (or vector) whose shape before the restore must be `rows` x `cols`, or empty
  // where `may_be_empty`.
  template <EigenDense D>
  void Dense(std::string_view name, D& m, Eigen::Index rows, Eigen::Index cols, bool may_be_empty) {
    if constexpr (D::ColsAtCompileTime != 1) {
      Eigen::Index saved_rows = m.rows();
      (*this)(std::string(name) + "/rows", saved_rows);
      if (restoring() && saved_rows != rows && !(may_be_empty && saved_rows == 0)) {
        Fail(name, fmt::format("{} rows (as this run has), but it holds {}", rows, saved_rows));
      }
    }
    const auto length = static_cast<std::size_t>(rows * cols);
    Array(name, m.data(), static_cast<std::size_t>(m.size()), length, may_be_empty,
          [&](std::size_t n) {
            if (n == 0) {
              m.resize(D::RowsAtCompileTime == 1 ? 1 : 0, D::ColsAtCompileTime == 1 ? 1 : 0);
            } else if constexpr (D::ColsAtCompileTime == 1) {
              m.resize(rows);
            } else {
              m.resize(rows, cols);
            }
            return m.data();
          });
  }

  // Saving: stores the `count` elements at `data`. Restoring: requires the stored elements to
  // number `expected` (or none, where `may_be_empty`), then copies them into resize(n).
  template <typename E, typename Resize>
  void Array(std::string_view name, E* data, std::size_t count, std::size_t expected,
             bool may_be_empty, Resize resize) {
    static_assert(std::is_trivially_copyable_v<E>);
    constexpr StateKind kind = KindOf<E>();
    if (!restoring()) {
      Save(name, kind, std::as_bytes(std::span<const E>(data, count)));
      return;
    }
    const std::span<const std::byte> bytes = Load(name, kind);
    const std::size_t n = bytes.size() / sizeof(E);
    if (bytes.size() % sizeof(E) != 0) Fail(name, "a whole number of elements");
    if (n != expected && !(may_be_empty && n == 0)) {
      Fail(name, fmt::format("{}{} elements (as this run has), but it holds {}",
                             may_be_empty ? "none or " : "", expected, n));
    }
    E* out = resize(n);
    if (n > 0) std::memcpy(out, bytes.data(), bytes.size());
  }

  std::string prefix_;
};

// Saves whatever `f` visits into a snapshot.
class SavingArchive final : public StateArchive {
 public:
  bool restoring() const override { return false; }
  StateSnapshot& snapshot() { return snapshot_; }

 private:
  void Save(std::string_view name, StateKind kind, std::span<const std::byte> bytes) override;
  std::span<const std::byte> Load(std::string_view name, StateKind kind) override;
  [[noreturn]] void Fail(std::string_view name, std::string_view what) const override;
  std::size_t StoredItems() const override { return 0; }
  StateSnapshot snapshot_;
};

// Restores from a snapshot; Finish() requires that every item was read.
class RestoringArchive final : public StateArchive {
 public:
  // `origin` names the checkpoint in messages.
  RestoringArchive(const StateSnapshot& snapshot, std::string origin)
      : snapshot_(snapshot), origin_(std::move(origin)) {}
  bool restoring() const override { return true; }
  // UserError naming the first item the restore did not read.
  void Finish() const;

 private:
  void Save(std::string_view name, StateKind kind, std::span<const std::byte> bytes) override;
  std::span<const std::byte> Load(std::string_view name, StateKind kind) override;
  [[noreturn]] void Fail(std::string_view name, std::string_view what) const override;
  std::size_t StoredItems() const override;
  const StateSnapshot& snapshot_;
  std::string origin_;
  std::set<std::string, std::less<>> read_;
};

// The state `stateful` persists, as a snapshot; and the inverse, which requires the snapshot to
// hold exactly that state.
template <typename S>
StateSnapshot SaveState(S& stateful) {
  SavingArchive archive;
  stateful.Persist(archive);
  return std::move(archive.snapshot());
}
template <typename S>
void RestoreState(const StateSnapshot& snapshot, S& stateful, std::string origin = "checkpoint") {
  RestoringArchive archive(snapshot, std::move(origin));
  stateful.Persist(archive);
  archive.Finish();
}

}  // namespace lemmalab
