// The per-sample scalar functions of the supervised models (problems/models.cc), in one
// definition that the CPU models and the batched (GPU) gradients (batched/gradient_kernels.h)
// both compile. On the device exp, log1p, log and tanh are CUDA's, which may differ from the C
// library's by an ulp or two (core/host_device_math.h): the batched gradients agree with the
// CPU's to a tolerance, not bit for bit (docs/gpu.md).
#pragma once

#include "core/host_device.h"
#include "core/host_device_math.h"

namespace lemmalab::model {

// log(1 + exp(z)) without overflow.
LEMMALAB_HOST_DEVICE inline double Softplus(double z) {
  return z > 0 ? z + hd::Log1p(hd::Exp(-z)) : hd::Log1p(hd::Exp(z));
}

template <typename T>
LEMMALAB_HOST_DEVICE inline T Sigmoid(T z) {
  if (z >= 0) return T(1) / (T(1) + hd::Exp(-z));
  const T e = hd::Exp(z);
  return e / (T(1) + e);
}

}  // namespace lemmalab::model
