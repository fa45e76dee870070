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

//! A stream memory operation of the driver (`name`: cuStreamWaitValue64 or
//! cuStreamWriteValue64) as CUDA `version` names it (12000: the _v2 functions
//! that CUDA 12 and 13 call by these names; 11080: CUDA 11.8's, the first
//! version; a runtime older than 12.5 gives its own version's, whatever is
//! asked). Exits with status 2 when it is missing.
inline wait_fn memop_entry(const char* name, int version = 12000) {
  void* fn = nullptr;
#if CUDART_VERSION >= 12050
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(name, &fn, static_cast<unsigned int>(version),
                                         cudaEnableDefault, &found),
        "cudaGetDriverEntryPointByVersion");
  const bool ok = found == cudaDriverEntryPointSuccess;
#else
  // CUDA 11.8's runtime (scripts/hip-nvidia-build builds sluice-probe-channels
  // against it): the entry point of the runtime's own version.
  (void)version;
  check(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault), "cudaGetDriverEntryPoint");
  const bool ok = true;
#endif
  if (!ok || fn == nullptr) {
    std::fprintf(stderr, "%s: %s (CUDA version %d) not found\n", program, name, version);
    std::exit(2);
  }
  return reinterpret_cast<wait_fn>(fn);
}

//! cuStreamWaitValue64 from the driver (exits with status 2 when it is missing).
inline wait_fn wait_entry() { return memop_entry("cuStreamWaitValue64"); }

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
