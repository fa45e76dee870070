// The raw side of sluice-bench-p2p-hip (p2p.cpp): the HIP runtime's own calls,
// each checked (exit status 2 naming the call); the same members as
// p2p_raw_cuda.hpp. On either HIP platform: where the platforms differ (the
// stream memory wait that holds a stream) it goes through hip_platform
// (backends/cuda_hip/hip_api.hpp), which makes the vendor's call itself.
#pragma once

#include "hip_api.hpp"
#include "p2p_sm.hpp"

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace raw {

using stream_t = hipStream_t;
using event_t = hipEvent_t;
inline constexpr const char* vendor = "HIP";
inline constexpr const char* peer_copy_call = "hipMemcpyPeerAsync";
//! HIP 5.2 has no one-call batch of peer copies.
inline constexpr const char* batch_call = nullptr;

inline const char* program = "sluice";
inline void set_program(const char* name) { program = name; }
//! Exits with status 2, naming the call, when a HIP call failed.
inline void check(hipError_t e, const char* what) {
  if (e != hipSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program, what, hipGetErrorString(e));
    std::exit(2);
  }
}
inline void set_device(int d) { check(hipSetDevice(d), "hipSetDevice"); }
inline stream_t stream_create() {
  stream_t s{};
  check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  return s;
}
inline event_t event_create() {
  event_t e{};
  check(hipEventCreateWithFlags(&e, hipEventDefault), "hipEventCreateWithFlags");
  return e;
}
inline void stream_destroy(stream_t s) { (void)hipStreamDestroy(s); }
inline void event_destroy(event_t e) { (void)hipEventDestroy(e); }
inline void* device_malloc(std::size_t n) {
  void* p = nullptr;
  check(hipMalloc(&p, n), "hipMalloc");
  return p;
}
inline void device_free(void* p) { (void)hipFree(p); }
//! An 8-byte pinned word mapped for the devices, and its device address.
inline std::uint64_t* mapped_word(void** device_address) {
  void* w = nullptr;
  check(hipHostMalloc(&w, 8, hipHostMallocPortable | hipHostMallocMapped), "hipHostMalloc");
  check(hipHostGetDevicePointer(device_address, w, 0), "hipHostGetDevicePointer");
  return static_cast<std::uint64_t*>(w);
}
inline void free_mapped_word(std::uint64_t* w) { (void)hipHostFree(w); }
inline int multiprocessors(int d) {
  int n = 1;
  check(hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, d),
        "hipDeviceGetAttribute");
  return n;
}
inline void memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) {
  check(hipMemcpyAsync(dst, src, n, hipMemcpyDefault, s), "hipMemcpyAsync");
}
inline void memset_async(void* dst, int v, std::size_t n, stream_t s) {
  check(hipMemsetAsync(dst, v, n, s), "hipMemsetAsync");
}
inline void memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                              stream_t s) {
  check(hipMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), "hipMemcpyPeerAsync");
}
//! Never called (batch_call is nullptr): p2p.cpp skips the raw batch.
inline void memcpy_peer_batch(void**, const void**, std::size_t*, std::size_t, int, int, stream_t) {
  std::fprintf(stderr, "%s: HIP has no batched peer copy\n", program);
  std::exit(2);
}
inline void stream_synchronize(stream_t s) { check(hipStreamSynchronize(s), "hipStreamSynchronize"); }
inline void event_record(event_t e, stream_t s) { check(hipEventRecord(e, s), "hipEventRecord"); }
inline void event_synchronize(event_t e) { check(hipEventSynchronize(e), "hipEventSynchronize"); }
inline float elapsed_ms(event_t a, event_t b) {
  float ms = 0;
  check(hipEventElapsedTime(&ms, a, b), "hipEventElapsedTime");
  return ms;
}
//! Holds s until *device_word >= v: the platform's stream memory wait (hip_platform).
inline void hold(stream_t s, void* device_word, std::uint64_t v) {
  check(sluice::gpu::hip_platform::wait_value(s, device_word, v),
        sluice::gpu::hip_platform::wait_value_api);
}
//! The raw SM copy kernel (p2p_sm.cu) on s; exits when the launch fails.
inline void sm_copy(void* dst, const void* src, std::size_t bytes, stream_t s, int sms) {
  check(static_cast<hipError_t>(raw_sm_copy(dst, src, bytes, s, sms)),
        "the raw SM copy kernel's launch");
}
//! Whether this runtime launches kernels at all.
inline bool kernels_run() {
  void* scratch = device_malloc(16);
  const int e = raw_sm_copy(scratch, scratch, 0, nullptr, 1);
  (void)hipGetLastError();
  check(hipFree(scratch), "hipFree");
  return e == 0;
}

}  // namespace raw
