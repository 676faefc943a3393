// The processes a run spans, and what they decide together. In one process there is nothing to
// decide; under mpirun (comm/mpi_transport.h) each rank runs one worker, and the ranks agree on
// whether to stop and whether any of them failed before the first step, so that every rank
// leaves at the same point with the same exit code and the job prints each message once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "comm/transport.h"

namespace lemmalab {

class Job {
 public:
  // `transport` null: this process alone. `stop` (may be null) is set, by SIGINT say, to stop
  // the run; `stop_signal` (may be null: SIGINT's) is the signal that set it.
  Job(Transport* transport, const std::atomic<bool>* stop, const std::atomic<int>* stop_signal)
      : transport_(transport), stop_(stop), stop_signal_(stop_signal) {}

  Transport* transport() const { return transport_; }
  // This process's rank (the worker it runs under MPI), 0 in one process.
  int rank() const;
  // The number of processes: one per worker under MPI, 1 in one process.
  std::int64_t processes() const;
  // Whether this process writes the results and shows progress (in one process, or rank 0).
  bool reports() const { return transport_ == nullptr || transport_->reports(); }
  // Whether `worker` runs in this process.
  bool Runs(int worker) const { return transport_ == nullptr || transport_->Runs(worker); }

  // The stop a step may be abandoned on (StepContext::stop): in one process only, since under
  // MPI every rank finishes the step and they stop together between steps.
  const std::atomic<bool>* stop_within_step() const {
    return transport_ == nullptr ? stop_ : nullptr;
  }
  // Throws Interrupted when any process was asked to stop: decided together (a collective under
  // MPI), so that every rank stops after the same step, with the signal of the lowest rank that
  // received one.
  void StopIfRequested() const;

  // Runs `f` on every process. In one process its exceptions pass as they are. Under MPI, a
  // failure on any process becomes a SharedFailure (engine/failure.h) on all of them once every
  // process has run `f`: the lowest rank that failed carries the message, the others an empty
  // one, all its exit code. Use it around work that involves no collective, so that every
  // process reaches the agreement.
  void Agreed(const std::function<void()>& f) const;

 private:
  Transport* transport_;
  const std::atomic<bool>* stop_;
  const std::atomic<int>* stop_signal_;
};

}  // namespace lemmalab
