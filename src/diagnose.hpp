// SLUICE_DIAGNOSE=1: warnings about stream code that will not overlap or
// wastes time, once per call site, with what happened and what to do. Both
// backends call these at the places below; each check costs one load of a
// flag read once at start-up while diagnostics are off. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

//! The caller of the sluice function that uses it: the user's call site.
#define SLUICE_CALL_SITE() __builtin_return_address(0)

namespace sluice::detail::diagnose {

enum class kind : int {
  pageable_copy,          // a copy touches pageable host memory
  unrecorded_event_wait,  // wait on an event that was never recorded
  synchronize_loop,       // stream/device synchronize called in a tight loop
  event_never_used,       // an event recorded and never waited on, queried or timed
  stream_destroyed_busy,  // a stream destroyed with work pending
  staged_peer_copy,       // copy_peer took the staged path
  peer_copy_pulled,       // a peer copy issued on the destination's stream
  host_copy,              // a copy between two pinned host buffers ran on a sluice thread
  strided_rows,           // a strided copy went as one vendor copy per row
  count
};

const char* name(kind k) noexcept;

//! True when SLUICE_DIAGNOSE is set to something other than "" or "0" (read once).
bool enabled() noexcept;

//! Prints "sluice: diagnose: <kind> at <site>: <what>. <advice>" to stderr,
//! once per kind and call site.
void warn(kind k, const void* site, const std::string& what, const std::string& advice) noexcept;

//! How many warnings of this kind were printed (tests).
std::size_t warnings(kind k) noexcept;

//! Around every stream/device synchronize while diagnostics are on: warns when
//! one call site synchronizes 64 times in a row with less than 1 ms of host
//! time between the return of one call and the next call.
void note_synchronize(const void* site, const char* api) noexcept;
void note_synchronize_returned(const void* site) noexcept;
class synchronize_scope {
 public:
  synchronize_scope(const void* site, const char* api) noexcept : site_(site) {
    if (enabled()) note_synchronize(site, api);
  }
  ~synchronize_scope() {
    if (enabled()) note_synchronize_returned(site_);
  }
  synchronize_scope(const synchronize_scope&) = delete;
  synchronize_scope& operator=(const synchronize_scope&) = delete;

 private:
  const void* site_;
};

//! A copy with pageable memory at either end.
void note_pageable_copy(const void* site, std::size_t bytes, bool dst_pageable,
                        bool src_pageable) noexcept;

//! copy_peer's checks: the staged path, and a pull where the backend knows a
//! push (the copy issued on the source's stream) is faster. `stream_id`: the
//! stream's trace id, for its name (src/stream_names.hpp).
void note_peer_copy(const void* site, int stream_device, int dst_device, int src_device,
                    std::size_t bytes, const char* path, bool push_preferred,
                    std::uint64_t stream_id) noexcept;

//! GPU backends: a copy between two pinned host buffers, run as a host task.
void note_host_copy(const void* site, std::size_t bytes) noexcept;

//! GPU backends: a strided copy of `bytes` went as `rows` vendor copies of one
//! row each, for the reason `why` (a pitch above the vendor's maximum; no 3-D
//! peer copy in this vendor version).
void note_strided_rows(const void* site, std::size_t bytes, std::size_t rows,
                       const char* why) noexcept;

//! The path this process's host functions take, and why
//! (sluice::detail::host_function_path): printed once per process, as
//! "sluice: diagnose: host functions: <path>: <evidence>", when the backend
//! first decides it or is asked.
void note_host_function_path(const std::string& path, const std::string& evidence) noexcept;

//! Part of each backend's event state: where it was last recorded, and whether
//! anything waited on, queried or timed it since.
struct event_usage {
  std::atomic<const void*> record_site{nullptr};
  std::atomic<bool> used{false};
  void recorded(const void* site) noexcept {
    if (!enabled()) return;
    record_site.store(site, std::memory_order_relaxed);
    used.store(false, std::memory_order_relaxed);
  }
  void use() noexcept {
    if (enabled()) used.store(true, std::memory_order_relaxed);
  }
  //! At destruction: warns when the last record was never used.
  void destroyed(int device) const noexcept;
};

}  // namespace sluice::detail::diagnose
