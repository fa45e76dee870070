// The raw side of sluice-bench-p2p-cuda (p2p.cpp): the CUDA runtime's own
// calls, each checked (exit status 2 naming the call). p2p_raw_hip.hpp has
// the same members for sluice-bench-p2p-hip; the build picks one
// (SLUICE_P2P_RAW_HEADER), so p2p.cpp names no vendor.
#pragma once

#include "p2p_sm.hpp"
#include "raw_cuda.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace raw {

using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
inline constexpr const char* vendor = "CUDA";
inline constexpr const char* peer_copy_call = "cudaMemcpyPeerAsync";
//! The vendor's one-call batch of peer copies (none: nullptr).
inline constexpr const char* batch_call = "cudaMemcpyBatchAsync";

inline void set_program(const char* name) { raw_cuda::program = name; }
inline void set_device(int d) { raw_cuda::check(cudaSetDevice(d), "cudaSetDevice"); }
inline stream_t stream_create() {
  stream_t s{};
  raw_cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}
inline event_t event_create() {
  event_t e{};
  raw_cuda::check(cudaEventCreateWithFlags(&e, cudaEventDefault), "cudaEventCreateWithFlags");
  return e;
}
inline void stream_destroy(stream_t s) { (void)cudaStreamDestroy(s); }
inline void event_destroy(event_t e) { (void)cudaEventDestroy(e); }
inline void* device_malloc(std::size_t n) {
  void* p = nullptr;
  raw_cuda::check(cudaMalloc(&p, n), "cudaMalloc");
  return p;
}
inline void device_free(void* p) { (void)cudaFree(p); }
//! An 8-byte pinned word mapped for the devices, and its device address.
inline std::uint64_t* mapped_word(void** device_address) {
  std::uint64_t* w = nullptr;
  raw_cuda::check(cudaHostAlloc(reinterpret_cast<void**>(&w), 8,
                                cudaHostAllocPortable | cudaHostAllocMapped),
                  "cudaHostAlloc");
  raw_cuda::check(cudaHostGetDevicePointer(device_address, w, 0), "cudaHostGetDevicePointer");
  return w;
}
inline void free_mapped_word(std::uint64_t* w) { (void)cudaFreeHost(w); }
inline int multiprocessors(int d) {
  int n = 1;
  raw_cuda::check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d),
                  "cudaDeviceGetAttribute");
  return n;
}
inline void memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) {
  raw_cuda::check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), "cudaMemcpyAsync");
}
inline void memset_async(void* dst, int v, std::size_t n, stream_t s) {
  raw_cuda::check(cudaMemsetAsync(dst, v, n, s), "cudaMemsetAsync");
}
inline void memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                              stream_t s) {
  raw_cuda::check(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), "cudaMemcpyPeerAsync");
}
//! count pieces from src_dev to dst_dev in one call (batch_call).
inline void memcpy_peer_batch(void** dsts, const void** srcs, std::size_t* sizes, std::size_t count,
                              int dst_dev, int src_dev, stream_t s) {
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.srcLocHint.type = cudaMemLocationTypeDevice;
  attr.srcLocHint.id = src_dev;
  attr.dstLocHint.type = cudaMemLocationTypeDevice;
  attr.dstLocHint.id = dst_dev;
  std::size_t first = 0;
  raw_cuda::check(cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &attr, &first, 1, s),
                  "cudaMemcpyBatchAsync");
}
inline void stream_synchronize(stream_t s) {
  raw_cuda::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}
inline void event_record(event_t e, stream_t s) {
  raw_cuda::check(cudaEventRecord(e, s), "cudaEventRecord");
}
inline void event_synchronize(event_t e) {
  raw_cuda::check(cudaEventSynchronize(e), "cudaEventSynchronize");
}
inline float elapsed_ms(event_t a, event_t b) {
  float ms = 0;
  raw_cuda::check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return ms;
}
//! Holds s until *device_word >= v (cuStreamWaitValue64, from the driver at first use).
inline void hold(stream_t s, void* device_word, std::uint64_t v) {
  static const raw_cuda::wait_fn wait = raw_cuda::wait_entry();
  raw_cuda::wait_value(wait, s, device_word, v);
}
//! The raw SM copy kernel (p2p_sm.cu) on s; exits when the launch fails.
inline void sm_copy(void* dst, const void* src, std::size_t bytes, stream_t s, int sms) {
  raw_cuda::check(static_cast<cudaError_t>(raw_sm_copy(dst, src, bytes, s, sms)),
                  "the raw SM copy kernel's launch");
}
//! Whether this runtime launches kernels at all (the simulated one does not).
inline bool kernels_run() {
  void* scratch = device_malloc(16);
  const int e = raw_sm_copy(scratch, scratch, 0, nullptr, 1);
  (void)cudaGetLastError();
  raw_cuda::check(cudaFree(scratch), "cudaFree");
  return e == 0;
}

}  // namespace raw
