// An optimizer's state, declared once.
//
// Each vector an algorithm carries from one step to the next has a tag: its name (the paper's
// symbol, with where the paper computes it) and the Quantity probes observe it as, if any. An
// optimizer declares every member of its state, with its tag and who holds it, in one method,
//   void DeclareState(OptimizerState<T>& state) override {
//     state.PerWorker(workers_, [&](Worker& w) { state.Own(kMomentum, w.m); });
//     state.Replicated(kVariance, v_);
//     state.Nested("exchange", exchange_);
//     state.Value("t", t_);
//   }
// and everything that needs the list of an optimizer's state reads it there:
//   - checkpoints save and restore each member under its tag's name (core/state.h), and the
//     memory estimate measures what they save (engine/estimates.h);
//   - Observable::Observe finds a quantity among the members the queried worker holds;
//   - the step's trace records a member under its tag's symbol (trace.Vector(kMomentum.symbol,
//     w.m)), so that a trace, a checkpoint and a probe call it the same.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "core/state.h"
#include "core/types.h"
#include "optimizers/trace.h"

namespace lemmalab {

// Worker index meaning "the aggregation point" in Observe and LastEncode.
inline constexpr int kServer = -1;

// State an optimizer can expose to probes. Observe returns nullptr for what an algorithm does
// not have; per-layer scalars are vectors with one entry per layer.
enum class Quantity {
  kMomentum,        // m_t^(i): worker momentum (kServer: the server's or the synchronised m)
  kWorkerError,     // e_t^(i) / delta_t^(i): worker error feedback
  kServerError,     // e-bar_t / delta-bar_t: server error feedback
  kDenominator,     // b_t + eps: what Birder's update divides by (rho = eps bounds it below)
  kRawDenominator,  // b_t as in birder Alg. 1 line 7, before the constant is added
  kVariance,        // v_t: second-moment estimate (1-bit LAMB: the fresh v of line 16)
  kFrozenVariance,  // v_Tw: the variance frozen at the end of warmup (1-bit Adam, 1-bit LAMB)
  kMaxVariance,     // v-hat_t = max(v-hat_{t-1}, v_t) (AMSGrad, SPAMS)
  kLayerRatio,      // per layer: 1-bit LAMB's r_t^(l) (Alg. 1 lines 17-19)
  kLayerScale,      // per layer: LAMB's c_t^(l) (Eq. 1; 1-bit LAMB line 20)
  kLayerTarget,     // per layer: 1-bit LAMB's line-17 ratio of frozen to fresh variance, before
                    // the clips of lines 18-19 (what r_t^(l) follows)
  kShift,           // the worker's running estimate of its gradient that its compressed
                    // messages correct: EF21's g_i^t, DIANA's h_i (kServer: their mean, as the
                    // replicas keep it)
};

// What one state vector is: symbol.name is its name in checkpoints and in traces.
struct StateTag {
  TraceSymbol symbol;
  std::optional<Quantity> quantity = std::nullopt;  // what probes observe it as, if anything
};

// The visitor DeclareState is given: it saves or restores the declared members (for a
// checkpoint), or looks for the one vector a probe asked for (Observe). The same declarations
// serve both, so what a run saves and what its probes can see cannot drift apart.
//
// Who holds a vector decides which Observe(quantity, worker) finds it:
//   Replicated: every replica holds the same vector, so every worker and kServer see it;
//   Server:     the aggregation point's, seen by kServer;
//   Own:        inside PerWorker, worker i's, seen by worker i.
// `seen` = false hides a member from probes while the algorithm does not have that quantity
// (1-bit Adam's worker momenta during warm-up, when every worker holds the synchronised m).
template <typename T>
class OptimizerState {
 public:
  // Saves or restores the declared members into `archive`.
  explicit OptimizerState(StateArchive& archive) : archive_(&archive) {}
  // Looks for `quantity` as `worker` (or kServer) holds it.
  OptimizerState(Quantity quantity, int worker) : wanted_(quantity), worker_(worker) {}

  // Observing: the vector found, or nullptr.
  const Vector<T>* found() const { return found_; }
  // Whether the declared members are being overwritten from a checkpoint.
  bool restoring() const { return archive_ != nullptr && archive_->restoring(); }

  void Replicated(const StateTag& tag, Vector<T>& v, bool seen = true) {
    Save(tag.symbol.name, v);
    if (seen) Offer(tag.quantity, v);
  }
  void Server(const StateTag& tag, Vector<T>& v, bool seen = true) {
    Save(tag.symbol.name, v);
    if (seen && worker_ == kServer) Offer(tag.quantity, v);
  }

  // Per-worker state, one `W` per worker: f(w) declares worker w's members with Own, under
  // "worker/<i>/" in a checkpoint.
  template <typename W, typename F>
  void PerWorker(std::vector<W>& workers, F&& f) {
    if (archive_ != nullptr) {
      archive_->Each("worker", workers, f);
      return;
    }
    // Observing: only the queried worker's members are declared, so Own offers those.
    if (worker_ == kServer || static_cast<std::size_t>(worker_) >= workers.size()) return;
    f(workers[static_cast<std::size_t>(worker_)]);
  }
  void Own(const StateTag& tag, Vector<T>& v, bool seen = true) {
    Save(tag.symbol.name, v);
    if (seen) Offer(tag.quantity, v);
  }
  // Per-worker vectors kept as one list (entry i: worker i's), saved as name/count, name/<i>.
  void PerWorker(const StateTag& tag, std::vector<Vector<T>>& vectors, bool seen = true) {
    if (archive_ != nullptr) (*archive_)(tag.symbol.name, vectors);
    if (seen && worker_ != kServer && static_cast<std::size_t>(worker_) < vectors.size()) {
      Offer(tag.quantity, vectors[static_cast<std::size_t>(worker_)]);
    }
  }

  // What probes see that is not state of its own: a value the step recomputes before it reads it
  // (Birder's b + eps), or a second quantity a member also is (v, frozen after warm-up). Inside
  // PerWorker it is that worker's; elsewhere every replica's.
  void Shows(Quantity quantity, const Vector<T>& v, bool seen = true) {
    if (seen) Offer(quantity, v);
  }
  // The same for per-worker values kept as one list (entry i: worker i's).
  void PerWorkerShows(Quantity quantity, const std::vector<Vector<T>>& vectors, bool seen = true) {
    if (seen && worker_ != kServer && static_cast<std::size_t>(worker_) < vectors.size()) {
      Offer(quantity, vectors[static_cast<std::size_t>(worker_)]);
    }
  }
  // The same, seen by kServer only.
  void ServerShows(Quantity quantity, const Vector<T>& v, bool seen = true) {
    if (seen && worker_ == kServer) Offer(quantity, v);
  }

  // State no probe observes: counters, flags, scalars and vectors the paper does not name
  // (core/state.h's archive(name, x)).
  template <typename V>
  void Value(std::string_view name, V& value) {
    if (archive_ != nullptr) (*archive_)(name, value);
  }
  // State sized at a later step than construction (core/state.h's Later).
  void Later(std::string_view name, Vector<T>& v, Eigen::Index rows) {
    if (archive_ != nullptr) archive_->Later(name, v, rows);
  }

  // A component with state of its own, under `name`: one with a DeclareState of its own declares
  // it here; one with Persist (and, for probes, Observe(quantity, worker)) is saved and asked
  // through those.
  template <typename S>
  void Nested(std::string_view name, S& component) {
    if constexpr (requires { component.DeclareState(*this); }) {
      if (archive_ != nullptr) {
        archive_->Scope(name, [&] { component.DeclareState(*this); });
      } else {
        component.DeclareState(*this);
      }
    } else if (archive_ != nullptr) {
      archive_->Nested(name, component);
    } else if constexpr (requires { component.Observe(*wanted_, worker_); }) {
      if (found_ == nullptr) found_ = component.Observe(*wanted_, worker_);
    }
  }

 private:
  template <typename V>
  void Save(std::string_view name, V& value) {
    if (archive_ != nullptr) (*archive_)(name, value);
  }
  // The first member declared with the wanted quantity is the one found.
  void Offer(std::optional<Quantity> quantity, const Vector<T>& v) {
    if (found_ == nullptr && wanted_ && quantity == wanted_) found_ = &v;
  }

  StateArchive* archive_ = nullptr;
  std::optional<Quantity> wanted_;
  int worker_ = kServer;
  const Vector<T>* found_ = nullptr;
};

}  // namespace lemmalab
