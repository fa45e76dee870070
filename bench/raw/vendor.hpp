// The raw vendor calls of the benches that run against CUDA or HIP (the P2P
// and comm benches' raw sides), the vendor picked once: HIP's spellings
// (raw/hip.hpp) where the build defines SLUICE_BENCH_RAW_HIP, else CUDA's
// (raw/cuda.hpp). The calls are written here once on either: each is checked,
// and a failure names the call and ends the program (raw/failure.hpp). No
// sluice code.
#pragma once

#if defined(SLUICE_BENCH_RAW_HIP)
#include "hip.hpp"
#else
#include "cuda.hpp"
#endif

#include <cstddef>
#include <cstdint>

namespace raw {

using stream_t = api::stream_t;
using event_t = api::event_t;
inline constexpr const char* vendor = api::vendor;

//! Ends the program (raw::fail), naming the call, when it failed.
inline void check(api::status s) { check(s.code, s.call); }

//! Makes d the calling thread's current device (the calls below use it).
inline void set_device(int d) { check(api::set_device(d)); }
//! A non-blocking stream of the current device.
inline stream_t stream_create() {
  stream_t s{};
  check(api::stream_create(&s));
  return s;
}
inline void stream_destroy(stream_t s) { (void)api::stream_destroy(s); }
inline void stream_synchronize(stream_t s) { check(api::stream_synchronize(s)); }
//! An event with timing.
inline event_t event_create() {
  event_t e{};
  check(api::event_create(&e));
  return e;
}
inline void event_destroy(event_t e) { (void)api::event_destroy(e); }
inline void event_record(event_t e, stream_t s) { check(api::event_record(e, s)); }
inline void event_synchronize(event_t e) { check(api::event_synchronize(e)); }
inline float elapsed_ms(event_t a, event_t b) {
  float ms = 0;
  check(api::elapsed_ms(&ms, a, b));
  return ms;
}
inline void* device_malloc(std::size_t n) {
  void* p = nullptr;
  check(api::device_malloc(&p, n));
  return p;
}
inline void device_free(void* p) { (void)api::device_free(p); }
inline void* pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(api::pinned_alloc(&p, bytes));
  return p;
}
inline void pinned_free(void* p) { (void)api::pinned_free(p); }
//! An 8-byte pinned word mapped for the devices, and its device address.
inline std::uint64_t* mapped_word(void** device_address) {
  void* w = nullptr;
  check(api::mapped_alloc(&w, 8));
  check(api::mapped_device_address(device_address, w));
  return static_cast<std::uint64_t*>(w);
}
inline void free_mapped_word(std::uint64_t* w) { (void)api::pinned_free(w); }
inline int multiprocessors(int d) {
  int n = 1;
  check(api::multiprocessors(&n, d));
  return n;
}
inline void memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) {
  check(api::memcpy_async(dst, src, n, s));
}
inline void memset_async(void* dst, int v, std::size_t n, stream_t s) {
  check(api::memset_async(dst, v, n, s));
}
inline void memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                              stream_t s) {
  check(api::memcpy_peer_async(dst, dst_dev, src, src_dev, n, s));
}

}  // namespace raw
