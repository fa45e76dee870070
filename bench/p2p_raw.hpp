// The raw side of sluice-bench-p2p-<backend> (p2p.cpp): the vendor's own calls
// (raw/vendor.hpp: CUDA's, or HIP's where the build defines
// SLUICE_BENCH_RAW_HIP), each checked (exit status 2 naming the call), and the
// raw SM copy kernel (p2p_sm.cu), so that p2p.cpp names no vendor.
#pragma once

#include "p2p_sm.hpp"
#include "raw/vendor.hpp"

#include <cstddef>
#include <cstdio>

namespace raw {

inline constexpr const char* peer_copy_call = api::peer_copy_call;
//! The vendor's one-call batch of peer copies (none: nullptr).
inline constexpr const char* batch_call = api::peer_batch_call;

inline void set_program(const char* name) { program = name; }

//! count pieces from src_dev to dst_dev in one call (batch_call); never called
//! where there is none (p2p.cpp skips the raw batch).
inline void memcpy_peer_batch(void** dsts, const void** srcs, std::size_t* sizes, std::size_t count,
                              int dst_dev, int src_dev, stream_t s) {
  if (batch_call == nullptr) {
    std::fprintf(stderr, "%s: %s has no batched peer copy\n", program, vendor);
    end_program();
  }
  check(api::memcpy_peer_batch(dsts, srcs, sizes, count, dst_dev, src_dev, s));
}
//! The raw SM copy kernel (p2p_sm.cu) on s; exits when the launch fails.
inline void sm_copy(void* dst, const void* src, std::size_t bytes, stream_t s, int sms) {
  check(static_cast<api::error_t>(raw_sm_copy(dst, src, bytes, s, sms)),
        "the raw SM copy kernel's launch");
}
//! Whether this runtime launches kernels at all (the simulated one does not).
inline bool kernels_run() {
  void* scratch = device_malloc(16);
  const int e = raw_sm_copy(scratch, scratch, 0, nullptr, 1);
  api::clear_error();
  check(api::device_free(scratch));
  return e == 0;
}

}  // namespace raw
