// Probes: measurements of the quantities the convergence proofs rely on, taken during a run.
//
// A probe is attached to a run by name in the spec (`probes = ["ef-norm", ...]`) and costs
// nothing when it is not attached: the run loop only calls the probes it holds, and optimizers
// keep extra state (compressor inputs) only when a probe asks for it in Attach. After every step
// it reads the optimizer's exposed state (Observe, LastEncode, LastCompression) and the step's
// iterate and gradients, and records series into the run's results; at the end it summarises
// what it saw, with the paper, lemma or equation the quantity comes from. Verdicts are not a
// probe's business: theory/assertion.h judges the recorded series, so that `lemmalab check
// --from DIR` judges finished results the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {

class ProbeSink {
 public:
  virtual ~ProbeSink() = default;
  // One value of `series` at the current step; `worker` is a worker index or kServer.
  virtual void Record(std::string_view series, int worker, double value) = 0;
};

// The gradients the workers' phases consumed at a step, one per worker, fetched when a probe
// first reads them: a GPU run's are copied from the device only for the probes that read
// gradients (birder-z, shift-error, spams-moments), not for every probed step.
template <typename T>
class StepGradients {
 public:
  // Gradients at hand.
  StepGradients(std::span<const Vector<T>> gradients)  // NOLINT(google-explicit-constructor)
      : gradients_(gradients), fetched_(true) {}
  // Gradients fetch() provides, called at most once.
  explicit StepGradients(std::function<std::span<const Vector<T>>()> fetch)
      : fetch_(std::move(fetch)) {}

  std::size_t size() const { return Get().size(); }
  const Vector<T>& operator[](std::size_t worker) const { return Get()[worker]; }

 private:
  std::span<const Vector<T>> Get() const {
    if (!fetched_) {
      gradients_ = fetch_();
      fetched_ = true;
    }
    return gradients_;
  }

  std::function<std::span<const Vector<T>>()> fetch_;
  mutable std::span<const Vector<T>> gradients_;
  mutable bool fetched_ = false;
};

// What a probe sees after step t: the step's rate, the iterate the step produced, and the
// stochastic gradients the workers' phases consumed (at x_t; with l2 weight decay, g + lambda x).
template <typename T>
struct ProbeStep {
  std::int64_t t = 1;
  double lr = 0;               // alpha_t
  const Vector<T>& x;          // x_{t+1}
  StepGradients<T> gradients;  // g_t^(i), one per worker
  const Problem<T>& problem;
};

template <typename T>
class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view name() const = 0;
  // Whether this optimizer exposes what the probe reads (DistributedOptimizer::observable()).
  virtual bool AppliesTo(const Observable<T>& optimizer) const = 0;
  // Called once when the probe is attached to `optimizer`, before step 1, with x_1; a probe that
  // needs state the optimizer keeps only on request (KeepCompressionRecords) asks for it here.
  virtual void Attach(Observable<T>& /*optimizer*/, const Vector<T>& /*x1*/) {}
  // Called after step t has been applied.
  virtual void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer,
                       ProbeSink& sink) = 0;
  // Report lines: what was measured, against which bound, where the bound comes from.
  virtual std::vector<std::string> Summary() const = 0;
  // Names what the probe carries from one step to the next (core/state.h): its running sums and
  // the values of the previous step it compares against, so a resumed run's summaries and
  // series equal an uninterrupted one's. Restored after Attach.
  virtual void Persist(StateArchive& archive) = 0;
};

struct ProbeContext {
  std::int64_t dimension = 0;
  int workers = 1;
  std::uint64_t seed = 0;  // keys the probes' own Philox streams (Purpose::kProbe)
  // The resolved options of the run the probe is made for (core/hyperparameters.h); its
  // optimizer's options are read through the optimizer's reader (theory/optimizer_options.h).
  Hyperparameters hyperparameters = {};
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
