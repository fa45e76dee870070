// `sluice trace report`'s analysis, fed by the reader one event at a time
// (a trace_sink), and its timeline.
#pragma once

#include "trace/analysis.hpp"
#include "trace/events.hpp"
#include "trace/rank_alignment.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::tool {

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
  void graph_op(const traced_graph_op& g) override;
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

}  // namespace sluice::tool
