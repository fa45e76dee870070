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
//! Called by trace_begin() just before collecting starts: the backend picks
//! its trace source (the GPU backends: SLUICE_TRACE_SOURCE, trace::note_source).
//! Throws sluice::error for a bad setting; nothing is started then. True when
//! it started a library for the first time in the process (CUPTI): its exit
//! handlers run before those registered earlier, so the handler that writes
//! a trace still collected at exit is registered again, to run before them.
bool trace_backend_begin();
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
  // A graph launch's own record and those of the operations it runs: the
  // launch's id (new_launch_id()); 0 for everything else.
  std::uint64_t launch = 0;
  // An operation run by a launch: its vertex (1-based) and the stream it was
  // captured from, whose track shows it (`stream` is where it ran: a lane).
  std::uint32_t vertex = 0;
  std::uint64_t graph_stream = 0;
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

//! A fresh graph launch id (1, 2, ...).
std::uint64_t new_launch_id() noexcept;

//! While a graph launch makes a vertex's operations (the GPU backends make
//! them through the same calls as eager work), the records begun on this
//! thread are that launch's: fill_graph() stamps them. Nests by restoring.
struct graph_scope {
  graph_scope(std::uint64_t launch, std::uint32_t vertex, std::uint64_t stream) noexcept;
  ~graph_scope();
  graph_scope(const graph_scope&) = delete;
  graph_scope& operator=(const graph_scope&) = delete;

 private:
  std::uint64_t launch_, stream_;
  std::uint32_t vertex_;
};
//! Stamps r with the calling thread's graph_scope, if any.
void fill_graph(record& r) noexcept;

//! Hands a completed record to the collection: appended to the calling
//! thread's chunk (no shared lock); a full chunk goes to the trace's writer
//! thread, which writes it to the file while the program runs. Blocks while
//! the writer is that many chunks behind (the bound on a trace's memory).
void submit(record&& r) noexcept;

//! A GPU backend's calibration: `device`'s times in this trace are host-clock
//! times within +-`ns` (written as the device track's clock_error_us; the
//! host backend's times are host-clock times, with no such error).
void note_clock_error(int device, std::int64_t ns) noexcept;

//! What timed this trace's device operations ("events", "cupti") and, where
//! it matters, why or what was lost: `args` is JSON members (`"key": value,
//! ...`), written with the host track's metadata.
void note_source(const std::string& args) noexcept;

//! SLUICE_TRACE=<path>: starts a trace written at process exit. Called by a
//! backend at start-up; a second call does nothing. Under an MPI launcher
//! (launcher_rank) the file is rank_path(path, rank); otherwise it is written
//! under a name of this process's own until the end, then renamed to `path`,
//! or to rank_path(path, rank) once note_rank() gave the process a rank.
void start_from_environment();

//! The process's rank in MPI_COMM_WORLD as the launcher's environment gives
//! it (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK), or -1.
int launcher_rank() noexcept;

//! SLUICE_TRACE's file for `rank`: every "%r" replaced by the rank, or, where
//! there is none, ".rank<r>" inserted before the last name's extension
//! ("t.json" -> "t.rank1.json", "t" -> "t.rank1").
std::string rank_path(const std::string& path, int rank);

//! A span drawn from the two markers of `range` (enqueue_trace_marker) with
//! category `cat` and `args` (JSON members, `"key": value, ...`) instead of a
//! trace_range's: sluice::comm's operations. Call before enqueuing the begin
//! marker; a span whose markers are not written is dropped.
void note_span(std::uint64_t range, const char* cat, std::string args) noexcept;

//! Where this process stands among the ranks of an MPI job, written into the
//! trace's metadata ("sluice_trace"): `sluice trace report` aligns the files
//! of several ranks with it.
struct rank_info {
  int rank = -1;           // in MPI_COMM_WORLD
  int ranks = 0;           // MPI_COMM_WORLD's size
  int reference = -1;      // the world rank whose trace clock the offset is against
  bool same_host = false;  // the reference runs on this host (same boot): same steady clock
  std::int64_t clock_offset_ns = 0;     // this process's trace clock minus the reference's
  std::int64_t clock_error_ns = 0;      // the offset is right within +- this
  std::int64_t measured_offset_ns = 0;  // what the ping-pong measured (same host: offset 0)
  std::int64_t measured_error_ns = 0;   // and within what (+- half its round trip)
};
//! Keeps the first rank_info of a trace (a later one only where it was
//! measured against a larger communicator); gives a SLUICE_TRACE trace of a
//! process without a launcher rank its rank_path.
void note_rank(const rank_info& r) noexcept;

//! This host's identity for "same steady clock": host name and boot id.
std::string host_identity();

//! The writer's formatting (exposed for bench/trace_writer.cpp): appends the
//! Chrome-trace events of one record (its enqueue instant, its operation, no
//! flow) to `out`, times relative to `origin_ns`.
void append_record_events(std::string& out, const record& r, std::int64_t origin_ns);

}  // namespace sluice::detail::trace
