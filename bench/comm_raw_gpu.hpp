// The raw side of sluice-bench-comm-hip (comm.cpp): the HIP runtime's own
// calls for the hand-written staging loop (device buffers with a non-GPU-aware
// MPI). No raw RCCL side: the nccl engine is CUDA's (raw::nccl says so).
// Every call is checked: a failure names the call and aborts the job
// (MPI_Abort, status 2). The same members as comm_raw_cuda.hpp.
#pragma once

#include "comm_raw_no_nccl.hpp"

#include <hip/hip_runtime_api.h>
#include <mpi.h>

#include <cstddef>
#include <cstdio>

namespace raw {

inline constexpr const char* vendor = "HIP";
inline constexpr const char* staging_calls =
    "hipMemcpyAsync device->pinned, hipStreamSynchronize, blocking MPI on pinned buffers, "
    "hipMemcpyAsync pinned->device, hipStreamSynchronize";

inline const char* program = "sluice-bench-comm";

inline void check(hipError_t e, const char* what) {
  if (e != hipSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program, what, hipGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

using stream_t = hipStream_t;

inline void set_device(int d) { check(hipSetDevice(d), "hipSetDevice"); }
inline stream_t stream_create() {
  stream_t s{};
  check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  return s;
}
inline void stream_destroy(stream_t s) { (void)hipStreamDestroy(s); }
inline void stream_synchronize(stream_t s) {
  check(hipStreamSynchronize(s), "hipStreamSynchronize");
}
inline void* pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(hipHostMalloc(&p, bytes, hipHostMallocDefault), "hipHostMalloc");
  return p;
}
inline void pinned_free(void* p) { (void)hipHostFree(p); }
inline void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  check(hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, s), "hipMemcpyAsync");
}

}  // namespace raw
