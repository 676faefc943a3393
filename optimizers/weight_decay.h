// Weight decay for any optimizer (WeightDecay in optimizers/optimizer.h), applied by whoever runs
// the phases (comm/cluster.h, and the tests' step helpers) around them, so that no algorithm
// knows of it: with l2 the decay goes through the algorithm (and its compressor) as part of the
// gradient; decoupled never touches the wire. For algorithms whose replicas drift (local SGD),
// decoupled decay acts on the synchronised parameters before Apply; l2 on each worker's own
// replica, whose gradient it changes.
#pragma once

#include "optimizers/optimizer.h"

namespace lemmalab {

// Reads `weight_decay` (default `fallback`) and `weight_decay_mode` ("decoupled" or "l2").
WeightDecay WeightDecayFromOptions(OptionTable& options, double fallback);

// The gradient worker `worker`'s phase consumes at parameters x: g itself, or under l2 decay
// g + lambda x, computed into `scratch` (and traced).
template <typename T>
const Vector<T>& ConsumedGradient(const WeightDecay& decay, const StepContext& ctx, int worker,
                                  const Vector<T>& g, ConstVectorRef<T> x, Vector<T>& scratch) {
  if (!decay.l2()) return g;
  scratch = g + static_cast<T>(decay.lambda) * x;
  if (const TraceScope trace = ctx.Trace(worker)) {
    trace.Vector<T>({"g+lambda x", "weight_decay_mode = \"l2\" (optimizers/weight_decay.h)",
                     "the gradient the algorithm consumes: g_t^(i) + lambda x_t"},
                    scratch);
  }
  return scratch;
}

// Before Apply: under decoupled decay, x <- (1 - alpha_t lambda) x (and traced).
template <typename T>
void DecayBeforeApply(const WeightDecay& decay, const StepContext& ctx, VectorRef<T> x) {
  if (!decay.decoupled()) return;
  x *= static_cast<T>(1.0 - ctx.lr * decay.lambda);
  if (const TraceScope trace = ctx.Trace(kServer)) {
    trace.Vector<T>({"(1-alpha lambda) x", "weight_decay_mode = \"decoupled\"",
                     "x_t scaled by 1 - alpha_t lambda before the algorithm's update"},
                    x);
  }
}

}  // namespace lemmalab
