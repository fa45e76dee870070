// `sluice trace report <file>`: what a sluice trace (Chrome-trace JSON written
// by trace_end / SLUICE_TRACE) says about overlap: per-stream busy and
// in-flight time, pairwise overlap (in flight, and executing where the trace
// times execution), idle gaps, waits and the critical path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

//! How a trace's operations were timed: the host track's `trace_source`.
enum class span_timing {
  unnamed,    // no trace_source (traces before it), or one this report does not know
  events,     // "events": timing events, from when the stream reached it to its completion
  executing,  // "cupti" (CUPTI activity records), "host" (the host backend's workers): its run
};
span_timing timing_of(const std::string& source_name);

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

//! Merged traces (several ranks' files): a stream's id carries its file's
//! rank + 1 in bits 48..63, so that streams of different ranks stay apart;
//! stream_label shows it as "r<rank>/".
constexpr int rank_shift = 48;
inline std::uint64_t merged_stream(int rank, std::uint64_t stream) {
  return stream | (static_cast<std::uint64_t>(rank + 1) << rank_shift);
}
//! The rank of a (merged) stream id; -1: a single trace's stream.
inline int rank_of_stream(std::uint64_t stream) {
  return static_cast<int>(stream >> rank_shift) - 1;
}

//! How the report puts several ranks' traces on one timeline: per file, the
//! microseconds added to its times, and how far it may be off against the
//! reference rank's file.
struct rank_alignment {
  int rank = 0;
  std::string file;  // read_rank_files fills it
  double shift_us = 0;
  double error_us = 0;  // +-
  std::string how;      // "reference", "same host", "clock offset", "not aligned: ..."
};
//! Aligns traces with their metadata (in file order). A file without a rank
//! gets its position; throws std::runtime_error for two files of one rank.
//! The reference: the file of the rank the offsets were measured against,
//! else the first. Its origin - offset is each file's place on the reference
//! clock; the earliest becomes 0.
std::vector<rank_alignment> align_ranks(const std::vector<trace_metadata>& files);

struct stream_summary {
  int device = 0;
  std::uint64_t stream = 0;
  std::string name;   // the stream's name; empty: unnamed
  std::string about;  // "native priority 0" (an older trace: its track's name)
  std::size_t operations = 0;
  double busy_us = 0;  // union of the non-wait operations, as the trace times them
  //! Union of the same operations, each in flight: from when it could start,
  //! the latest of its enqueue (enqueued_us), its stream's previous
  //! operations' ends and, after a wait, the end of what it waited for, to
  //! its end; never later than its own start. An operation without an
  //! enqueue time (the user's own work) and one run by a host thread (on_host)
  //! count from their own start.
  double in_flight_us = 0;
  double span_us = 0;  // first start to last end
  double idle_us = 0;  // span - busy
  double largest_gap_us = 0;
  std::size_t waits = 0;  // wait and wait_value operations
  double waiting_us = 0;
};

//! Two streams' overlap: in flight (comparable across trace sources), and
//! their busy time at once (executing where the trace times execution:
//! span_timing::executing).
struct overlap_pair {
  std::size_t a = 0, b = 0;       // indices into streams
  double overlap_us = 0;          // both streams had an operation in flight at once
  double percent_of_shorter = 0;  // of the shorter stream's in_flight_us
  double busy_overlap_us = 0;     // both busy at once
  double busy_percent = 0;        // of the shorter stream's busy_us
};

struct critical_path {
  double length_us = 0;
  std::size_t operations = 0;
  std::vector<std::pair<std::size_t, std::size_t>> per_stream;  // (stream index, operations)
};

//! The trace_ranges of one name on one stream.
struct range_summary {
  int device = 0;
  std::uint64_t stream = 0;
  std::string stream_label;  // as the report names the stream ("d0/s3 upload")
  std::string name;
  std::size_t count = 0;
  double total_us = 0;
  double shortest_us = 0;
  double longest_us = 0;
};

//! Kernels of one name on one stream (operations with "kind": "kernel":
//! Kokkos kernels launched through sluice::kokkos::submit).
struct kernel_summary {
  std::string stream_label;
  std::string name;
  std::size_t count = 0;
  double total_us = 0;
};

struct trace_analysis {
  std::vector<stream_summary> streams;
  //! Per stream (in the order of `streams`) and kernel name (by first seen).
  std::vector<kernel_summary> kernels;
  //! Per stream (in the order of `streams`, then streams with ranges only)
  //! and name (in the order of their first start).
  std::vector<range_summary> ranges;
  //! Per device whose times were mapped onto the host clock (the GPU
  //! backends): the trace's `clock_error_us`, how far they may be off.
  std::map<int, double> clock_error_us;
  //! Only between streams of one rank (merged traces: several ranks).
  std::vector<overlap_pair> overlaps;
  //! Per rank (-1: a single trace), its trace_source where the trace names one.
  std::map<int, std::string> trace_sources;
  //! sluice::comm's operations per stream and name (comm spans).
  struct comm_summary {
    std::string stream_label;
    std::string name;
    std::string engine;
    std::size_t count = 0;
    std::uint64_t bytes = 0;
    double total_us = 0;
  };
  std::vector<comm_summary> comm;
  //! Per rank with comm spans (-1: a single trace's): the time some comm
  //! operation of the rank was in flight (the union of its spans), and how
  //! much of it some stream of that rank was busy (not waiting) meanwhile.
  struct rank_comm {
    int rank = -1;
    double comm_us = 0;
    double covered_us = 0;
  };
  std::vector<rank_comm> comm_overlap;
  //! Merged traces: each file's alignment (format_report shows it).
  std::vector<rank_alignment> alignment;
  std::vector<std::string> files;
  critical_path path;
  std::size_t operations = 0;
  double span_us = 0;
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

//! Reads a sluice trace (Chrome-trace JSON: an object with a traceEvents
//! array, or the array alone) from `source` with bounded memory: simdjson
//! parses each event; the array around them is followed by a small framing
//! scanner (docs/design.md, "Libraries"). Throws std::runtime_error naming the
//! byte, the event and what is wrong on malformed JSON, nesting deeper than
//! 64 levels, an event of more than 64 MiB, fields of the wrong type, numbers
//! out of range, negative durations and a truncated file.
void read_trace_events(const trace_source& source, trace_sink& sink);

//! read_trace_events on a file; throws std::runtime_error (without the file's
//! name: the caller adds it) when it cannot be read or is malformed.
void read_trace_file(const std::string& path, trace_sink& sink);

//! Reads the operations of a sluice trace held in memory and, for those
//! given, the streams' tracks (names), the devices' clock errors and the
//! trace_ranges. Throws as read_trace_events.
std::vector<traced_op> read_trace(const std::string& json, stream_tracks* tracks,
                                  std::map<int, double>* clock_errors = nullptr,
                                  std::vector<traced_range>* ranges = nullptr);

//! The report's analysis, one event at a time: memory stays bounded whatever
//! the trace's length (the operations go to a temporary file, a block per
//! stream, and are read back per stream in finish() and the timeline). Exact:
//! the same numbers as sorting every stream's operations in memory.
class trace_analyzer : public trace_sink {
 public:
  //! timeline: keep the first 100,000 trace_ranges for write_timeline_png.
  explicit trace_analyzer(bool timeline = true);
  ~trace_analyzer() override;
  trace_analyzer(const trace_analyzer&) = delete;
  trace_analyzer& operator=(const trace_analyzer&) = delete;

  void track(int device, std::uint64_t stream, const stream_track& t) override;
  void clock_error(int device, double us) override;
  void op(const traced_op& o) override;
  void range(const traced_range& r) override;
  void source(const std::string& source_name, int rank) override;

  //! Merged traces: how the files were aligned (shown by format_report).
  void note_alignment(const std::vector<rank_alignment>& alignment);

  //! The analysis of everything added so far (once).
  const trace_analysis& finish();

  //! Draws the operations as a timeline, one row per stream (labelled with
  //! stream_label), and each stream's trace_ranges on rows above it (one per
  //! nesting level), named where the bar is wide enough, with gnuplot
  //! (Debian: gnuplot-nox). Above `every_op_up_to` operations, each stream's
  //! row is drawn in time buckets (about a pixel each: the busy time of the
  //! bucket, in the colour of the kind that was busy longest) instead of
  //! operation by operation; the trace_ranges drawn are the first 100,000.
  //! Leaves <png>.gnuplot and <png>.dat next to it. After finish(). Throws
  //! std::runtime_error when gnuplot is missing or fails.
  void write_timeline_png(const std::string& png, std::size_t every_op_up_to = 100000);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

//! `source_name`: the trace's trace_source (empty: it names none).
trace_analysis analyze(const std::vector<traced_op>& ops, const stream_tracks& tracks,
                       const std::vector<traced_range>& ranges = {},
                       const std::string& source_name = std::string());

//! How the report and the timeline name a stream: "d<device>/s<id>", then its
//! name when it has one ("d0/s3 upload").
std::string stream_label(int device, std::uint64_t stream, const std::string& name);

std::string format_report(const trace_analysis& a, const std::string& file);

//! Reads the files of several ranks into one analysis: each file is read
//! twice (its metadata is at its end: first for the alignment, then its
//! events, shifted onto the common timeline, streams prefixed by rank).
//! Throws std::runtime_error naming the file.
void read_rank_files(const std::vector<std::string>& files, trace_analyzer& into,
                     std::vector<rank_alignment>* alignment);

//! The metadata of one trace file (its "sluice_trace" event).
trace_metadata read_trace_metadata(const std::string& path);

}  // namespace sluice::tool
