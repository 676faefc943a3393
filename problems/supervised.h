// Problems that learn from labelled samples: a model (the per-sample loss as a function of the
// flat parameter vector) on a data set split into worker shards.
//
//   f_i(x) = (1/N_i) sum_{k in shard i} loss(x; a_k, y_k) + R(x),   f = (1/n) sum_i f_i,
//   R(x) = (l2/2) ||x||^2 + lambda sum_j x_j^2 / (1 + x_j^2),
// the second term of R being the standard nonconvex regulariser (nonconvex-logreg). Stochastic
// gradients average B samples drawn uniformly with replacement from the worker's shard (as in
// Birder's experiments, App. B.1) plus grad R; batch_size = 0 uses the whole shard, which makes
// the gradient exact and deterministic. Full-batch quantities are computed in chunks of rows in
// parallel and summed in a fixed order, so they do not depend on the thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "problems/dataset.h"
#include "problems/problem.h"
#include "problems/sharding.h"

namespace lemmalab {

// Bounds that hold for generalised linear models, whose loss depends on x only through the
// logits z = W a + b: the loss's curvature in z is at most `curvature` and ||d loss / d x|| is at
// most `gradient_factor` * ||(a, 1)||. They give L and G for the problem from the data.
struct LinearModelBounds {
  double curvature = 0;        // logistic: 1/4; softmax: 1/2
  double gradient_factor = 0;  // logistic: 1; softmax: sqrt(2)
  bool intercept = true;       // whether a constant 1 feeds the logits
};

enum class Activation { kRelu, kTanh };

// A model's architecture, for a backend that evaluates it elsewhere (the GPU's batched gradients,
// batched/gradients.h): binary logistic regression on `widths` = {features}, with or without
// the intercept, or the softmax network of layer widths features, hidden..., classes.
struct ModelForm {
  bool logistic = false;
  std::vector<std::int64_t> widths;
  bool intercept = false;                     // logistic regression's
  Activation activation = Activation::kRelu;  // the network's hidden layers'
};

template <typename T>
class Model {
 public:
  virtual ~Model() = default;

  virtual std::int64_t dimension() const = 0;
  virtual std::vector<Layer> Layers() const = 0;
  // The values one sample's pass through the model computes, over all layers (the logits of
  // logistic regression: 1; an MLP's layer widths summed): what its activation buffers hold per
  // row, for the memory estimate.
  virtual std::int64_t OutputsPerSample() const = 0;
  virtual Vector<T> InitialPoint(std::uint64_t seed) const = 0;

  // Sums over the rows of `a` with labels `y`: returns the sum of the per-sample losses (in
  // double); when `gradient` is not null, writes the sum of the per-sample gradients there
  // (dimension() entries); when `correct` is not null, adds the number of rows whose predicted
  // class is their label.
  virtual double Sum(Eigen::Ref<const RowMatrix<T>> a, Eigen::Ref<const Eigen::VectorXi> y,
                     ConstVectorRef<T> x, T* gradient, std::int64_t* correct) const = 0;

  virtual std::optional<LinearModelBounds> Bounds() const { return std::nullopt; }
  virtual std::string Describe() const = 0;  // "logistic regression", "MLP 784-256-10 relu"
  virtual ModelForm Form() const = 0;
};

// Binary logistic regression on labels 0/1: loss = log(1 + exp(z)) - y z, z = w.a + b (b only
// with `intercept`). Parameters: w, then b.
template <typename T>
std::unique_ptr<Model<T>> MakeLogisticModel(std::int64_t features, bool intercept);

// A fully connected network features -> hidden... -> classes with softmax cross-entropy; with no
// hidden layer it is multinomial logistic regression. Parameters, layer by layer: the weight
// matrix (out x in, row-major) then the bias. Initial weights are He-uniform (ReLU) or
// Glorot-uniform (tanh) from the kInitialization stream, biases 0; without hidden layers the
// initial point is 0.
template <typename T>
std::unique_ptr<Model<T>> MakeMlpModel(std::int64_t features,
                                       const std::vector<std::int64_t>& hidden, int classes,
                                       Activation activation);

struct SupervisedOptions {
  std::int64_t batch_size = 32;  // >= 0; 0 = the whole shard
  double l2 = 0;                 // >= 0
  double nonconvex = 0;          // lambda of the nonconvex regulariser, >= 0
  std::string sharding = "iid";  // how the shards were made, for reports
  std::uint64_t seed = 0;        // for the initial point
};

// What computing a supervised problem's stochastic gradients elsewhere (batched/gradients.h)
// reads of it, besides its model: every problem MakeSupervisedProblem makes is one
// (dynamic_cast a Problem<T>).
template <typename T>
class SupervisedSamples {
 public:
  virtual ~SupervisedSamples() = default;
  virtual const Model<T>& model() const = 0;
  virtual const SupervisedOptions& options() const = 0;
  // Worker `worker`'s shard: its samples as T (row k: the shard's k-th sample) and labels.
  virtual void ShardSamples(int worker, RowMatrix<T>& a, Eigen::VectorXi& y) const = 0;
  // A minibatch is batch_size positions of the worker's shard, drawn by
  // problems/minibatch_element.h from its kMinibatch stream of the step.
};

template <typename T>
std::unique_ptr<Problem<T>> MakeSupervisedProblem(std::unique_ptr<Model<T>> model,
                                                  const Dataset& data, const Shards& shards,
                                                  const SupervisedOptions& options);

}  // namespace lemmalab
