// A batched optimizer (batched/optimizers.h) in the three-phase form the cluster drives
// (comm/cluster.h), so that a run with device = "cuda" goes through the same step loop, scheme
// rounds, traffic counts, metrics and evaluation as every other run, with its optimizer on the
// GPU:
//   WorkerStep  sends a message of the CPU optimizer's wire size whose bytes stay on the
//               device (Message::Elsewhere: counted, not carried), and, where the problem's
//               gradients are computed on the CPU, keeps worker i's for the device;
//   ServerStep  replies likewise, with the server's wire size;
//   Apply       runs the whole batched step on the device, every worker at once, from the
//               synchronised x, and copies the updated parameters into the replica's.
// For a supervised problem the adapter is also the cluster's GradientSource: every worker's
// gradient is computed on the device (batched/gradients.h) and never leaves it, except as host
// copies for probes.
// The messages' bytes stay on the device; the cluster counts each at its size, which is the CPU
// optimizer's to the byte (tests/batched_optimizer_test.cc). Probes and checkpoints see the
// device state through host copies (batched/device_state.h). One process only: the parameter-
// server and allgather schemes, in-process transport.
#pragma once

#include <memory>

#include "batched/backend.h"
#include "batched/gradients.h"
#include "comm/gradient_source.h"
#include "core/options.h"
#include "optimizers/optimizer.h"

namespace lemmalab::batched {

// The batched form of the optimizer an [[optimizer]] table names, for the workers and dimension
// of `context`, on `backend`; refused as MakeBatchedOptimizer refuses (UserError naming the
// option), and for weight decay. With `samples` (on the same backend) it computes the problem's
// gradients on the device too; without, the CPU's are copied there every step.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDeviceOptimizer(
    OptionTable& options, const OptimizerContext& context, Backend backend,
    std::shared_ptr<const DeviceSamples<T>> samples = nullptr);

// The device optimizer's gradient source for the cluster, or nullptr: another optimizer, or one
// whose problem's gradients are computed on the CPU.
template <typename T>
GradientSource<T>* GradientSourceOf(DistributedOptimizer<T>& optimizer);

}  // namespace lemmalab::batched
