// A batched optimizer's state declared as the CPU optimizer declares its own
// (optimizers/optimizer_state.h), each member a buffer in the backend's memory: the declaration
// hands an OptimizerState a host copy of the buffer, taken from the device first and, when the
// state is being restored from a checkpoint, put back on the device afterwards. One declaration
// per batched optimizer therefore serves probes (Observe) and checkpoints, as on the CPU.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "batched/backend.h"
#include "optimizers/optimizer_state.h"

namespace lemmalab::batched {

// The host copies of device buffers, kept between declarations: a copy is taken from the device
// at most once per step (Invalidate() after each), however many probes look at it.
template <typename T>
class HostCopies {
 public:
  void Invalidate() { ++version_; }

  // The copy of a buffer of d elements, or of n rows of d.
  Vector<T>& Of(const Buffer<T>& buffer) {
    Copy& copy = copies_[&buffer];
    if (copy.version != version_) {
      copy.vector.resize(static_cast<Eigen::Index>(buffer.size()));
      buffer.Download({copy.vector.data(), buffer.size()});
      copy.version = version_;
    }
    return copy.vector;
  }
  std::vector<Vector<T>>& RowsOf(const Buffer<T>& buffer, std::int64_t d) {
    RowCopies& copy = rows_[&buffer];
    if (copy.version != version_) {
      const std::size_t n = d == 0 ? 0 : buffer.size() / static_cast<std::size_t>(d);
      copy.rows.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        copy.rows[i].resize(d);
        buffer.Download({copy.rows[i].data(), static_cast<std::size_t>(d)}, i * d);
      }
      copy.version = version_;
    }
    return copy.rows;
  }

 private:
  struct Copy {
    Vector<T> vector;
    std::uint64_t version = 0;
  };
  struct RowCopies {
    std::vector<Vector<T>> rows;
    std::uint64_t version = 0;
  };
  std::uint64_t version_ = 1;
  std::map<const Buffer<T>*, Copy> copies_;
  std::map<const Buffer<T>*, RowCopies> rows_;
};

// Where a queried quantity lives on the device: a buffer of d elements (row < 0) or row `row` of
// a buffer of n rows of d.
template <typename T>
struct DeviceLocation {
  const Buffer<T>* buffer = nullptr;
  std::int64_t row = -1;
  std::int64_t d = 0;  // the length of the quantity's vector
};

// OptimizerState's vocabulary for device buffers (see optimizers/optimizer_state.h for who sees
// what): Replicated and Server for d elements, PerWorker for n rows of d. With a DeviceLocation
// instead of host copies it only answers a query (OptimizerState(quantity, worker)) with the
// buffer that holds the quantity, copying nothing: the same declarations decide who sees what.
template <typename T>
class DeviceState {
 public:
  DeviceState(OptimizerState<T>& state, HostCopies<T>& copies) : state_(state), copies_(&copies) {}
  DeviceState(OptimizerState<T>& state, DeviceLocation<T>& location)
      : state_(state), location_(&location) {}

  void Replicated(const StateTag& tag, Buffer<T>& buffer, bool seen = true) {
    if (location_ != nullptr) {
      return Locate(buffer, [&](Vector<T>& v) { state_.Replicated(tag, v, seen); });
    }
    Vector<T>& copy = copies_->Of(buffer);
    state_.Replicated(tag, copy, seen);
    Restore(copy, buffer);
  }
  void Server(const StateTag& tag, Buffer<T>& buffer, bool seen = true) {
    if (location_ != nullptr) {
      return Locate(buffer, [&](Vector<T>& v) { state_.Server(tag, v, seen); });
    }
    Vector<T>& copy = copies_->Of(buffer);
    state_.Server(tag, copy, seen);
    Restore(copy, buffer);
  }
  void PerWorker(const StateTag& tag, Buffer<T>& rows, std::int64_t d, bool seen = true) {
    if (location_ != nullptr) {
      return LocateRows(rows, d,
                        [&](std::vector<Vector<T>>& v) { state_.PerWorker(tag, v, seen); });
    }
    std::vector<Vector<T>>& copy = copies_->RowsOf(rows, d);
    state_.PerWorker(tag, copy, seen);
    if (!state_.restoring()) return;
    for (std::size_t i = 0; i < copy.size(); ++i) {
      rows.Upload({copy[i].data(), static_cast<std::size_t>(d)}, i * d);
    }
  }
  // Values probes see that are not state (OptimizerState::Shows, PerWorkerShows, ServerShows).
  void Shows(Quantity quantity, const Buffer<T>& buffer, bool seen = true) {
    if (!seen || state_.restoring()) return;
    if (location_ != nullptr) {
      return Locate(buffer, [&](Vector<T>& v) { state_.Shows(quantity, v); });
    }
    state_.Shows(quantity, copies_->Of(buffer));
  }
  void PerWorkerShows(Quantity quantity, const Buffer<T>& rows, std::int64_t d, bool seen = true) {
    if (!seen || state_.restoring()) return;
    if (location_ != nullptr) {
      return LocateRows(rows, d,
                        [&](std::vector<Vector<T>>& v) { state_.PerWorkerShows(quantity, v); });
    }
    state_.PerWorkerShows(quantity, copies_->RowsOf(rows, d));
  }
  void ServerShows(Quantity quantity, const Buffer<T>& buffer, bool seen = true) {
    if (!seen || state_.restoring()) return;
    if (location_ != nullptr) {
      return Locate(buffer, [&](Vector<T>& v) { state_.ServerShows(quantity, v); });
    }
    state_.ServerShows(quantity, copies_->Of(buffer));
  }
  // Host values: counters and flags.
  template <typename V>
  void Value(std::string_view name, V& value) {
    state_.Value(name, value);
  }
  // Values no probe observes kept on the device (per-layer doubles), saved as a host vector.
  void Value(std::string_view name, Buffer<double>& buffer) {
    if (location_ != nullptr) return;  // (no probe observes it)
    std::vector<double> copy = buffer.ToHost();
    state_.Value(name, copy);
    if (state_.restoring()) buffer.Upload(copy);
  }

 private:
  void Restore(const Vector<T>& copy, Buffer<T>& buffer) {
    if (state_.restoring()) buffer.Upload({copy.data(), static_cast<std::size_t>(copy.size())});
  }
  // Declares a stand-in for `buffer` (an empty vector, nothing copied); the query that finds it
  // found the buffer.
  template <typename Declare>
  void Locate(const Buffer<T>& buffer, Declare declare) {
    Vector<T> stand_in;
    const bool before = state_.found() != nullptr;
    declare(stand_in);
    if (!before && state_.found() == &stand_in) {
      *location_ = {&buffer, -1, static_cast<std::int64_t>(buffer.size())};
    }
  }
  template <typename Declare>
  void LocateRows(const Buffer<T>& rows, std::int64_t d, Declare declare) {
    std::vector<Vector<T>> stand_ins(d == 0 ? 0 : rows.size() / static_cast<std::size_t>(d));
    const bool before = state_.found() != nullptr;
    declare(stand_ins);
    if (before || state_.found() == nullptr || stand_ins.empty()) return;
    const std::ptrdiff_t row = state_.found() - stand_ins.data();
    if (row >= 0 && row < static_cast<std::ptrdiff_t>(stand_ins.size())) {
      *location_ = {&rows, static_cast<std::int64_t>(row), d};
    }
  }

  OptimizerState<T>& state_;
  HostCopies<T>* copies_ = nullptr;
  DeviceLocation<T>* location_ = nullptr;
};

}  // namespace lemmalab::batched
