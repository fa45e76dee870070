// Raw CUDA for the benches and probes that measure the vendor's own calls (no
// sluice code): failing loudly (check), the driver's stream memory operations
// (the wait that holds a stream on a host-mapped word the way a sluice gate
// does), and CUDA's spellings of the calls that raw/vendor.hpp writes once for
// either vendor (namespace raw::api; raw/hip.hpp has the same members in HIP's
// spellings). The raw-CUDA probes include this header alone; it also compiles
// against CUDA 11.8's runtime (scripts/probe-channels-cuda11).
#pragma once

#include "failure.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace raw {

//! Ends the program (raw::fail), naming the call, when a CUDA call failed.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(what, cudaGetErrorString(e));
}

using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

//! A stream memory operation of the driver (`name`: cuStreamWaitValue64 or
//! cuStreamWriteValue64) as CUDA `version` names it (12000: the _v2 functions
//! that CUDA 12 and 13 call by these names; 11080: CUDA 11.8's, the first
//! version; a runtime older than 12.5 gives its own version's, whatever is
//! asked). Ends the program when it is missing.
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
    end_program();
  }
  return reinterpret_cast<wait_fn>(fn);
}

//! cuStreamWaitValue64 from the driver (ends the program when it is missing).
inline wait_fn wait_entry() { return memop_entry("cuStreamWaitValue64"); }

//! Holds s until *dev_word >= v (ends the program when the driver refuses).
inline void wait_value(wait_fn w, cudaStream_t s, void* dev_word, std::uint64_t v) {
  const CUresult r = w(reinterpret_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(dev_word), v,
                       CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: cuStreamWaitValue64 failed (%d)\n", program, static_cast<int>(r));
    end_program();
  }
}

//! Holds s until *device_word >= v (cuStreamWaitValue64, from the driver at first use).
inline void hold(cudaStream_t s, void* device_word, std::uint64_t v) {
  static const wait_fn wait = wait_entry();
  wait_value(wait, s, device_word, v);
}

// CUDA's spellings of the calls raw/vendor.hpp makes: each returns the
// vendor's error code with the call's name.
namespace api {

using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
inline constexpr const char* vendor = "CUDA";

struct status {
  error_t code;
  const char* call;
};

inline status set_device(int d) { return {cudaSetDevice(d), "cudaSetDevice"}; }
inline status stream_create(stream_t* s) {
  return {cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"};
}
inline status stream_destroy(stream_t s) { return {cudaStreamDestroy(s), "cudaStreamDestroy"}; }
inline constexpr const char* stream_synchronize_call = "cudaStreamSynchronize";
inline status stream_synchronize(stream_t s) {
  return {cudaStreamSynchronize(s), stream_synchronize_call};
}
inline status event_create(event_t* e) {
  return {cudaEventCreateWithFlags(e, cudaEventDefault), "cudaEventCreateWithFlags"};
}
inline status event_destroy(event_t e) { return {cudaEventDestroy(e), "cudaEventDestroy"}; }
inline status event_record(event_t e, stream_t s) {
  return {cudaEventRecord(e, s), "cudaEventRecord"};
}
inline status event_synchronize(event_t e) {
  return {cudaEventSynchronize(e), "cudaEventSynchronize"};
}
inline status elapsed_ms(float* ms, event_t a, event_t b) {
  return {cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime"};
}
inline status device_malloc(void** p, std::size_t n) { return {cudaMalloc(p, n), "cudaMalloc"}; }
inline status device_free(void* p) { return {cudaFree(p), "cudaFree"}; }
//! Page-locked host memory.
inline status pinned_alloc(void** p, std::size_t n) {
  return {cudaMallocHost(p, n), "cudaMallocHost"};
}
//! Frees pinned_alloc's and mapped_alloc's memory.
inline status pinned_free(void* p) { return {cudaFreeHost(p), "cudaFreeHost"}; }
//! Page-locked host memory mapped for every device, and its device address.
inline status mapped_alloc(void** p, std::size_t n) {
  return {cudaHostAlloc(p, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc"};
}
inline status mapped_device_address(void** device_address, void* p) {
  return {cudaHostGetDevicePointer(device_address, p, 0), "cudaHostGetDevicePointer"};
}
inline status multiprocessors(int* n, int d) {
  return {cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, d), "cudaDeviceGetAttribute"};
}
inline constexpr const char* memcpy_async_call = "cudaMemcpyAsync";
inline status memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) {
  return {cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), memcpy_async_call};
}
inline status memset_async(void* dst, int v, std::size_t n, stream_t s) {
  return {cudaMemsetAsync(dst, v, n, s), "cudaMemsetAsync"};
}
inline constexpr const char* peer_copy_call = "cudaMemcpyPeerAsync";
inline status memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                                stream_t s) {
  return {cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), peer_copy_call};
}
//! Clears the calling thread's last error (after a launch that may have failed).
inline void clear_error() { (void)cudaGetLastError(); }

#if CUDART_VERSION >= 13000
//! The vendor's one-call batch of peer copies (none: nullptr).
inline constexpr const char* peer_batch_call = "cudaMemcpyBatchAsync";
//! count pieces from src_dev to dst_dev in one call (peer_batch_call).
inline status memcpy_peer_batch(void** dsts, const void** srcs, std::size_t* sizes,
                                std::size_t count, int dst_dev, int src_dev, stream_t s) {
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.srcLocHint.type = cudaMemLocationTypeDevice;
  attr.srcLocHint.id = src_dev;
  attr.dstLocHint.type = cudaMemLocationTypeDevice;
  attr.dstLocHint.id = dst_dev;
  std::size_t first = 0;
  return {cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &attr, &first, 1, s), peer_batch_call};
}
#else
// cudaMemcpyBatchAsync is declared as above from CUDA 13 on (CUDA 12.8's has
// another argument; CUDA 11.8's runtime, which sluice-probe-channels is also
// built against, has none): no raw batch before.
inline constexpr const char* peer_batch_call = nullptr;
inline status memcpy_peer_batch(void**, const void**, std::size_t*, std::size_t, int, int,
                                stream_t) {
  return {cudaErrorNotSupported, "cudaMemcpyBatchAsync"};
}
#endif

}  // namespace api
}  // namespace raw
