// `sluice trace report <file>`: what a sluice trace (Chrome-trace JSON written
// by trace_end / SLUICE_TRACE) says about overlap: per-stream busy time,
// pairwise overlap, idle gaps, waits and the critical path.
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
struct traced_range {
  int device = 0;
  std::uint64_t stream = 0;
  std::string name;
  double start_us = 0;
  double end_us = 0;
};

struct stream_summary {
  int device = 0;
  std::uint64_t stream = 0;
  std::string name;   // the stream's name; empty: unnamed
  std::string about;  // "native priority 0" (an older trace: its track's name)
  std::size_t operations = 0;
  double busy_us = 0;  // union of the non-wait operations
  double span_us = 0;  // first start to last end
  double idle_us = 0;  // span - busy
  double largest_gap_us = 0;
  std::size_t waits = 0;  // wait and wait_value operations
  double waiting_us = 0;
};

struct overlap_pair {
  std::size_t a = 0, b = 0;  // indices into streams
  double overlap_us = 0;
  double percent_of_shorter = 0;
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
  std::vector<overlap_pair> overlaps;
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

trace_analysis analyze(const std::vector<traced_op>& ops, const stream_tracks& tracks,
                       const std::vector<traced_range>& ranges = {});

//! How the report and the timeline name a stream: "d<device>/s<id>", then its
//! name when it has one ("d0/s3 upload").
std::string stream_label(int device, std::uint64_t stream, const std::string& name);

std::string format_report(const trace_analysis& a, const std::string& file);

//! `sluice trace report <file> [--png <out.png>]` with `args` the arguments
//! after "trace": prints the report; returns the exit code (1: unreadable or
//! malformed file, gnuplot failed). Throws usage_error (commands.hpp) on a
//! usage error. --help is the dispatcher's (commands.hpp).
int trace_command(const std::vector<std::string>& args);

}  // namespace sluice::tool
