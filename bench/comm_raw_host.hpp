// The raw side of sluice-bench-comm-host (comm.cpp). The host backend's device
// memory is host memory, which MPI reads directly: sluice::comm does not stage
// it, and comm.cpp's raw side is plain MPI on the buffers. The staging members
// exist for comm.cpp's sake (the same as comm_raw_gpu.hpp's) and do what
// they say with the C library; no raw NCCL side.
#pragma once

#include "comm_raw_no_nccl.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace raw {

inline constexpr const char* vendor = "host";
inline constexpr const char* staging_calls =
    "memcpy to a host buffer, blocking MPI, memcpy back (host backend)";

inline const char* program = "sluice-bench-comm";
inline void set_program(const char* name) { program = name; }

using stream_t = int;

inline void set_device(int) {}
inline stream_t stream_create() { return 0; }
inline void stream_destroy(stream_t) {}
inline void stream_synchronize(stream_t) {}
inline void* pinned_alloc(std::size_t bytes) { return std::malloc(bytes == 0 ? 1 : bytes); }
inline void pinned_free(void* p) { std::free(p); }
inline void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_t) {
  std::memcpy(dst, src, bytes);
}

}  // namespace raw
