// Every worker's stochastic gradient of a supervised problem (problems/supervised.h) computed at
// once on a backend, for a GPU run (batched/device_optimizer.h): the shards' samples live on the
// device, each step's minibatches are drawn there, every worker's from its kMinibatch stream by
// the CPU's rule (problems/minibatch_element.h), so they are the CPU run's samples, and the
// model's forward and backward passes are one ForEach per phase over all workers
// (batched/gradient_kernels.h). Nothing goes to the device during a step.
//
// Models: binary logistic regression (logreg, nonconvex-logreg) and the softmax network
// (multinomial-logreg, mlp with relu or tanh), with the l2 and nonconvex regularisers. The
// network's products are strided-batched GEMMs over the workers (cuBLAS on the GPU). The sums
// run in another order than the CPU BLAS's, and exp, log and tanh are the device's: the gradients
// agree with Problem::StochasticGradient's to rounding (tests/batched_gradients_test.cc states
// the tolerance), not bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "batched/backend.h"
#include "batched/gradient_kernels.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"
#include "problems/supervised.h"

namespace lemmalab::batched {

// A supervised problem's training samples and labels in the backend's memory, uploaded once and
// shared by the runs of an experiment.
template <typename T>
class DeviceSamples {
 public:
  // The samples of `problem`, or nullptr when it is not a problem with a batched gradient.
  static std::shared_ptr<const DeviceSamples<T>> Of(const Problem<T>& problem, Backend backend);

  const SupervisedSamples<T>& problem() const { return problem_; }
  const ModelForm& form() const { return form_; }
  std::vector<Layer> layers() const { return problem_.model().Layers(); }
  Backend backend() const { return backend_; }
  std::int64_t features() const { return features_; }
  int workers() const { return static_cast<int>(sizes_.size()); }
  // Worker w's shard: its first row in the samples, and its size.
  std::int64_t offset(int w) const { return offsets_[static_cast<std::size_t>(w)]; }
  std::int64_t size(int w) const { return sizes_[static_cast<std::size_t>(w)]; }
  const T* samples() const { return samples_.data(); }
  const int* labels() const { return labels_.data(); }
  // offset(w) and size(w) of every worker, in the backend's memory.
  const std::int64_t* offsets() const { return device_offsets_.data(); }
  const std::int64_t* sizes() const { return device_sizes_.data(); }

  DeviceSamples(const SupervisedSamples<T>& problem, int workers, Backend backend);

 private:
  const SupervisedSamples<T>& problem_;
  ModelForm form_;
  Backend backend_;
  std::int64_t features_ = 0;
  std::vector<std::int64_t> offsets_, sizes_;
  Buffer<T> samples_;  // every shard's rows, shard after shard
  Buffer<int> labels_;
  Buffer<std::int64_t> device_offsets_, device_sizes_;
};

// One run's gradients: the minibatches' rows, the activations, the per-worker results.
template <typename T>
class BatchedGradients {
 public:
  BatchedGradients(std::shared_ptr<const DeviceSamples<T>> samples, std::int64_t dimension);

  // Step ctx's gradients at x (every worker's, or row w of n x d for worker w) into g (n x d);
  // each worker's minibatch loss and gradient norm into `losses` and `norms`.
  void Compute(const StepContext& ctx, WorkerParameters<T> x, Buffer<T>& g,
               std::span<double> losses, std::span<double> norms);

 private:
  void DrawMinibatches(const StepContext& ctx);
  void GatherSamples();  // the network's input: the minibatches' rows, gathered
  Minibatch batch() const { return {index_.data(), counts_.data(), rows_}; }
  MinibatchRows<T> Samples() const;
  void NetworkGradient(WorkerParameters<T> x, Buffer<T>& g);

  std::shared_ptr<const DeviceSamples<T>> samples_;
  std::int64_t d_;
  int n_;
  std::int64_t rows_;  // R: the batch size, or the largest shard for full-shard gradients
  std::vector<Layer> layers_;
  Buffer<std::int64_t> index_, counts_;
  Buffer<double> sample_losses_;  // n x R
  Buffer<T> residual_;            // logistic regression: n x R
  // The network, per layer l: z_[l] n x R x outputs (then dz), h_[l] its input n x R x inputs
  // (h_[0]: the minibatch's samples, gathered).
  std::vector<Buffer<T>> z_, h_;
  Buffer<double> loss_, norm_;  // n
};

}  // namespace lemmalab::batched
