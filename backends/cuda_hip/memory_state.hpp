// Memory on the GPU backend: a device_buffer comes from a sluice pool per
// device without hidden cross-stream reuse dependencies, and frees never block
// the caller: a stream-ordered buffer is freed on its stream, a synchronous one
// on a sluice thread once the streams that may use it have passed the moment
// of destruction (no device queue ever waits on behalf of a free). Pinned
// blocks are cached, never handed back while the process runs. Defined in
// memory.cpp.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace sluice::detail {

struct device_state;
struct stream_state;

//! A device_buffer's or a pinned_buffer's memory.
struct allocation {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  std::size_t block = 0;           // pinned: the cached block's size (>= bytes)
  int device = -1;                 // -1: pinned host memory
  stream_state* stream = nullptr;  // stream-ordered allocation: its stream (holds a ref)
  std::mutex m;
  std::vector<stream_state*> recorded;  // record_stream (hold refs)
};

//! Adds every live stream of dev that can still take a reference (each now
//! holds one): what a free waits for (memory.cpp, registered.cpp).
void add_live_streams(device_state& dev, std::vector<stream_state*>& out);

//! Returns once no registered_host_memory that was destroyed, and whose vendor unregister has
//! not yet run, meets [p, p + bytes): before a copy or fill hands the vendor host memory that
//! sluice takes as pageable (registered.cpp says why). invalid_argument from a host function
//! when it would wait.
void wait_until_unregistered(const void* p, std::size_t bytes, const char* api_name);

//! Enqueues a copy of bytes from src to dst on st (its device current, inside the caller's
//! enqueue_scope) as pieces split where the registration (registered_host_memory) either end
//! starts in ends: the vendor refuses a range that starts inside one and runs past it. The
//! caller waits for the stream afterwards (partly registered counts as pageable: MEM-8).
void copy_split_at_registrations(stream_state& st, void* dst, const void* src, std::size_t bytes,
                                 const char* api_name);

}  // namespace sluice::detail
