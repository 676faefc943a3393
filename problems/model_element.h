// The per-sample scalar functions of the supervised models (problems/models.cc), in one
// definition that the CPU models and the batched (GPU) gradients (batched/gradient_kernels.h)
// both compile. On the device exp, log1p, log and tanh are CUDA's, which may differ from the C
// library's by an ulp or two: the batched gradients agree with the CPU's to a tolerance, not bit
// for bit (docs/gpu.md).
#pragma once

#include <cmath>

#include "core/host_device.h"

namespace lemmalab::model {

template <typename T>
LEMMALAB_HOST_DEVICE inline T Exp(T v) {
#if defined(__CUDA_ARCH__)
  return exp(v);
#else
  return std::exp(v);
#endif
}

template <typename T>
LEMMALAB_HOST_DEVICE inline T Log(T v) {
#if defined(__CUDA_ARCH__)
  return log(v);
#else
  return std::log(v);
#endif
}

template <typename T>
LEMMALAB_HOST_DEVICE inline T Tanh(T v) {
#if defined(__CUDA_ARCH__)
  return tanh(v);
#else
  return std::tanh(v);
#endif
}

// log(1 + exp(z)) without overflow.
LEMMALAB_HOST_DEVICE inline double Softplus(double z) {
#if defined(__CUDA_ARCH__)
  return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
#else
  return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
#endif
}

template <typename T>
LEMMALAB_HOST_DEVICE inline T Sigmoid(T z) {
  if (z >= 0) return T(1) / (T(1) + Exp(-z));
  const T e = Exp(z);
  return e / (T(1) + e);
}

}  // namespace lemmalab::model
