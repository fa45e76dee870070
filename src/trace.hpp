// The backend-neutral part of tracing (include/sluice/trace.hpp): the record
// of one operation, the per-thread collection, and the Chrome-trace writer.
// Backends fill records at enqueue, start and completion. Internal.
#pragma once

#include <sluice/stream.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::detail {

// Per backend: whether it records operations, and its trace_range markers
// (enqueued only while tracing).
bool trace_supported() noexcept;
//! `range`: the trace_range's id (trace::new_range_id()), the same in its two
//! markers (the writer pairs them by it: they may reach it in either order).
void enqueue_trace_marker(stream_ref s, const std::string& name, bool begin, std::uint64_t range);
//! Called by trace_end() once collecting has stopped and before the file is
//! written: hand every record whose times are known to trace::submit() (the
//! GPU backends read their timing events here).
void trace_backend_collect();

}  // namespace sluice::detail

namespace sluice::detail::trace {

//! One operation on one stream.
struct record {
  const char* kind = "op";     // "copy", "fill", "copy_peer", "host_func", "record", ...
  std::string label;           // a trace_range's name
  const char* path = nullptr;  // copy_peer: "local", "direct", "direct_sm", "local_sm", "staged"
  std::size_t bytes = 0;
  int device = 0;
  std::uint64_t stream = 0;  // the stream's trace id (unique in the process)
  int priority = 0;          // native priority of the stream
  std::uint64_t seq = 0;     // position in its stream
  std::uint64_t host_thread = 0;
  std::int64_t enqueue_ns = 0;    // when the host enqueued it
  std::int64_t start_ns = 0;      // when the stream reached it
  std::int64_t end_ns = 0;        // when it completed
  std::uint64_t from_stream = 0;  // a wait: the stream and position it waited for
  std::uint64_t from_seq = 0;
  std::uint64_t range = 0;  // a trace_range's markers: its id
};

extern std::atomic<bool> on;

#ifdef SLUICE_NO_TRACING
//! Built with -DSLUICE_TRACING=OFF: never; every tracing branch compiles away.
constexpr bool enabled() noexcept { return false; }
#else
//! True while a trace is being collected (one relaxed load).
inline bool enabled() noexcept { return on.load(std::memory_order_relaxed); }
#endif

//! The trace clock (steady_clock), in ns.
std::int64_t now_ns() noexcept;

//! A small id of the calling host thread (1, 2, ...), stable for its life.
std::uint64_t thread_id() noexcept;

//! A fresh stream id (1, 2, ...).
std::uint64_t new_stream_id() noexcept;

//! A fresh trace_range id (1, 2, ...).
std::uint64_t new_range_id() noexcept;

//! Hands a completed record to the collection: appended to the calling
//! thread's chunk (no shared lock); a full chunk goes to the trace's writer
//! thread, which writes it to the file while the program runs. Blocks while
//! the writer is that many chunks behind (the bound on a trace's memory).
void submit(record&& r) noexcept;

//! A GPU backend's calibration: `device`'s times in this trace are host-clock
//! times within +-`ns` (written as the device track's clock_error_us; the
//! host backend's times are host-clock times, with no such error).
void note_clock_error(int device, std::int64_t ns) noexcept;

//! SLUICE_TRACE=<path>: starts a trace written at process exit. Called by a
//! backend at start-up; a second call does nothing.
void start_from_environment();

//! The writer's formatting (exposed for bench/trace_writer.cpp): appends the
//! Chrome-trace events of one record (its enqueue instant, its operation, no
//! flow) to `out`, times relative to `origin_ns`.
void append_record_events(std::string& out, const record& r, std::int64_t origin_ns);

}  // namespace sluice::detail::trace
