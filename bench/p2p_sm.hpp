// sluice-bench-p2p-cuda's raw SM copy kernel (p2p_sm.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

//! Copies `bytes` (a multiple of 16, both ends 16-byte aligned) with a
//! grid-stride kernel of 16-byte vectors on s; the launch's error.
cudaError_t raw_sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t s,
                        int multiprocessors);
