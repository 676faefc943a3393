// The element-wise work of every worker's stochastic gradient at once (batched/gradients.h), run
// by ForEach on the CPU or as one CUDA launch per phase: the supervised models of
// problems/models.cc (binary logistic regression, the softmax network) on a minibatch per worker.
//
// Layout: the training samples of all shards are one N x F row-major array, worker w's minibatch
// is rows index[w R + r] of it for r < counts[w] (R: the largest count; the rest is padding
// that every phase skips), and a layer's activations are n x R x width. Products are summed in
// index order, so they agree with the CPU's BLAS products to rounding, not bit for bit; the
// per-sample functions are problems/model_element.h's.
//
// nvcc compiles this header for the device: C++17, no Eigen, no standard containers.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/host_device_math.h"
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

// A layer's input for sample r of worker w: a row of the samples (the first layer) or the
// previous layer's activations (n x R x width).
template <typename T>
struct LayerInput {
  const T* samples;  // N x width, read through the minibatch; null: `activations`
  const T* activations;
  Minibatch batch;
  std::int64_t width;

  LEMMALAB_HOST_DEVICE const T* Row(std::int64_t w, std::int64_t r) const {
    if (samples != nullptr) return samples + batch.index[w * batch.rows + r] * width;
    return activations + (w * batch.rows + r) * width;
  }
};

// Binary logistic regression's forward pass, per (w, r): z = a.x_w + b (b with the intercept),
// the loss log(1 + exp(z)) - y z in double and the residual sigmoid(z) - y.
template <typename T>
struct LogisticForward {
  LayerInput<T> input;
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
  LayerInput<T> input;
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

// A dense layer's pre-activations, per (w, r, o): z = sum_i in_i W_oi + b_o, with W (out x in,
// row-major) and b at `weights` and `bias` of x_w. Padding rows get 0.
template <typename T>
struct DenseForward {
  LayerInput<T> input;
  WorkerParameters<T> x;
  std::int64_t weights, bias, outputs;
  T* z;  // n x R x outputs

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t o = k % outputs, wr = k / outputs;
    const std::int64_t w = wr / input.batch.rows, r = wr % input.batch.rows;
    if (!input.batch.Has(w, r)) {
      z[k] = T(0);
      return;
    }
    const T* a = input.Row(w, r);
    const T* row = x.Of(w) + weights + o * input.width;
    T sum = T(0);
    for (std::int64_t i = 0; i < input.width; ++i) sum += a[i] * row[i];
    z[k] = sum + x.Of(w)[bias + o];
  }
};

// h = relu(z) = max(z, 0) or tanh(z).
template <typename T>
struct Activate {
  const T* z;
  T* h;
  bool relu;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    h[k] = relu ? (z[k] < T(0) ? T(0) : z[k]) : hd::Tanh(z[k]);
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
    if (!batch.Has(w, r)) {
      losses[k] = 0;
      return;
    }
    T* row = logits + k * classes;
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

// A dense layer's parameter gradient sums, per (w, e) with e over the layer's out x in weights
// then its out biases: dW_oi = sum_r dz_ro in_ri, db_o = sum_r dz_ro.
template <typename T>
struct DenseGradient {
  LayerInput<T> input;
  const T* dz;  // n x R x outputs
  std::int64_t outputs, weights, bias, d;
  T* g;  // n x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t per_worker = outputs * (input.width + 1);
    const std::int64_t w = k / per_worker, e = k % per_worker;
    const bool is_weight = e < outputs * input.width;
    const std::int64_t o = is_weight ? e / input.width : e - outputs * input.width;
    const std::int64_t i = is_weight ? e % input.width : 0;
    T sum = T(0);
    for (std::int64_t r = 0; input.batch.Has(w, r); ++r) {
      const T delta = dz[(w * input.batch.rows + r) * outputs + o];
      sum += is_weight ? delta * input.Row(w, r)[i] : delta;
    }
    g[w * d + (is_weight ? weights + o * input.width + i : bias + o)] = sum;
  }
};

// Back through a dense layer and the activation before it, per (w, r, i):
// dh_i = sum_o dz_o W_oi, then dz_prev_i = dh_i [h_i > 0] (relu) or dh_i (1 - h_i^2) (tanh),
// h the activation (the layer's input).
template <typename T>
struct DenseBackward {
  const T* dz;  // n x R x outputs
  WorkerParameters<T> x;
  std::int64_t weights, outputs, inputs, rows;
  const T* h;  // n x R x inputs
  bool relu;
  T* dz_previous;  // n x R x inputs

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t i = k % inputs, wr = k / inputs, w = wr / rows;
    const T* delta = dz + wr * outputs;
    const T* weight = x.Of(w) + weights + i;
    T dh = T(0);
    for (std::int64_t o = 0; o < outputs; ++o) dh += delta[o] * weight[o * inputs];
    dz_previous[k] = relu ? dh * (h[k] > T(0) ? T(1) : T(0)) : dh * (T(1) - h[k] * h[k]);
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
  X(::lemmalab::batched::DenseForward<T>)        \
  X(::lemmalab::batched::Activate<T>)            \
  X(::lemmalab::batched::SoftmaxCrossEntropy<T>) \
  X(::lemmalab::batched::DenseGradient<T>)       \
  X(::lemmalab::batched::DenseBackward<T>)       \
  X(::lemmalab::batched::FinishGradient<T>)      \
  X(::lemmalab::batched::WorkerSummaries<T>)
