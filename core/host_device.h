// LEMMALAB_HOST_DEVICE marks a function that the CPU code and the CUDA kernels share (cuda/): one
// definition compiled by both g++ and nvcc, so the element-wise arithmetic a GPU message depends
// on is the CPU's by construction, not by a second implementation kept in step.
#pragma once

#if defined(__CUDACC__)
#define LEMMALAB_HOST_DEVICE __host__ __device__
#else
#define LEMMALAB_HOST_DEVICE
#endif
