// A batched optimizer (batched/optimizers.h) in the three-phase form the cluster drives
// (comm/cluster.h), so that a run with device = "cuda" goes through the same step loop, scheme
// rounds, traffic counts, metrics and evaluation as every other run, with its optimizer on the
// GPU:
//   WorkerStep  keeps worker i's stochastic gradient for the device (the gradients are still
//               computed on the CPU) and sends a message of the CPU optimizer's wire size;
//   ServerStep  runs the whole batched step on the device, every worker at once, once the
//               gradients of all workers are in, and replies with the server's wire size;
//   Apply       copies the device's updated parameters into the replica's.
// The messages' bytes stay on the device; the cluster counts each at its size, which is the CPU
// optimizer's to the byte (tests/batched_optimizer_test.cc). Probes and checkpoints see the
// device state through host copies (batched/device_state.h). One process only: the parameter-
// server and allgather schemes, in-process transport.
#pragma once

#include <memory>

#include "batched/backend.h"
#include "core/options.h"
#include "optimizers/optimizer.h"

namespace lemmalab::batched {

// The batched form of the optimizer an [[optimizer]] table names, for the workers and dimension
// of `context`, on `backend`; refused as MakeBatchedOptimizer refuses (UserError naming the
// option), and for weight decay.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDeviceOptimizer(OptionTable& options,
                                                             const OptimizerContext& context,
                                                             Backend backend);

}  // namespace lemmalab::batched
