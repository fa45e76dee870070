// What `sluice trace report` finds in a trace (trace_analyzer::finish): per
// stream busy and in-flight time, pairwise overlap (in flight, and executing
// where the trace times execution), idle gaps, waits, the critical path,
// kernels, trace_ranges and sluice::comm's operations.
#pragma once

#include "trace/rank_alignment.hpp"
#include "trace/stream_ids.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::tool {

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

//! The operations that graph launches ran of one kind, on the track of one
//! stream they were captured from.
struct graph_summary {
  std::string stream_label;
  std::string kind;
  std::size_t count = 0;
  double total_us = 0;
};

struct trace_analysis {
  std::vector<stream_summary> streams;
  //! Graph launches (operations "graph_launch") and the operations they ran
  //! (category "graph"), per stream (by id) and kind (by first seen).
  std::size_t graph_launches = 0;
  std::size_t graph_operations = 0;
  std::vector<graph_summary> graph;
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

//! stream_label of one of the analysis's streams.
inline std::string label_of(const stream_summary& s) {
  return stream_label(s.device, s.stream, s.name);
}

}  // namespace sluice::tool
