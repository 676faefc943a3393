// The element-wise work of every worker's stochastic gradient at once (batched/gradients.h), run
// by ForEach on the CPU or as one CUDA launch per phase: the supervised models of
// problems/models.cc (binary logistic regression, the softmax network) on a minibatch per worker.
//
// Layout: the training samples of all shards are one N x F row-major array, worker w's minibatch
// is rows index[w R + r] of it for r < counts[w] (R: the largest count; the rest is padding,
// zero in every activation and dz), and a layer's activations are n x R x width. The network's
// matrix products are not here: they are BatchedProduct's (cuBLAS on the GPU), between these
// phases. Sums agree with the CPU's BLAS products to rounding, not bit for bit; the per-sample
// functions are problems/model_element.h's.
//
// nvcc compiles this header for the device: C++17, no Eigen, no standard containers.
#pragma once

#include <cstdint>

#include "batched/row_streams.h"
#include "core/host_device.h"
#include "core/host_device_math.h"
#include "problems/minibatch_element.h"
#include "problems/model_element.h"

namespace lemmalab::batched {

// Worker w's parameters: one vector for all workers (stride 0) or row w of n x d (stride d).
template <typename T>
struct WorkerParameters {
  const T* x;
  std::int64_t stride;

  LEMMALAB_HOST_DEVICE const T* Of(std::int64_t w) const { return x + w * stride; }
};

// Worker w's minibatch: its rows of the samples, and how many there are.
struct Minibatch {
  const std::int64_t* index;   // n x R: rows of the samples
  const std::int64_t* counts;  // n
  std::int64_t rows;           // R

  LEMMALAB_HOST_DEVICE bool Has(std::int64_t w, std::int64_t r) const { return r < counts[w]; }
};

// Per worker w: its minibatch of the step, `rows` positions of its shard drawn from its
// kMinibatch stream (problems/minibatch_element.h, the CPU run's draw), as rows of the samples.
struct DrawMinibatch {
  RowStreams streams;           // the step's kMinibatch streams: row w is worker w's
  const std::int64_t* offsets;  // n: worker w's shard's first row in the samples
  const std::int64_t* sizes;    // n: its size
  std::int64_t rows;            // R
  std::int64_t* index;          // n x R

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t w) const {
    StreamReader<StreamAt> words = streams.Read(w);
    std::int64_t* positions = index + w * rows;
    minibatch::DrawPositions(static_cast<std::uint64_t>(sizes[w]), words, positions, rows);
    for (std::int64_t r = 0; r < rows; ++r) positions[r] += offsets[w];
  }
};

// Worker w's sample r: a row of the samples (N x width), read through the minibatch.
template <typename T>
struct MinibatchRows {
  const T* samples;
  Minibatch batch;
  std::int64_t width;

  LEMMALAB_HOST_DEVICE const T* Row(std::int64_t w, std::int64_t r) const {
    return samples + batch.index[w * batch.rows + r] * width;
  }
};

// Binary logistic regression's forward pass, per (w, r): z = a.x_w + b (b with the intercept),
// the loss log(1 + exp(z)) - y z in double and the residual sigmoid(z) - y.
template <typename T>
struct LogisticForward {
  MinibatchRows<T> input;
  const int* labels;  // N
  WorkerParameters<T> x;
  bool intercept;
  T* residual;     // n x R
  double* losses;  // n x R

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t w = k / input.batch.rows, r = k % input.batch.rows;
    if (!input.batch.Has(w, r)) {
      residual[k] = T(0);
      losses[k] = 0;
      return;
    }
    const T* a = input.Row(w, r);
    const T* xw = x.Of(w);
    T z = T(0);
    for (std::int64_t f = 0; f < input.width; ++f) z += a[f] * xw[f];
    if (intercept) z += xw[input.width];
    const auto label = static_cast<T>(labels[input.batch.index[k]]);
    losses[k] = model::Softplus(static_cast<double>(z)) - static_cast<double>(label * z);
    residual[k] = model::Sigmoid(z) - label;
  }
};

// Logistic regression's gradient sum, per (w, j): sum_r residual_r a_rj (j < F), sum_r residual_r
// (the intercept's j = F).
template <typename T>
struct LogisticGradient {
  MinibatchRows<T> input;
  const T* residual;  // n x R
  std::int64_t d;
  T* g;  // n x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t w = k / d, j = k % d;
    T sum = T(0);
    for (std::int64_t r = 0; input.batch.Has(w, r); ++r) {
      const T e = residual[w * input.batch.rows + r];
      sum += j < input.width ? input.Row(w, r)[j] * e : e;
    }
    g[k] = sum;
  }
};

// Worker w's minibatch gathered for the network's products (batched/backend.h's
// BatchedProduct), per (w, r, f): n x R x F, padding rows zero.
template <typename T>
struct GatherRows {
  MinibatchRows<T> rows;
  T* gathered;  // n x R x F

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t f = k % rows.width, wr = k / rows.width;
    const std::int64_t w = wr / rows.batch.rows, r = wr % rows.batch.rows;
    gathered[k] = rows.batch.Has(w, r) ? rows.Row(w, r)[f] : T(0);
  }
};

// A dense layer's pre-activations after its product z = h W^T, per (w, r, o): z + b_o (b at
// `bias` of x_w), and the activation relu(z) = max(z, 0) or tanh(z) into h unless h is null
// (the last layer). Padding rows get 0 in both, so they add nothing to the products after.
template <typename T>
struct BiasActivate {
  WorkerParameters<T> x;
  std::int64_t bias, outputs;
  Minibatch batch;
  bool relu;
  T* z;  // n x R x outputs
  T* h;  // n x R x outputs, or null

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t o = k % outputs, wr = k / outputs;
    const std::int64_t w = wr / batch.rows, r = wr % batch.rows;
    const T value = batch.Has(w, r) ? z[k] + x.Of(w)[bias + o] : T(0);
    z[k] = value;
    if (h != nullptr) h[k] = relu ? (value < T(0) ? T(0) : value) : hd::Tanh(value);
  }
};

// Softmax cross-entropy per (w, r) on the logits (n x R x C), in place: the loss
// log sum exp(z) - z_y in double, and the logits replaced by p - onehot(y).
template <typename T>
struct SoftmaxCrossEntropy {
  T* logits;
  const int* labels;  // N
  Minibatch batch;
  std::int64_t classes;
  double* losses;  // n x R

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t w = k / batch.rows, r = k % batch.rows;
    T* row = logits + k * classes;
    if (!batch.Has(w, r)) {  // no loss; its dz is BiasActivate's 0
      losses[k] = 0;
      return;
    }
    T top = row[0];
    for (std::int64_t c = 1; c < classes; ++c) top = row[c] > top ? row[c] : top;
    T sum = T(0);
    for (std::int64_t c = 0; c < classes; ++c) sum += hd::Exp(row[c] - top);
    const T log_sum = top + hd::Log(sum);
    const int label = labels[batch.index[k]];
    losses[k] = static_cast<double>(log_sum) - static_cast<double>(row[label]);
    for (std::int64_t c = 0; c < classes; ++c) row[c] = hd::Exp(row[c] - log_sum);
    row[label] -= T(1);
  }
};

// A dense layer's bias gradient sums, per (w, o): db_o = sum_r dz_ro (the weights' are a
// product, dW = dz^T h).
template <typename T>
struct BiasGradient {
  const T* dz;  // n x R x outputs
  Minibatch batch;
  std::int64_t outputs, bias, d;
  T* g;  // n x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t w = k / outputs, o = k % outputs;
    T sum = T(0);
    for (std::int64_t r = 0; batch.Has(w, r); ++r) sum += dz[(w * batch.rows + r) * outputs + o];
    g[w * d + bias + o] = sum;
  }
};

// Back through the activation, in place on the product dh = dz W, per (w, r, i):
// dh_i [h_i > 0] (relu) or dh_i (1 - h_i^2) (tanh), h the activation.
template <typename T>
struct ActivationBackward {
  const T* h;  // n x R x width
  bool relu;
  T* dh;  // n x R x width: becomes the previous layer's dz

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    dh[k] = relu ? dh[k] * (h[k] > T(0) ? T(1) : T(0)) : dh[k] * (T(1) - h[k] * h[k]);
  }
};

// The minibatch mean and the regulariser's gradient, per (w, j): g / count, + l2 x,
// + 2 lambda x / (1 + x^2)^2 (SupervisedProblem's AddRegularizer).
template <typename T>
struct FinishGradient {
  WorkerParameters<T> x;
  const std::int64_t* counts;
  std::int64_t d;
  T l2, lambda;
  T* g;  // n x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t w = k / d, j = k % d;
    const T v = x.Of(w)[j];
    T value = g[k] / static_cast<T>(counts[w]);
    if (l2 > T(0)) value += l2 * v;
    if (lambda > T(0)) {
      const T s = T(1) + v * v;
      value += T(2) * lambda * v / (s * s);
    }
    g[k] = value;
  }
};

// Per worker: its minibatch loss (the mean of its samples' losses plus the regulariser at x_w,
// (l2 / 2) ||x||^2 + lambda sum x^2 / (1 + x^2), in double) and ||g_w||.
template <typename T>
struct WorkerSummaries {
  const double* losses;  // n x R
  Minibatch batch;
  WorkerParameters<T> x;
  const T* g;  // n x d
  std::int64_t d;
  double l2, lambda;
  double* loss;  // n
  double* norm;  // n

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t w) const {
    double sum = 0;
    for (std::int64_t r = 0; batch.Has(w, r); ++r) sum += losses[w * batch.rows + r];
    double squares = 0, bounded = 0, g_squares = 0;
    const T* xw = x.Of(w);
    for (std::int64_t j = 0; j < d; ++j) {
      const double v = static_cast<double>(xw[j]), v2 = v * v;
      squares += v2;
      bounded += v2 / (1 + v2);
      const double gj = static_cast<double>(g[w * d + j]);
      g_squares += gj * gj;
    }
    double regulariser = 0;
    if (l2 > 0) regulariser += 0.5 * l2 * squares;
    if (lambda > 0) regulariser += lambda * bounded;
    loss[w] = sum / static_cast<double>(batch.counts[w]) + regulariser;
    norm[w] = hd::Sqrt(g_squares);
  }
};

}  // namespace lemmalab::batched

// Every functor of this header ForEach runs, for each scalar type (cuda/batched_loops.cu).
#define LEMMALAB_GRADIENT_FUNCTORS(X, T)         \
  X(::lemmalab::batched::LogisticForward<T>)     \
  X(::lemmalab::batched::LogisticGradient<T>)    \
  X(::lemmalab::batched::GatherRows<T>)          \
  X(::lemmalab::batched::BiasActivate<T>)        \
  X(::lemmalab::batched::SoftmaxCrossEntropy<T>) \
  X(::lemmalab::batched::BiasGradient<T>)        \
  X(::lemmalab::batched::ActivationBackward<T>)  \
  X(::lemmalab::batched::FinishGradient<T>)      \
  X(::lemmalab::batched::WorkerSummaries<T>)

#define LEMMALAB_GRADIENT_UNTYPED_FUNCTORS(X) X(::lemmalab::batched::DrawMinibatch)
