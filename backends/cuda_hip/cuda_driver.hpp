// The CUDA driver calls that sluice::cuda makes: the current context and the
// stream memory operations (cuCtxGetCurrent, cuStreamWaitValue64,
// cuStreamWriteValue64, cuStreamBatchMemOp). They are driver API only, and
// sluice does not link libcuda (absent where no driver is installed, e.g. CI),
// so their entry points are fetched from the runtime at first use. cuda_api
// (cuda_api.hpp) forwards to them.
#pragma once

#include "settings.hpp"

#include <cuda.h>  // driver types for the stream memory operations (types only: nothing links libcuda)
#include <cuda_runtime_api.h>

namespace sluice::gpu::cuda_driver {

//! The calling thread's current context (null if none or not found).
inline CUcontext current_context() noexcept {
  using fn_t = CUresult (*)(CUcontext*);
  static const fn_t get = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return fn_t{nullptr};
    }
    return reinterpret_cast<fn_t>(fn);
  }();
  CUcontext c{};
  if (get == nullptr || get(&c) != CUDA_SUCCESS) return nullptr;
  return c;
}

// --- stream memory operations ----------------------------------------------
using value_op_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
using batch_op_fn = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
//! The call that fetches the entry points: the one a failure names.
constexpr const char* entry_point_api = "cudaGetDriverEntryPointByVersion";
struct memory_ops {
  value_op_fn wait = nullptr;
  value_op_fn write = nullptr;
  batch_op_fn batch = nullptr;        // optional: without it, a signal and a wait are two calls
  cudaError_t failure = cudaSuccess;  // why wait and write are null (a code of entry_point_api)
};
inline void* entry_point(const char* symbol, cudaError_t* failure) noexcept {
  cudaDriverEntryPointQueryResult found{};
  void* fn = nullptr;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    *failure = e != cudaSuccess ? e : cudaErrorSymbolNotFound;
    return nullptr;
  }
  return fn;
}
inline const memory_ops& stream_memory_ops() noexcept {
  static const memory_ops ops = [] {
    memory_ops o;
    o.wait = reinterpret_cast<value_op_fn>(entry_point("cuStreamWaitValue64", &o.failure));
    o.write = o.wait != nullptr
                  ? reinterpret_cast<value_op_fn>(entry_point("cuStreamWriteValue64", &o.failure))
                  : nullptr;
    if (o.write == nullptr) o.wait = nullptr;
    // SLUICE_CUDA_BATCH_MEMOP=0: a host function's signal and gate wait as two
    // calls even where the driver has cuStreamBatchMemOp (to compare, or to
    // fall back should a driver not keep the batch's order).
    cudaError_t unused = cudaSuccess;
    if (o.wait != nullptr && sluice::detail::settings::cuda_batch_memop())
      o.batch = reinterpret_cast<batch_op_fn>(entry_point("cuStreamBatchMemOp", &unused));
    return o;
  }();
  return ops;
}

}  // namespace sluice::gpu::cuda_driver
