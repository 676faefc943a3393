// The interface every problem implements, and the registry of problems.
//
// A problem is the objective f(x) = (1/n) sum_i f_i(x) of n workers, with a stochastic oracle
// per worker. When shards are uneven, f is still the mean of the n shard objectives: every
// worker weighs equally, as the (1/n) sum_i f_i form of the papers says.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/layers.h"
#include "core/options.h"
#include "core/registry.h"
#include "core/resources.h"
#include "core/rng.h"
#include "core/types.h"
#include "problems/dataset.h"

namespace lemmalab {

// Full-batch quantities at one point, in double. Quantities a problem does not have (accuracy of
// a problem without labels, test metrics without a test set) are empty.
struct Evaluation {
  double loss = 0;                      // f(x)
  double grad_sq_norm = 0;              // ||grad f(x)||^2
  std::optional<double> accuracy;       // fraction of training samples classified correctly
  std::optional<double> test_loss;      // mean loss over the test set (no regulariser)
  std::optional<double> test_accuracy;  // fraction of test samples classified correctly
  // (1/n) sum_i ||grad f_i(x) - grad f(x)||^2: how far the workers' objectives spread at x, the
  // sigma_g^2 of spams.txt Assumption 4 measured there (problems whose workers hold different
  // data; empty where the problem knows sigma_g).
  std::optional<double> shard_spread;
};

// A named block of the flat parameter vector: entries [offset, offset + rows*cols), viewed as a
// row-major rows x cols matrix (cols = 1 for a vector). Layer-wise optimizers (LAMB, 1-bit LAMB)
// and compressors (Block-Sign, PowerSGD) work on these blocks.

// How far a problem constant can be trusted.
enum class Certainty {
  kExact,     // the value itself, by construction or closed form
  kBound,     // a proven upper bound (for f_star: f at a point a solver reached, so >= inf f)
  kEstimate,  // measured or estimated numerically; not a guarantee
};
std::string_view CertaintyName(Certainty certainty);  // "exact", "bound", "estimate"

// A constant of the convergence analyses (birder.txt Assumptions 1-4, spams.txt Assumptions
// 2-4), named as there:
//   L        every f_i is L-smooth: ||grad f_i(x) - grad f_i(y)|| <= L ||x - y||
//   mu       strong convexity of f (when f is strongly convex)
//   G        ||g|| <= G for every stochastic gradient (the basis says on which region)
//   sigma    local variance: E ||g_i - grad f_i(x)||^2 <= sigma^2
//   sigma_g  global variance: (1/n) sum_i ||grad f_i(x) - grad f(x)||^2 <= sigma_g^2
//   f_star   inf f
// `basis` says where the value comes from ("largest Hessian eigenvalue"); `region`, where it holds
// when that is not everywhere.
//
// A region is the set of points x with position(x) <= radius, for one of the positions the
// problem reports (Problem::Positions): a run records that position at every iterate, and a
// verdict that uses the constant rests on the iterates having stayed inside.
struct Region {
  std::string position;  // the metric that measures x: "x_max_abs", "x_distance_to_minimizer"
  double radius = 0;
  std::string description;  // "the box |x_j| <= 2"
};
struct Constant {
  std::string name;
  double value = 0;
  Certainty certainty = Certainty::kExact;
  std::string basis;
  std::optional<Region> region = std::nullopt;  // everywhere
};

// Samples and label counts of one worker's shard (data problems only).
struct ShardSummary {
  std::int64_t samples = 0;
  std::vector<std::int64_t> label_counts;  // per class
};

template <typename T>
class Problem {
 public:
  virtual ~Problem() = default;

  virtual std::int64_t dimension() const = 0;
  virtual int num_workers() const = 0;
  virtual Vector<T> InitialPoint() const = 0;

  // Stochastic gradient g of f_worker at x on a minibatch drawn from `stream` (the worker's
  // kMinibatch stream of the step); returns the minibatch loss. Safe to call concurrently for
  // different workers.
  virtual double StochasticGradient(int worker, ConstVectorRef<T> x, PhiloxStream& stream,
                                    VectorRef<T> g) const = 0;

  // f(x), and its gradient into `gradient` when that is not null.
  virtual double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const = 0;

  virtual Evaluation Evaluate(ConstVectorRef<T> x) const = 0;

  // The parameter blocks; a problem without structure is one block "x".
  virtual std::vector<Layer> Layers() const { return {Layer{"x", 0, dimension(), 1}}; }

  // The constants the problem knows a priori (see Constant); estimates that need a run, such as
  // f_star by L-BFGS, come from problems/reference.h.
  virtual std::vector<Constant> Constants() const { return {}; }

  // Threads for full-batch passes (Objective, Evaluate): 0 lets the problem choose by the size
  // of the pass. Results never depend on it; problems whose passes are cheap ignore it.
  virtual void set_threads(int threads) { (void)threads; }
  // Adds to `estimate` the memory the problem holds (a quadratic's rotation) and its steps and
  // full-batch passes take, beyond its data and the parameters, with `local_workers` workers
  // stepped in this process on up to `threads` threads, each part with the options that drive
  // it: what a run checks before it starts (engine/experiment.cc). Nothing where it is negligible.
  virtual void AddWorkingMemory(int local_workers, int threads, MemoryEstimate& estimate) const {
    (void)local_workers;
    (void)threads;
    (void)estimate;
  }

  // Where x lies, by the positions the regions of its constants are measured in (Region): the
  // run records each at every iterate. Empty for a problem whose constants hold everywhere.
  virtual std::vector<std::pair<std::string, double>> Positions(ConstVectorRef<T> x) const {
    (void)x;
    return {};
  }

  // Per-worker shard sizes and label histograms; empty for problems without samples.
  virtual std::vector<ShardSummary> Shards() const { return {}; }

  // One line for reports: data, dimension, shards, batch size.
  virtual std::string Describe() const = 0;
};

struct ProblemContext {
  int workers = 1;
  std::uint64_t seed = 0;
  const Dataset* data = nullptr;  // from the spec's [data] table, when it has one
  // Read and check every option, build nothing (the factory returns null): what a run does
  // before it loads the data, so that a wrong option is reported before a long load.
  bool options_only = false;
  // What building the problem may take in memory: a factory refuses, before allocating, a
  // problem whose construction would need more (core/resources.h).
  MemoryLimit memory = MemoryLimit::Machine();
};

template <typename T>
using ProblemFactory = std::unique_ptr<Problem<T>> (*)(OptionTable& options,
                                                       const ProblemContext& context);

struct ProblemInfo {
  std::string_view name;
  std::string_view summary;
  bool needs_data;
  ProblemFactory<float> make_f32;
  ProblemFactory<double> make_f64;
};

const Registry<ProblemInfo>& Problems();

// Why the problem cannot run with the data it is given (a [data] table, or none): it learns
// from data and has none, or it makes its own and would ignore the table. Empty when it can.
std::string DataMismatch(const ProblemInfo& info, bool has_data);

// Builds the problem a [problem] table names and rejects unknown keys.
template <typename T>
std::unique_ptr<Problem<T>> MakeProblem(OptionTable& options, const ProblemContext& context);

}  // namespace lemmalab
