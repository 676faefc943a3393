// The element-wise work of a batched step (batched/optimizers.h): one functor per phase, run for
// every index of its range by ForEach (batched/backend.h), on the CPU or as one CUDA launch for
// all workers at once. Worker i's vector of d elements is row i of an n x d row-major array.
//
// Every functor does, per element, exactly the arithmetic of the CPU optimizer it stands for, in
// the same order and with the same roundings (nvcc compiles with --fmad=false and g++ with
// -ffp-contract=off, so neither contracts a product and a sum): the CPU's Eigen expressions
// evaluate element by element, and the 1-bit decisions are compressors/one_bit_element.h's,
// which the CPU compressors use too. tests/batched_optimizer_test.cc holds the two to the same
// bits.
//
// nvcc compiles this header for the device: C++17, no Eigen, no standard containers.
#pragma once

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>

#include "batched/row_streams.h"
#include "compressors/one_bit_element.h"
#include "compressors/random_k_element.h"
#include "compressors/sparse_element.h"
#include "core/host_device.h"
#include "core/host_device_math.h"
#include "optimizers/lamb_element.h"

namespace lemmalab::batched {

using hd::Abs;
using hd::Sqrt;

// Eigen's cwiseMax of two finite values: b where a < b, else a.
template <typename T>
LEMMALAB_HOST_DEVICE inline T Larger(T a, T b) {
  return a < b ? b : a;
}

// mean[j] = (sum_i rows[i][j]) / n, summed from zero in worker order: MeanOfRawMessages.
template <typename T>
struct MeanOfRows {
  const T* rows;
  std::int64_t workers, d;
  T* mean;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    T sum = T(0);
    for (std::int64_t i = 0; i < workers; ++i) sum += rows[i * d + j];
    mean[j] = sum / static_cast<T>(workers);
  }
};

// x <- x - lr g (SGD's update of the mean gradient).
template <typename T>
struct SgdStep {
  T* x;
  const T* g;
  T lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const { x[j] -= lr * g[j]; }
};

// Adam's moments of the mean gradient g (onebit-adam.txt Eq. 1):
// m <- beta1 m + (1 - beta1) g, v <- beta2 v + (1 - beta2) g^2.
template <typename T>
struct AdamMoments {
  const T* g;
  T* m;
  T* v;
  T beta1, one_minus_beta1, beta2, one_minus_beta2;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    m[j] = beta1 * m[j] + one_minus_beta1 * g[j];
    v[j] = beta2 * v[j] + one_minus_beta2 * (g[j] * g[j]);
  }
};

// Adam's update in PyTorch's order (optimizers/adam.cc, AdamUpdate): x <- x - step m / denominator
// with denominator sqrt(v) / sqrt(c2) + eps (eps outside) or sqrt(v / c2 + eps) (eps inside).
template <typename T>
struct AdamUpdate {
  T* x;
  const T* m;
  const T* v;
  T step, eps;
  T c2;  // eps inside: the bias correction 1 - beta2^t; outside: its square root
  bool eps_inside;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    const T denominator = eps_inside ? Sqrt(v[j] / c2 + eps) : Sqrt(v[j]) / c2 + eps;
    x[j] -= step * (m[j] / denominator);
  }
};

// Birder's worker phase for every worker's element at once (birder.txt Alg. 1 lines 5-8, the
// rows of n workers as one array): m, b_hat, b, b + eps and the quantizer's input m / (b + eps).
template <typename T>
struct BirderMoments {
  const T* g;
  T* m;
  T* b_hat;
  T* b;
  T* denominator;
  T* update;
  T beta, one_minus_beta, eps;
  bool max_rule;  // line 7 after T0: b = max(b_prev, b_hat)

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    m[k] = beta * m[k] + one_minus_beta * g[k];
    b_hat[k] = beta * b_hat[k] + one_minus_beta * Abs(g[k]);
    b[k] = max_rule ? Larger(b[k], b_hat[k]) : b_hat[k];
    denominator[k] = b[k] + eps;
    update[k] = m[k] / denominator[k];
  }
};

// What a 1-bit sender compresses, row by row: u = x + a e, or u = x without error feedback
// (KernelInput's arithmetic: the product and the sum each rounded).
template <typename T>
struct RowInput {
  const T* x;
  const T* e;  // null: no error feedback
  T a;

  LEMMALAB_HOST_DEVICE T operator[](std::int64_t k) const {
    return e == nullptr ? x[k] : x[k] + a * e[k];
  }
};

// The blocks of a 1-bit format, each with its own scale: block b is [ends[b - 1], ends[b]) with
// ends[-1] = 0, the same for every row.
struct BlockEnds {
  const std::int64_t* ends;
  std::int64_t count;

  LEMMALAB_HOST_DEVICE std::int64_t Begin(std::int64_t b) const { return b == 0 ? 0 : ends[b - 1]; }
  // The block holding element j: the first b with ends[b] > j.
  LEMMALAB_HOST_DEVICE std::int64_t Of(std::int64_t j) const {
    std::int64_t lo = 0, hi = count - 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (ends[mid] > j) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
};

// The kRms and kMeanAbs scales' sums in the CPU's fixed order (one_bit_element.h): index (row, b,
// p) adds u_j^2 or |u_j|, in double, over the elements j of block b with (j - begin) % kPartials
// = p, in index order, into partials[(row B + b) kPartials + p].
template <typename T>
struct OneBitPartialSums {
  RowInput<T> u;
  std::int64_t d;
  BlockEnds blocks;
  bool squares;  // kRms; else kMeanAbs
  double* partials;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t p = index % one_bit::kPartials, rb = index / one_bit::kPartials;
    const std::int64_t row = rb / blocks.count, b = rb % blocks.count;
    double sum = 0;
    for (std::int64_t j = blocks.Begin(b) + p; j < blocks.ends[b]; j += one_bit::kPartials) {
      const double v = static_cast<double>(u[row * d + j]);
      sum += squares ? v * v : Abs(v);
    }
    partials[index] = sum;
  }
};

// The probes' squared norms of state rows (Observable::SquaredNorm) in FixedOrderSquaredNorm's
// order, which is the scales' above for one block: index (row, p) adds v_j^2, in double, over the
// j of the row with j % kPartials = p, in index order.
template <typename T>
struct SquaredNormPartials {
  const T* rows;  // rows x d
  std::int64_t d;
  double* partials;  // rows x kPartials

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t p = index % one_bit::kPartials, row = index / one_bit::kPartials;
    double sum = 0;
    for (std::int64_t j = p; j < d; j += one_bit::kPartials) {
      const double v = static_cast<double>(rows[row * d + j]);
      sum += v * v;
    }
    partials[index] = sum;
  }
};

// Per row: its kPartials partial sums combined in one_bit_element.h's order.
struct CombineRowPartials {
  const double* partials;  // rows x kPartials
  double* sums;            // rows

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t row) const {
    sums[row] = one_bit::CombinePartials(partials + row * one_bit::kPartials);
  }
};

// The kMaxAbs scale's reduction: max |u_j| over the finite u_j of block b of a row (order-free).
template <typename T>
struct OneBitMaxAbs {
  RowInput<T> u;
  std::int64_t d;
  BlockEnds blocks;
  double* largest;  // rows x blocks

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t rb) const {
    const std::int64_t row = rb / blocks.count, b = rb % blocks.count;
    T result = T(0);
    for (std::int64_t j = blocks.Begin(b); j < blocks.ends[b]; ++j) {
      const T v = u[row * d + j];
      if (one_bit::IsFinite(v)) result = Larger(result, Abs(v));
    }
    largest[rb] = static_cast<double>(result);
  }
};

// Every row's block scales from their reductions: ScaleFromReduction of the combined partial sums
// (kRms, kMeanAbs) or of the largest magnitude (kMaxAbs).
struct OneBitScales {
  one_bit::Scale kind;
  BlockEnds blocks;
  const double* partials;  // kRms, kMeanAbs
  const double* largest;   // kMaxAbs
  float* scales;           // rows x blocks

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t rb) const {
    const std::int64_t b = rb % blocks.count;
    const double reduction = kind == one_bit::Scale::kMaxAbs
                                 ? largest[rb]
                                 : one_bit::CombinePartials(partials + one_bit::kPartials * rb);
    const auto size = static_cast<double>(blocks.ends[b] - blocks.Begin(b));
    scales[rb] = one_bit::ScaleFromReduction(kind, reduction, size);
  }
};

// The scale of element j of a row (1 for a format without scales), in T as the CPU reads it.
struct RowScales {
  const float* scales;  // rows x blocks; null: no scales
  BlockEnds blocks;

  template <typename T>
  LEMMALAB_HOST_DEVICE T At(std::int64_t row, std::int64_t b) const {
    return scales == nullptr ? T(1) : static_cast<T>(scales[row * blocks.count + b]);
  }
};

// *counter += amount, from any number of threads at once.
LEMMALAB_HOST_DEVICE inline void AddCount(unsigned long long* counter, unsigned long long amount) {
  if (amount == 0) return;
#if defined(__CUDA_ARCH__)
  atomicAdd(counter, amount);
#else
  *counter += amount;                    // the host runs one index at a time
#endif
}

// *counter += 1, from any number of threads at once. On the GPU the lanes of a warp that count
// into the same counter add once, together: threads counting into a few counters (a radix pass's
// 256 digits, where most keys share their top digit) would otherwise queue on one address.
LEMMALAB_HOST_DEVICE inline void CountOne(unsigned long long* counter) {
#if defined(__CUDA_ARCH__)
  const unsigned active = __activemask();
  const unsigned peers = __match_any_sync(
      active, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(counter)));
  if (threadIdx.x % 32 == static_cast<unsigned>(__ffs(peers) - 1)) {
    atomicAdd(counter, static_cast<unsigned long long>(__popc(peers)));
  }
#else
  *counter += 1;                         // the host runs one index at a time
#endif
}

// *target = min(*target, value), from any number of threads at once.
LEMMALAB_HOST_DEVICE inline void AtomicMin(std::uint32_t* target, std::uint32_t value) {
#if defined(__CUDA_ARCH__)
  atomicMin(reinterpret_cast<unsigned int*>(target), static_cast<unsigned int>(value));
#else
  if (value < *target) *target = value;  // the host runs one index at a time
#endif
}

// A 1-bit format for every row at once: thread (row, w) packs message word w of the row, the bits
// of elements 32 w, ..., 32 w + 31 of u, each with its block's scale s (the CPU's quantizers:
// Birder's Q sees u / s through the inverse 1 / s), and with error feedback leaves e = u - C(u)
// (compressors/one_bit_reference.cc's arithmetic). counts[2 row] += finite inputs outside
// [-1, 1] (the stochastic draw), counts[2 row + 1] += non-finite inputs.
template <typename T>
struct OneBitEncode {
  RowInput<T> u;
  T* e_out;               // u.e (or null): the error feedback's new e
  std::int64_t d, words;  // elements and message words per row
  bool stochastic;        // Birder's Q (word j of the row's stream for element j), else sign
  RowStreams streams;
  RowScales scales;
  std::uint32_t* bits;         // rows x words
  unsigned long long* counts;  // rows x 2

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / words, w = index % words;
    const std::int64_t first = 32 * w, last = first + 32 < d ? first + 32 : d;
    std::int64_t b = scales.scales == nullptr ? 0 : scales.blocks.Of(first);
    T s = scales.template At<T>(row, b);
    std::uint32_t word = 0;
    unsigned long long outside = 0, non_finite = 0;
    r123::Philox4x32::ctr_type draws = {};
    for (std::int64_t j = first; j < last; ++j) {
      if (scales.scales != nullptr && j >= scales.blocks.ends[b])
        s = scales.template At<T>(row, ++b);
      const std::int64_t k = row * d + j;
      const T v = u[k];
      bool plus;
      if (stochastic) {
        if (j % 4 == 0) draws = streams.Block(row, static_cast<std::uint64_t>(j / 4));
        plus = one_bit::StochasticBit(v, T(1) / s, draws[j % 4]);
        outside += one_bit::OutOfDomain(v) ? 1 : 0;
      } else {
        plus = one_bit::SignBit(v);
      }
      non_finite += one_bit::IsFinite(v) ? 0 : 1;
      if (plus) word |= std::uint32_t{1} << (j - first);
      if (e_out != nullptr) e_out[k] = one_bit::Residual(v, plus, s);
    }
    bits[index] = word;
    AddCount(&counts[2 * row], outside);
    AddCount(&counts[2 * row + 1], non_finite);
  }
};

// Element j of a row's decoded 1-bit message: s or -s.
template <typename T>
LEMMALAB_HOST_DEVICE inline T Decoded(const std::uint32_t* row_bits, T s, std::int64_t j) {
  return ((row_bits[j / 32] >> (j % 32)) & 1u) != 0 ? s : -s;
}

// The mean of n rows' decoded 1-bit messages: the CPU server adds each worker's message decoded
// with weight 1 (value 1 s) to zero in worker order and divides by n.
template <typename T>
struct OneBitMeanOfRows {
  const std::uint32_t* bits;  // rows x words
  RowScales scales;
  std::int64_t workers, d, words;
  T* mean;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t b = scales.scales == nullptr ? 0 : scales.blocks.Of(j);
    T sum = T(0);
    for (std::int64_t i = 0; i < workers; ++i) {
      sum += Decoded(bits + i * words, T(1) * scales.template At<T>(i, b), j);
    }
    mean[j] = sum / static_cast<T>(workers);
  }
};

// out = the decoded 1-bit message of one row (the replicas' m = m_bar of 1-bit Adam line 13).
template <typename T>
struct OneBitDecode {
  const std::uint32_t* bits;
  RowScales scales;  // of one row
  T* out;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t b = scales.scales == nullptr ? 0 : scales.blocks.Of(j);
    out[j] = Decoded(bits, scales.template At<T>(0, b), j);
  }
};

// counts[row] += the non-finite values of each row: what sending them as they are counts
// (the identity compressor's statistics).
template <typename T>
struct NonFiniteCounts {
  const T* values;
  std::int64_t d;
  unsigned long long* counts;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    AddCount(&counts[k / d], one_bit::IsFinite(values[k]) ? 0 : 1);
  }
};

// 1-bit Adam's worker momentum after warmup (onebit-adam.txt Alg. 1 line 6) for every worker:
// m^(i) = beta1 m_prev + (1 - beta1) g^(i), m_prev the synchronised m or the worker's own.
template <typename T>
struct OneBitAdamMomentum {
  const T* g;
  T* worker_m;  // n x d
  const T* m;   // d: the synchronised m
  std::int64_t d;
  bool own;
  T beta1, one_minus_beta1;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const T previous = own ? worker_m[k] : m[k % d];
    worker_m[k] = beta1 * previous + one_minus_beta1 * g[k];
  }
};

// The preconditioner of 1-bit Adam (optimizers/one_bit_adam.cc): sqrt(v) + eta, or sqrt(v + eta)
// with eta inside.
template <typename T>
struct RootDenominator {
  const T* v;
  T* denominator;
  T eta;
  bool eta_inside;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    denominator[j] = eta_inside ? Sqrt(v[j] + eta) : Sqrt(v[j]) + eta;
  }
};

// x <- x - lr (m / denominator).
template <typename T>
struct PreconditionedStep {
  T* x;
  const T* m;
  const T* denominator;
  T lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    x[j] -= lr * (m[j] / denominator[j]);
  }
};

// The AMSGrad server of dist-SPAMS (spams.txt Alg. 2 lines 13-16, optimizers/spams.cc) on the
// mean of the decoded messages g, and the replicas' step by the direction it sends back.
template <typename T>
struct AmsGradStep {
  const T* g;
  T* m;
  T* v;
  T* v_hat;
  T* denominator;
  T* x;
  T beta1, one_minus_beta1, beta2, one_minus_beta2, eps, lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    m[j] = beta1 * m[j] + one_minus_beta1 * g[j];           // line 13
    v[j] = beta2 * v[j] + one_minus_beta2 * (g[j] * g[j]);  // line 14
    v_hat[j] = Larger(v_hat[j], v[j]);                      // line 15
    denominator[j] = Sqrt(v_hat[j] + eps);                  // line 16
    const T direction = m[j] / denominator[j];
    x[j] -= lr * direction;
  }
};

// EF21-SGDM's momentum for every worker (optimizers/ef21.cc): v = g at the first step, then
// v = (1 - eta) v + eta g.
template <typename T>
struct Ef21Momentum {
  const T* g;
  T* v;
  bool first;
  T one_minus_eta, eta;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    v[k] = first ? g[k] : one_minus_eta * v[k] + eta * g[k];
  }
};

// out = a - b, element by element (EF21's y - g_i for every worker).
template <typename T>
struct Difference {
  const T* a;
  const T* b;
  T* out;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const { out[k] = a[k] - b[k]; }
};

// out = in.
template <typename T>
struct Copy {
  const T* in;
  T* out;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const { out[k] = in[k]; }
};

// acc += each row's own decoded 1-bit message, weight 1 (EF21's g_i <- g_i + c_i, the worker
// decoding its own message as the server does).
template <typename T>
struct OneBitDecodeAddRows {
  const std::uint32_t* bits;  // rows x words
  RowScales scales;
  std::int64_t d, words;
  T* acc;  // rows x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t row = k / d, j = k % d;
    const std::int64_t b = scales.scales == nullptr ? 0 : scales.blocks.Of(j);
    acc[k] += Decoded(bits + row * words, T(1) * scales.template At<T>(row, b), j);
  }
};

// The replicas' EF21 step: g = mean (the first step of init = "full") or g = g + mean, then
// x <- x - lr g.
template <typename T>
struct Ef21Step {
  const T* mean;
  T* g;
  T* x;
  bool replace;
  T lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    g[j] = replace ? mean[j] : g[j] + mean[j];
    x[j] -= lr * g[j];
  }
};

// out[k] = row[k % d]: one vector into every worker's row (1-bit LAMB's m_Tw into each m^(i)).
template <typename T>
struct BroadcastRow {
  const T* row;
  std::int64_t d;
  T* rows;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const { rows[k] = row[k % d]; }
};

// LAMB's direction (onebit-lamb.txt Eq. 1, optimizers/lamb.cc):
// u = m_scale m / (sqrt(v_scale v) + eps), the scales 1 without bias correction.
template <typename T>
struct LambDirection {
  const T* m;
  const T* v;
  T* u;
  T m_scale, v_scale, eps;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    u[j] = m_scale * m[j] / (Sqrt(v_scale * v[j]) + eps);
  }
};

// Per layer l, from the partial sums of squares of x_{t-1} and u (OneBitPartialSums over the
// layers): c^(l) of Eq. (1), as the step uses it (double) and as the state keeps it (T); with
// c_avg, also 1-bit LAMB's line 2: c_avg = beta3 c_avg + (1 - beta3) c^(l), from the kept c.
template <typename T>
struct LambLayerScales {
  const double* x_partials;  // layers x kPartials
  const double* u_partials;
  double c_min, c_max;
  bool zero_is_one;
  double* c_step;  // layers
  T* c;            // layers
  double* c_avg;   // layers, or null: no average kept
  double beta3;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t l) const {
    const double x_norm = Sqrt(one_bit::CombinePartials(x_partials + l * one_bit::kPartials));
    const double u_norm = Sqrt(one_bit::CombinePartials(u_partials + l * one_bit::kPartials));
    c_step[l] = lamb::ScalingCoefficient(x_norm, u_norm, c_min, c_max, zero_is_one);
    c[l] = static_cast<T>(c_step[l]);
    if (c_avg != nullptr) c_avg[l] = beta3 * c_avg[l] + (1 - beta3) * static_cast<double>(c[l]);
  }
};

// x <- x - (lr c^(l)) u per layer l, with the factor rounded to T once (LAMB's update); with a
// denominator, x <- x - ((lr c^(l)) u) / denominator (1-bit LAMB's line 21 on the frozen v).
template <typename T>
struct LayerStep {
  T* x;
  const T* u;
  const T* denominator;  // null: none
  const double* c;       // layers
  BlockEnds layers;
  double lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    const T step = static_cast<T>(lr * c[layers.Of(j)]);
    x[j] -= denominator == nullptr ? step * u[j] : step * u[j] / denominator[j];
  }
};

// Every row's layer l multiplied by k_l (1-bit LAMB's momentum scaling, App. A.5.2), or divided
// by it; rows of d elements.
template <typename T>
struct LayerFactors {
  const T* in;
  T* out;
  const double* k;  // layers
  BlockEnds layers;
  std::int64_t d;
  bool divide;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const T factor = static_cast<T>(k[layers.Of(index % d)]);
    out[index] = divide ? in[index] / factor : factor * in[index];
  }
};

// 1-bit LAMB's lines 15-16: the gradient reconstructed from the new and the old m,
// g = (m_bar - beta1 m) / (1 - beta1), into the fresh variance v = beta2 v + (1 - beta2) g^2.
template <typename T>
struct ReconstructedVariance {
  const T* m_bar;
  const T* m;
  T* v;
  T beta1, one_minus_beta1, beta2, one_minus_beta2;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    const T g = (m_bar[j] - beta1 * m[j]) / one_minus_beta1;
    v[j] = beta2 * v[j] + one_minus_beta2 * (g * g);
  }
};

// Line 17's max over a part of a layer: the largest defined lamb::RatioTerm, if any.
struct RatioPartial {
  double largest;
  bool defined;
};

// Index (l, p) takes the terms of layer l's elements j with (j - begin) % kPartials = p (the max
// does not depend on the order; the partition only spreads the work).
template <typename T>
struct RatioPartials {
  const T* frozen;
  const T* fresh;
  BlockEnds layers;
  bool denominators;
  double eps;
  RatioPartial* partials;  // layers x kPartials

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t p = index % one_bit::kPartials, l = index / one_bit::kPartials;
    RatioPartial out = {-INFINITY, false};
    for (std::int64_t j = layers.Begin(l) + p; j < layers.ends[l]; j += one_bit::kPartials) {
      double term;
      if (lamb::RatioTerm(static_cast<double>(frozen[j]), static_cast<double>(fresh[j]),
                          denominators, eps, term)) {
        out.largest = lamb::Larger(out.largest, term);
        out.defined = true;
      }
    }
    partials[index] = out;
  }
};

// Per layer, 1-bit LAMB's lines 17-20: the target r (the previous r where no term is defined),
// r clipped to the previous one and to [r_min, r_max], and c^(l) = r c_avg^(l).
template <typename T>
struct LayerRatios {
  const RatioPartial* partials;  // layers x kPartials
  T* target;                     // layers
  T* r;                          // layers: r_{t-1} in, r_t out
  const double* c_avg;
  double threshold, r_min, r_max;
  double* c_step;  // layers
  T* c;            // layers

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t l) const {
    const double previous = static_cast<double>(r[l]);
    double largest = -INFINITY;
    bool defined = false;
    for (int p = 0; p < one_bit::kPartials; ++p) {
      const RatioPartial& part = partials[l * one_bit::kPartials + p];
      if (!part.defined) continue;
      largest = lamb::Larger(largest, part.largest);
      defined = true;
    }
    const double wanted = defined ? largest : previous;
    target[l] = static_cast<T>(wanted);
    const double clipped = lamb::ClippedRatio(wanted, previous, threshold, r_min, r_max);
    r[l] = static_cast<T>(clipped);
    c_step[l] = clipped * c_avg[l];
    c[l] = static_cast<T>(c_step[l]);
  }
};

// v <- beta2 v + (1 - beta2) g^2 (0/1 Adam's variance on the steps of T_v).
template <typename T>
struct SecondMoment {
  const T* g;
  T* v;
  T beta2, one_minus_beta2;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    v[j] = beta2 * v[j] + one_minus_beta2 * (g[j] * g[j]);
  }
};

// 0/1 Adam's local step for every worker (optimizers/zero_one_adam.cc):
// x^(i) <- x^(i) - lr (m^(i) / denominator), u^(i) <- u^(i) + lr m^(i); rows of d elements.
template <typename T>
struct ZeroOneAdamLocalStep {
  T* x;        // n x d
  T* u;        // n x d
  const T* m;  // n x d
  const T* denominator;
  std::int64_t d;
  T lr;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    x[k] -= lr * (m[k] / denominator[k % d]);
    u[k] += lr * m[k];
  }
};

// 0/1 Adam's synchronisation by the decoded u_bar: m = u_bar / (the step sizes' sum since the
// last sync), x <- x - u_bar / denominator.
template <typename T>
struct ZeroOneAdamSync {
  const T* u_bar;
  const T* denominator;
  T* m;
  T* x;
  T lr_sum;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    m[j] = u_bar[j] / lr_sum;
    x[j] -= u_bar[j] / denominator[j];
  }
};

// out = u, what a sender compresses (a compression record's input).
template <typename T>
struct Materialize {
  RowInput<T> u;
  T* out;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const { out[k] = u[k]; }
};

// ---------------------------------------------------------------------------------------------
// The sparse and raw senders (batched/senders.h): top-k, random-k and the identity, for every row
// at once, in compressors/sparse_element.h's and the CPU compressors' arithmetic. A sent row is
// kept as flags and values (the decoded message is flag ? scale value : nothing).

// Top-k's rank key of u (sparse::MagnitudeKey), widened so that float and double share the radix
// passes.
template <typename T>
LEMMALAB_HOST_DEVICE inline unsigned long long RankKey(T u) {
  return static_cast<unsigned long long>(sparse::MagnitudeKey(u));
}

// One radix pass of top-k's selection, for every row: counts the next 8-bit digit (at `shift`)
// of the keys whose higher digits equal the row's prefix chosen so far.
template <typename T>
struct KeyDigitCounts {
  RowInput<T> u;
  std::int64_t d;
  const unsigned long long* prefix;  // per row
  int shift;
  unsigned long long* counts;  // rows x 256

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t row = k / d;
    const unsigned long long key = RankKey(u[k]);
    constexpr int kBits = 8 * static_cast<int>(sizeof(T));
    if (shift + 8 < kBits && ((key ^ prefix[row]) >> (shift + 8)) != 0) return;
    CountOne(&counts[row * 256 + ((key >> shift) & 255u)]);
  }
};

// The digit of each row's need-th largest key among those counted (sparse::PickDigit's rule),
// appended to its prefix; `need` drops by the count of keys above it. After the last pass the
// prefix is the threshold key tau and `need` the count of keys equal to tau that are kept.
struct PickKeyDigits {
  const unsigned long long* counts;  // rows x 256
  int shift;
  std::int64_t k;              // > 0 at the first pass: every row starts with need = k, prefix 0
  unsigned long long* prefix;  // per row
  unsigned long long* need;    // per row

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t row) const {
    if (k > 0) {
      need[row] = static_cast<unsigned long long>(k);
      prefix[row] = 0;
    }
    const unsigned long long* histogram = counts + row * 256;
    unsigned long long digit = 255;
    for (; digit > 0 && histogram[digit] < need[row]; --digit) need[row] -= histogram[digit];
    prefix[row] |= digit << shift;
  }
};

// Top-k's kept set of each row: the keys above tau, and the first `need` keys equal to tau in
// index order (the CPU's order: key descending, index ascending). A row is cut into chunks of
// kTieChunk elements so that the rows' chunks mark in parallel: each chunk counts its keys equal
// to tau (CountTies), each row turns its counts into the ties before each chunk (ChunkOffsets),
// and each chunk then knows which of its ties are among the first `need` (MarkTopK).
inline constexpr std::int64_t kTieChunk = 1024;

template <typename T>
struct CountTies {
  RowInput<T> u;
  std::int64_t d, chunks;         // chunks per row
  const unsigned long long* tau;  // per row
  unsigned long long* ties;       // rows x chunks

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / chunks, begin = (index % chunks) * kTieChunk;
    const std::int64_t end = begin + kTieChunk < d ? begin + kTieChunk : d;
    unsigned long long count = 0;
    for (std::int64_t j = begin; j < end; ++j) count += RankKey(u[row * d + j]) == tau[row];
    ties[index] = count;
  }
};

// Per row: counts per chunk (rows x chunks) in, the sum of the counts before each chunk out.
struct ChunkOffsets {
  std::int64_t chunks;
  unsigned long long* counts;  // rows x chunks

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t row) const {
    unsigned long long before = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const unsigned long long count = counts[row * chunks + c];
      counts[row * chunks + c] = before;
      before += count;
    }
  }
};

template <typename T>
struct MarkTopK {
  RowInput<T> u;
  std::int64_t d, chunks;
  const unsigned long long* tau;      // per row
  const unsigned long long* need;     // per row
  const unsigned long long* offsets;  // rows x chunks: the ties before each chunk
  unsigned char* kept;                // rows x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / chunks, begin = (index % chunks) * kTieChunk;
    const std::int64_t end = begin + kTieChunk < d ? begin + kTieChunk : d;
    unsigned long long rank = offsets[index];  // of the next tie in the row
    for (std::int64_t j = begin; j < end; ++j) {
      const unsigned long long key = RankKey(u[row * d + j]);
      bool keep = key > tau[row];
      if (key == tau[row]) keep = rank++ < need[row];
      kept[row * d + j] = keep ? 1 : 0;
    }
  }
};

// Random-k's kept set of every row, its k draws made all at once (compressors/random_k_element.h:
// the CPU's RandomKChoice gives the same set): each row's draws are cut into chunks of
// kDrawChunk, so that the rows' rejected first attempts are listed in order in parallel.
inline constexpr std::int64_t kDrawChunk = 1024;

// Per (row, block of 4 draws): the draws' first attempts from one Philox block of the row's
// stream (draw i from word i); counts[row, chunk] += the chunk's rejections.
struct FloydFirstAttempts {
  RowStreams streams;
  std::int64_t d, k, blocks, chunks;  // blocks of 4 draws and chunks of draws per row
  std::uint32_t* draws;               // rows x k
  unsigned long long* counts;         // rows x chunks, zero before

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / blocks, block = index % blocks;
    const r123::Philox4x32::ctr_type words = streams.Block(row, static_cast<std::uint64_t>(block));
    for (std::int64_t q = 0; q < 4 && 4 * block + q < k; ++q) {
      const std::int64_t i = 4 * block + q;
      const std::uint32_t draw = random_k::FirstAttempt(words[q], d, k, i);
      draws[row * k + i] = draw;
      if (random_k::IsRejected(draw, random_k::Range(d, k, i))) {
        AddCount(&counts[row * chunks + i / kDrawChunk], 1);
      }
    }
  }
};

// Per (row, chunk), after ChunkOffsets: the chunk's rejected draws, ascending, into the row's
// list at the chunk's offset; the last chunk also writes the row's number of rejections.
struct ListRejected {
  const std::uint32_t* draws;  // rows x k
  std::int64_t d, k, chunks;
  const unsigned long long* offsets;  // rows x chunks
  std::uint32_t* rejected;            // rows x k
  unsigned long long* totals;         // rows

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / chunks, chunk = index % chunks;
    const std::int64_t begin = chunk * kDrawChunk;
    const std::int64_t end = begin + kDrawChunk < k ? begin + kDrawChunk : k;
    unsigned long long next = offsets[index];
    for (std::int64_t i = begin; i < end; ++i) {
      if (random_k::IsRejected(draws[row * k + i], random_k::Range(d, k, i))) {
        rejected[row * k + static_cast<std::int64_t>(next++)] = static_cast<std::uint32_t>(i);
      }
    }
    if (chunk == chunks - 1) totals[row] = next;
  }
};

// Per row, in order: the rejected draws' values from the words after the first k.
struct ReplaceRejected {
  RowStreams streams;
  std::int64_t d, k;
  std::uint32_t* draws;              // rows x k
  const std::uint32_t* rejected;     // rows x k
  const unsigned long long* totals;  // rows

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t row) const {
    StreamWords<StreamAt> word_at{streams.Row(row)};
    random_k::ReplaceRejected(draws + row * k, rejected + row * k,
                              static_cast<std::int64_t>(totals[row]), d, k, word_at);
  }
};

// Per (row, i): first[row, t_i] = the smallest i with that value, in two passes (kReset, then
// kLower) over the row's draws.
struct FirstDraws {
  enum Pass { kReset, kLower };
  const std::uint32_t* draws;  // rows x k
  std::int64_t d, k;
  Pass pass;
  std::uint32_t* first;  // rows x d: only the draws' values are touched

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / k, i = index % k;
    std::uint32_t* slot = first + row * d + draws[index];
    if (pass == kReset) {
      *slot = 0xffffffffu;
    } else {
      AtomicMin(slot, static_cast<std::uint32_t>(i));
    }
  }
};

// Per (row, i): the coordinate Floyd's step i keeps, marked in the row's kept set.
struct MarkFloydKept {
  const std::uint32_t* draws;  // rows x k
  const std::uint32_t* first;  // rows x d
  std::int64_t d, k;
  unsigned char* kept;  // rows x d, zero before

  struct FirstOfRow {
    const std::uint32_t* first;
    LEMMALAB_HOST_DEVICE std::uint32_t operator()(std::uint32_t t) const { return first[t]; }
  };

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t row = index / k, i = index % k;
    const std::uint32_t j = random_k::KeptAt(draws + row * k, FirstOfRow{first + row * d}, d, k, i);
    kept[row * d + j] = 1;
  }
};

// A sparse message of every row: the kept values as the wire carries them (a NaN as the wire's
// NaN); with error feedback e <- u off the kept set and u - C(u) on it
// (sparse::KeptResidual). counts[row] += the row's non-finite inputs.
template <typename T>
struct SparseSend {
  RowInput<T> u;
  const unsigned char* kept;
  T* e;  // null: no error feedback
  T scale;
  T* values;
  unsigned long long* counts;  // per row
  std::int64_t d;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const T v = u[k];
    AddCount(&counts[k / d], one_bit::IsFinite(v) ? 0 : 1);
    values[k] = WireNaN(v);
    if (e != nullptr) e[k] = kept[k] != 0 ? sparse::KeptResidual(v, scale) : v;
  }
};

// The identity's message of every row: u as it is; with error feedback e <- u - u (0, or NaN
// where u is not finite). counts[row] += the row's non-finite inputs.
template <typename T>
struct RawSend {
  RowInput<T> u;
  T* e;  // null: no error feedback
  T* values;
  unsigned long long* counts;  // per row
  std::int64_t d;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    const T v = u[k];
    AddCount(&counts[k / d], one_bit::IsFinite(v) ? 0 : 1);
    values[k] = v;
    if (e != nullptr) e[k] = v - v;
  }
};

// Sent rows as the receiver decodes them: element k is scale values[k] where kept (the identity:
// no flags, values[k] itself), and absent elsewhere.
template <typename T>
struct SentRows {
  const unsigned char* kept;  // null: every element (the identity)
  const T* values;
  T scale;

  LEMMALAB_HOST_DEVICE bool Has(std::int64_t k) const { return kept == nullptr || kept[k] != 0; }
  LEMMALAB_HOST_DEVICE T Value(std::int64_t k) const {
    return kept == nullptr ? values[k] : scale * values[k];
  }
};

// The mean of the rows' decoded messages, as the CPU server adds each with weight 1 to zero in
// sender order (CompressedExchange::Average) and divides by their number.
template <typename T>
struct SentMeanOfRows {
  SentRows<T> sent;
  std::int64_t rows, d;
  T* mean;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    T sum = T(0);
    for (std::int64_t i = 0; i < rows; ++i) {
      if (sent.Has(i * d + j)) sum += T(1) * sent.Value(i * d + j);
    }
    mean[j] = sum / static_cast<T>(rows);
  }
};

// out = the first row's decoded message (zero where it keeps nothing).
template <typename T>
struct SentDecode {
  SentRows<T> sent;
  T* out;

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t j) const {
    out[j] = sent.Has(j) ? sent.Value(j) : T(0);
  }
};

// acc += each row's own decoded message, weight 1 (EF21's g_i <- g_i + c_i).
template <typename T>
struct SentDecodeAddRows {
  SentRows<T> sent;
  T* acc;  // rows x d

  LEMMALAB_HOST_DEVICE void operator()(std::int64_t k) const {
    if (sent.Has(k)) acc[k] += T(1) * sent.Value(k);
  }
};

}  // namespace lemmalab::batched

// Every functor ForEach runs, for each scalar type: the CUDA build instantiates its launch for
// each (cuda/batched_loops.cu). A new functor is added here.
#define LEMMALAB_BATCHED_FUNCTORS(X, T)            \
  X(::lemmalab::batched::MeanOfRows<T>)            \
  X(::lemmalab::batched::SgdStep<T>)               \
  X(::lemmalab::batched::AdamMoments<T>)           \
  X(::lemmalab::batched::AdamUpdate<T>)            \
  X(::lemmalab::batched::BirderMoments<T>)         \
  X(::lemmalab::batched::OneBitPartialSums<T>)     \
  X(::lemmalab::batched::SquaredNormPartials<T>)   \
  X(::lemmalab::batched::OneBitMaxAbs<T>)          \
  X(::lemmalab::batched::OneBitEncode<T>)          \
  X(::lemmalab::batched::OneBitMeanOfRows<T>)      \
  X(::lemmalab::batched::OneBitDecode<T>)          \
  X(::lemmalab::batched::NonFiniteCounts<T>)       \
  X(::lemmalab::batched::OneBitAdamMomentum<T>)    \
  X(::lemmalab::batched::RootDenominator<T>)       \
  X(::lemmalab::batched::PreconditionedStep<T>)    \
  X(::lemmalab::batched::AmsGradStep<T>)           \
  X(::lemmalab::batched::Ef21Momentum<T>)          \
  X(::lemmalab::batched::Difference<T>)            \
  X(::lemmalab::batched::Copy<T>)                  \
  X(::lemmalab::batched::OneBitDecodeAddRows<T>)   \
  X(::lemmalab::batched::Ef21Step<T>)              \
  X(::lemmalab::batched::BroadcastRow<T>)          \
  X(::lemmalab::batched::LambDirection<T>)         \
  X(::lemmalab::batched::LambLayerScales<T>)       \
  X(::lemmalab::batched::LayerStep<T>)             \
  X(::lemmalab::batched::LayerFactors<T>)          \
  X(::lemmalab::batched::ReconstructedVariance<T>) \
  X(::lemmalab::batched::RatioPartials<T>)         \
  X(::lemmalab::batched::LayerRatios<T>)           \
  X(::lemmalab::batched::SecondMoment<T>)          \
  X(::lemmalab::batched::ZeroOneAdamLocalStep<T>)  \
  X(::lemmalab::batched::ZeroOneAdamSync<T>)       \
  X(::lemmalab::batched::KeyDigitCounts<T>)        \
  X(::lemmalab::batched::CountTies<T>)             \
  X(::lemmalab::batched::MarkTopK<T>)              \
  X(::lemmalab::batched::SparseSend<T>)            \
  X(::lemmalab::batched::RawSend<T>)               \
  X(::lemmalab::batched::SentMeanOfRows<T>)        \
  X(::lemmalab::batched::SentDecode<T>)            \
  X(::lemmalab::batched::SentDecodeAddRows<T>)     \
  X(::lemmalab::batched::Materialize<T>)
// ... and those without a scalar type.
#define LEMMALAB_BATCHED_UNTYPED_FUNCTORS(X) \
  X(::lemmalab::batched::OneBitScales)       \
  X(::lemmalab::batched::CombineRowPartials) \
  X(::lemmalab::batched::PickKeyDigits)      \
  X(::lemmalab::batched::ChunkOffsets)       \
  X(::lemmalab::batched::FloydFirstAttempts) \
  X(::lemmalab::batched::ListRejected)       \
  X(::lemmalab::batched::ReplaceRejected)    \
  X(::lemmalab::batched::FirstDraws)         \
  X(::lemmalab::batched::MarkFloydKept)
