// Probes: measurements of the quantities the convergence proofs rely on, taken during a run.
//
// A probe is attached to a run by name in the spec (`probes = ["ef-norm", ...]`) and costs
// nothing when it is not attached: the run loop only calls the probes it holds. After every
// step it reads the optimizer's exposed state (Observe, LastEncode) and records series into the
// run's results; at the end it summarises what it saw, with the paper, lemma or equation the
// quantity comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

class ProbeSink {
 public:
  virtual ~ProbeSink() = default;
  // One value of `series` at the current step; `worker` is a worker index or kServer.
  virtual void Record(std::string_view series, int worker, double value) = 0;
};

template <typename T>
class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view name() const = 0;
  // Whether this optimizer exposes what the probe reads.
  virtual bool AppliesTo(const DistributedOptimizer<T>& optimizer) const = 0;
  // Called after step t has been applied.
  virtual void Observe(std::int64_t t, const DistributedOptimizer<T>& optimizer,
                       ProbeSink& sink) = 0;
  // Report lines: what was measured, against which bound, where the bound comes from.
  virtual std::vector<std::string> Summary() const = 0;
};

struct ProbeContext {
  std::int64_t dimension = 0;
  int workers = 1;
};

template <typename T>
using ProbeFactory = std::unique_ptr<Probe<T>> (*)(const ProbeContext& context);

struct ProbeInfo {
  std::string_view name;
  std::string_view summary;
  ProbeFactory<float> make_f32;
  ProbeFactory<double> make_f64;
};

const Registry<ProbeInfo>& Probes();

}  // namespace lemmalab
