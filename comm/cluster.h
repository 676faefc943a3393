// Steps a DistributedOptimizer across n workers under a communication scheme (comm/scheme.h),
// over a transport (comm/transport.h): all workers in this process, or one per MPI rank.
//
// Per step: every worker this process runs computes its stochastic gradient at its replica and
// its message (in parallel, one OpenMP iteration per worker); then the scheme's rounds move the
// messages, run the node and server phases where the scheme puts them, and bring the replies
// back; every process applies them to its x once. Each replica applies the same replies to the
// same parameters, so one copy of x per process stands for its workers; an algorithm whose
// replicas drift apart (local SGD) keeps them itself (DistributedOptimizer::LocalParameters).
//
// Every byte is counted from the messages of each round, at the sender and at the receiver,
// split by link class (comm/traffic.h); the per-step counts and the per-worker losses are summed
// over the processes, so every backend reports the same numbers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/gradient_source.h"
#include "comm/scheme.h"
#include "comm/traffic.h"
#include "comm/transport.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {

// The traffic of one step.
struct StepTraffic {
  std::vector<EndpointTraffic> workers;  // per worker, over the step's rounds
  EndpointTraffic server;                // the parameter server's (zero in the other schemes)
  std::vector<RoundTraffic> rounds;      // per round: workers, then the server

  std::int64_t sent(int worker) const {
    return workers[static_cast<std::size_t>(worker)].sent.total();
  }
  std::int64_t received(int worker) const {
    return workers[static_cast<std::size_t>(worker)].received.total();
  }
};

struct StepResult {
  std::vector<double> minibatch_loss;  // per worker
  std::vector<double> gradient_norm;   // ||g|| of each worker's stochastic gradient
  StepTraffic traffic;
};

// UserError when `optimizer` cannot run under the scheme of `comm` (a server phase that needs the
// whole vector, under allreduce; messages that cannot be averaged inside a node, under
// hierarchical), naming it `label`. A run checks it before its first step; every Cluster does.
template <typename T>
void RequireSchemeFits(const CommSpec& comm, const DistributedOptimizer<T>& optimizer,
                       std::string_view label);

template <typename T>
class Cluster {
 public:
  // In this process, under `comm`. `threads` = 0 chooses: one thread when a step is too small to
  // pay for a parallel region (dimension x workers below kParallelWork), else OpenMP's default.
  // Results are the same either way; only the time differs. The optimizer must have been built
  // for LayoutFor(comm, dimension); one that cannot run under the scheme is refused (UserError
  // naming `label`).
  Cluster(const Problem<T>& problem, DistributedOptimizer<T>& optimizer, const CommSpec& comm = {},
          int threads = 0, Transport* transport = nullptr, std::string_view label = "optimizer");

  static constexpr std::int64_t kParallelWork = 1 << 15;

  // Threads the worker phase runs on, and the largest team OpenMP actually gave it.
  int threads() const { return threads_; }
  int largest_team() const { return largest_team_; }
  const CommSpec& comm() const { return comm_; }
  const ExchangeLayout& layout() const { return layout_; }

  // The stochastic gradients g_t^(i) of the last step, one per worker (empty for the workers
  // another process runs).
  std::span<const Vector<T>> gradients() const { return gradients_; }
  // The gradients the worker phases consumed at the last step: the stochastic gradients, or
  // under l2 weight decay g + lambda x (optimizers/weight_decay.h). What probes replay.
  std::span<const Vector<T>> consumed_gradients() const {
    if (source_ != nullptr && !source_copied_) {  // copied when asked, at probed steps only
      source_->CopyTo(gradients_);
      source_copied_ = true;
    }
    return optimizer_.weight_decay().l2() ? decayed_ : gradients_;
  }

  // Computes the gradients with `source` instead of the problem (null: the problem again).
  // Weight decay and traces are not supported with it: their worker phases read the gradients.
  void set_gradient_source(GradientSource<T>* source) {
    source_ = source;
    // Filled from the source only when asked (consumed_gradients), so held only from then on.
    if (source_ != nullptr) std::fill(gradients_.begin(), gradients_.end(), Vector<T>());
  }

  // One synchronous step t (ctx.t) from parameters x, which are updated in place. Throws
  // Interrupted, with the step half done, when ctx.stop is set before every worker has started:
  // nothing of the cluster or its optimizer may be used after that.
  const StepResult& Step(const StepContext& ctx, VectorRef<T> x);

 private:
  // Sends `out`, counts it into a new round, and fills `in`.
  void Round(std::string_view name, std::vector<Envelope>& out, std::vector<Envelope>& in);
  // The envelope `to` received from `from` with `tag` in a round's incoming list.
  static Envelope& Find(std::vector<Envelope>& in, int to, int from, int tag);

  void ParameterServer(const StepContext& ctx);
  void Allgather(const StepContext& ctx);
  void Allreduce(const StepContext& ctx);
  void Hierarchical(const StepContext& ctx);
  // Sums the step's per-worker results and traffic over the processes.
  void Gather();

  const Problem<T>& problem_;
  DistributedOptimizer<T>& optimizer_;
  CommSpec comm_;
  ExchangeLayout layout_;
  std::unique_ptr<Transport> own_transport_;
  Transport* transport_;
  int workers_;
  std::vector<int> local_;  // the workers this process runs, ascending
  int threads_;
  int largest_team_ = 0;
  mutable std::vector<Vector<T>> gradients_;  // with a source: copied from it when asked
  GradientSource<T>* source_ = nullptr;
  mutable bool source_copied_ = false;
  std::vector<Vector<T>> decayed_;                // l2 weight decay: g + lambda x, per worker
  std::vector<Message> uplink_;                   // per worker: its whole message
  std::vector<std::vector<Message>> parts_;       // per worker: its message split by the layout
  std::vector<std::vector<Message>> node_parts_;  // hierarchical, per worker: its node step's
  std::vector<Message> chunk_reply_;              // per chunk, for the chunks served here
  std::vector<Message> replies_;                  // per chunk: what Apply receives
  std::vector<Message> received_;                 // scratch: one server's inputs
  std::vector<Envelope> out_, in_, in2_;
  StepResult result_;
};

}  // namespace lemmalab
