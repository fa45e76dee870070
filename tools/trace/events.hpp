// What a sluice trace (Chrome-trace JSON written by trace_end / SLUICE_TRACE)
// holds for `sluice trace report`, as its reader (reader.hpp) hands it on:
// operations, trace_ranges and comm spans, stream tracks, clock errors and
// the trace's metadata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace sluice::tool {

//! One operation of the trace (a complete event of category "op").
struct traced_op {
  int device = 0;
  std::uint64_t stream = 0;
  std::string kind;
  double start_us = 0;
  double end_us = 0;
  std::uint64_t seq = 0;
  std::uint64_t waits_for_stream = 0;  // 0: not a wait with a traced source
  std::uint64_t waits_for_seq = 0;
  bool kernel = false;  // args "kind": "kernel": someone else's kernel (sluice::kokkos), by name
  //! args "enqueued_us": when the host enqueued it (every operation enqueued
  //! through sluice; not the user's own work on a stream, "through_sluice": false).
  bool has_enqueue = false;
  double enqueued_us = 0;
  //! Run by a host thread and timed there: a host function, a copy with
  //! "path": "host" (its span is its run, see in-flight time below).
  bool on_host = false;
};

//! One operation run by a graph launch (a complete event of category
//! "graph"), on the track of the stream it was captured from. Not a position
//! of that stream: it stays out of the streams' busy times and critical path.
struct traced_graph_op {
  int device = 0;
  std::uint64_t stream = 0;  // the track: the stream it was captured from
  std::string kind;          // args "kind": "copy", "fill", "host_func", ...
  double start_us = 0;
  double end_us = 0;
  std::uint64_t launch = 0;  // args "launch": the graph_launch operation's
  std::uint64_t vertex = 0;  // args "vertex": its vertex in the graph (1-based)
};

//! A stream's track in the trace (its thread_name metadata).
struct stream_track {
  std::string track;          // the track's name: "d0/s3 upload (native priority 0)"
  std::string name;           // the stream's own name (stream_options::name); empty: unnamed
  bool has_priority = false;  // (traces written before stream names lack it)
  int native_priority = 0;
};
//! The tracks of a trace's streams, by (device, stream id).
using stream_tracks = std::map<std::pair<int, std::uint64_t>, stream_track>;

//! One trace_range (a complete event of category "range"): from the
//! completion of its begin marker to that of its end marker.
//! sluice::comm's operations are spans of category "comm" (comm = true),
//! from the stream's arrival at the operation to its done flag, with the
//! engine and the bytes (args).
struct traced_range {
  int device = 0;
  std::uint64_t stream = 0;
  std::string name;
  double start_us = 0;
  double end_us = 0;
  bool comm = false;
  std::string engine;       // comm: "mpi", "nccl"
  std::uint64_t bytes = 0;  // comm: args.bytes
};

//! A trace's own metadata (its "sluice_trace" event; traces before it have none).
struct trace_metadata {
  bool present = false;
  std::int64_t origin_steady_ns = 0;  // ts 0 on the writing host's steady clock
  std::string host;                   // host name and boot id: same host, same clock
  int rank = -1;                      // MPI_COMM_WORLD rank; -1: none
  int ranks = 0;
  int clock_reference_rank = -1;  // -1: no clock offset measured
  bool clock_same_host = false;
  std::int64_t clock_offset_ns = 0;  // this trace's clock minus the reference rank's
  std::int64_t clock_offset_error_ns = 0;
};

//! What a trace's reader hands on, event by event, in the file's order.
class trace_sink {
 public:
  virtual ~trace_sink() = default;
  //! A stream's track (a thread_name event of a device's process).
  virtual void track(int device, std::uint64_t stream, const stream_track& t) = 0;
  //! A device's clock error (its process_name event's clock_error_us).
  virtual void clock_error(int device, double us) = 0;
  virtual void op(const traced_op& o) = 0;
  virtual void range(const traced_range& r) = 0;
  //! An operation run by a graph launch.
  virtual void graph_op(const traced_graph_op& g) { (void)g; }
  //! The trace's "sluice_trace" metadata.
  virtual void metadata(const trace_metadata& m) { (void)m; }
  //! What timed the trace's operations (the host track's process_name
  //! argument trace_source); `rank`: -1 from the reader, the file's rank
  //! where read_rank_files merges several.
  virtual void source(const std::string& source_name, int rank) {
    (void)source_name;
    (void)rank;
  }
};

//! The bytes of a trace, a block at a time: fills at most `size` bytes of
//! `into`, returns how many (0: the end). Throws std::runtime_error when the
//! file cannot be read.
using trace_source = std::function<std::size_t(char* into, std::size_t size)>;

}  // namespace sluice::tool
