// Raw HIP for the benches that measure the vendor's own calls (no sluice
// code), on either of HIP's platforms: failing loudly (check), the stream
// memory wait that holds a stream on a host-mapped word the way a sluice gate
// does, and HIP's spellings of the calls that raw/vendor.hpp writes once for
// either vendor (namespace raw::api; the same members as raw/cuda.hpp).
#pragma once

#include "failure.hpp"

#include <hip/hip_runtime_api.h>
#if defined(__HIP_PLATFORM_NVIDIA__)
#include <cuda.h>  // driver types of cuStreamWaitValue64 (nothing links libcuda)
#endif

#include <cstddef>
#include <cstdint>

namespace raw {

//! Ends the program (raw::fail), naming the call, when a HIP call failed.
inline void check(hipError_t e, const char* what) {
  if (e != hipSuccess) fail(what, hipGetErrorString(e));
}

#if defined(__HIP_PLATFORM_NVIDIA__)
// HIP's NVIDIA platform: hipStreamWaitValue64 of the NVIDIA headers calls the
// driver API (cuStreamWaitValue64, nvidia_hip_runtime_api.h), and a program
// using it must link libcuda, absent where no driver is installed (CI). So the
// entry point is fetched from the runtime at first use (cudaGetDriverEntryPoint,
// CUDA 11.3 and later; CUDA 11.8's has no driverStatus argument).
inline constexpr const char* wait_value_call = "cuStreamWaitValue64";
//! Later work on s waits until *word >= value (CU_STREAM_WAIT_VALUE_GEQ).
inline hipError_t wait_value(hipStream_t s, void* word, std::uint64_t value) {
  using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  static hipError_t failure = hipSuccess;
  static const wait_fn wait = [] {
    void* fn = nullptr;
    const cudaError_t e = cudaGetDriverEntryPoint(wait_value_call, &fn, cudaEnableDefault);
    if (e != cudaSuccess || fn == nullptr) {
      (void)cudaGetLastError();
      failure = e != cudaSuccess ? hipCUDAErrorTohipError(e) : hipErrorNotFound;
      return wait_fn{};
    }
    return reinterpret_cast<wait_fn>(fn);
  }();
  if (wait == nullptr) return failure;
  return hipCUResultTohipError(
      wait(s, reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WAIT_VALUE_GEQ));
}
#else
// HIP's AMD platform: libamdhip64 exports hipStreamWaitValue64 itself.
inline constexpr const char* wait_value_call = "hipStreamWaitValue64";
//! hipStreamWaitValueGte with the full mask: later work on s waits until
//! (*word & mask) >= value, an unsigned compare.
inline hipError_t wait_value(hipStream_t s, void* word, std::uint64_t value) {
  return hipStreamWaitValue64(s, word, value, hipStreamWaitValueGte, ~std::uint64_t{0});
}
#endif

//! Holds s until *device_word >= v: the platform's stream memory wait.
inline void hold(hipStream_t s, void* device_word, std::uint64_t v) {
  check(wait_value(s, device_word, v), wait_value_call);
}

// HIP's spellings of the calls raw/vendor.hpp makes: each returns the
// vendor's error code with the call's name.
namespace api {

using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
inline constexpr const char* vendor = "HIP";

struct status {
  error_t code;
  const char* call;
};

inline status set_device(int d) { return {hipSetDevice(d), "hipSetDevice"}; }
inline status stream_create(stream_t* s) {
  return {hipStreamCreateWithFlags(s, hipStreamNonBlocking), "hipStreamCreateWithFlags"};
}
inline status stream_destroy(stream_t s) { return {hipStreamDestroy(s), "hipStreamDestroy"}; }
inline constexpr const char* stream_synchronize_call = "hipStreamSynchronize";
inline status stream_synchronize(stream_t s) {
  return {hipStreamSynchronize(s), stream_synchronize_call};
}
inline status event_create(event_t* e) {
  return {hipEventCreateWithFlags(e, hipEventDefault), "hipEventCreateWithFlags"};
}
inline status event_destroy(event_t e) { return {hipEventDestroy(e), "hipEventDestroy"}; }
inline status event_record(event_t e, stream_t s) {
  return {hipEventRecord(e, s), "hipEventRecord"};
}
inline status event_synchronize(event_t e) {
  return {hipEventSynchronize(e), "hipEventSynchronize"};
}
inline status elapsed_ms(float* ms, event_t a, event_t b) {
  return {hipEventElapsedTime(ms, a, b), "hipEventElapsedTime"};
}
inline status device_malloc(void** p, std::size_t n) { return {hipMalloc(p, n), "hipMalloc"}; }
inline status device_free(void* p) { return {hipFree(p), "hipFree"}; }
//! Page-locked host memory.
inline status pinned_alloc(void** p, std::size_t n) {
  return {hipHostMalloc(p, n, hipHostMallocDefault), "hipHostMalloc"};
}
//! Frees pinned_alloc's and mapped_alloc's memory.
inline status pinned_free(void* p) { return {hipHostFree(p), "hipHostFree"}; }
//! Page-locked host memory mapped for every device, and its device address.
inline status mapped_alloc(void** p, std::size_t n) {
  return {hipHostMalloc(p, n, hipHostMallocPortable | hipHostMallocMapped), "hipHostMalloc"};
}
inline status mapped_device_address(void** device_address, void* p) {
  return {hipHostGetDevicePointer(device_address, p, 0), "hipHostGetDevicePointer"};
}
inline status multiprocessors(int* n, int d) {
  return {hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, d),
          "hipDeviceGetAttribute"};
}
inline constexpr const char* memcpy_async_call = "hipMemcpyAsync";
inline status memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) {
  return {hipMemcpyAsync(dst, src, n, hipMemcpyDefault, s), memcpy_async_call};
}
inline status memset_async(void* dst, int v, std::size_t n, stream_t s) {
  return {hipMemsetAsync(dst, v, n, s), "hipMemsetAsync"};
}
inline constexpr const char* peer_copy_call = "hipMemcpyPeerAsync";
inline status memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                                stream_t s) {
  return {hipMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), peer_copy_call};
}
//! Clears the calling thread's last error (after a launch that may have failed).
inline void clear_error() { (void)hipGetLastError(); }

//! HIP 5.2 has no one-call batch of peer copies.
inline constexpr const char* peer_batch_call = nullptr;
inline status memcpy_peer_batch(void**, const void**, std::size_t*, std::size_t, int, int,
                                stream_t) {
  return {hipErrorNotSupported, "a batched peer copy"};
}

}  // namespace api
}  // namespace raw
