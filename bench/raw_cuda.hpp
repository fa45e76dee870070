// Raw CUDA helpers shared by the probes and benches that measure the vendor's
// own calls (no sluice code): failing loudly, and the stream memory wait that
// holds a stream on a host-mapped word the way a sluice gate does.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace raw_cuda {

//! The program's name in messages; each program sets it first thing in main.
inline const char* program = "sluice";

//! Exits with status 2, naming the call, when a CUDA call failed.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
    std::exit(2);
  }
}

using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

//! cuStreamWaitValue64 from the driver (exits with status 2 when it is missing).
inline wait_fn wait_entry() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000, cudaEnableDefault,
                                         &found),
        "cudaGetDriverEntryPointByVersion");
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "%s: cuStreamWaitValue64 not found\n", program);
    std::exit(2);
  }
  return reinterpret_cast<wait_fn>(fn);
}

//! Holds s until *dev_word >= v (exits with status 2 when the driver refuses).
inline void wait_value(wait_fn w, cudaStream_t s, void* dev_word, std::uint64_t v) {
  const CUresult r = w(reinterpret_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(dev_word), v,
                       CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: cuStreamWaitValue64 failed (%d)\n", program, static_cast<int>(r));
    std::exit(2);
  }
}

}  // namespace raw_cuda
