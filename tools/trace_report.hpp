// `sluice trace report <file>`: what a sluice trace (Chrome-trace JSON written
// by trace_end / SLUICE_TRACE) says about overlap: per-stream busy time,
// pairwise overlap, idle gaps, waits and the critical path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
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
};

struct stream_summary {
  int device = 0;
  std::uint64_t stream = 0;
  std::string name;
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

struct trace_analysis {
  std::vector<stream_summary> streams;
  //! Per device whose times were mapped onto the host clock (the GPU
  //! backends): the trace's `clock_error_us`, how far they may be off.
  std::map<int, double> clock_error_us;
  std::vector<overlap_pair> overlaps;
  critical_path path;
  std::size_t operations = 0;
  double span_us = 0;
};

//! Reads the operations of a sluice trace, the streams' names and (when
//! `clock_errors` is given) the devices' clock errors. Throws
//! std::runtime_error naming the position on malformed JSON.
std::vector<traced_op> read_trace(const std::string& json,
                                  std::map<std::pair<int, std::uint64_t>, std::string>* names,
                                  std::map<int, double>* clock_errors = nullptr);

trace_analysis analyze(const std::vector<traced_op>& ops,
                       const std::map<std::pair<int, std::uint64_t>, std::string>& names);

std::string format_report(const trace_analysis& a, const std::string& file);

//! Draws the operations as a timeline, one row per stream, with gnuplot
//! (Debian: gnuplot-nox). Leaves <png>.gnuplot and <png>.dat next to it.
//! Throws std::runtime_error when gnuplot is missing or fails.
void write_timeline_png(const std::vector<traced_op>& ops, const trace_analysis& a,
                        const std::string& png);

//! `sluice trace report <file> [--png <out.png>]` with `args` the arguments
//! after "trace": prints the report; returns the exit code (1: unreadable or
//! malformed file, gnuplot failed). Throws usage_error (commands.hpp) on a
//! usage error. --help is the dispatcher's (commands.hpp).
int trace_command(const std::vector<std::string>& args);

}  // namespace sluice::tool
