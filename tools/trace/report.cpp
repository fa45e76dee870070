#include "trace/report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace sluice::tool {

namespace {

std::string us(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", v);
  return text;
}

//! The report's line on what timed a trace's operations.
std::string timing_text(const std::string& source) {
  switch (timing_of(source)) {
    case span_timing::events:
      return "timing events (trace_source events): an operation's span runs from when its stream "
             "reached it (not before its enqueue) to its completion, time waiting for a copy "
             "engine or the SMs included: executing is not measured";
    case span_timing::executing:
      if (source == "cupti")
        return "CUPTI activity records (trace_source cupti): a device operation's span is its "
               "execution on the device: busy is executing";
      return "the host backend's workers (trace_source " + source +
             "): an operation's span is its run on a worker: busy is executing";
    case span_timing::unnamed: break;
  }
  if (source.empty()) return "not named in the trace (no trace_source): busy as its spans say";
  return "trace_source " + source + ", not known to this report: busy as its spans say";
}

}  // namespace

span_timing timing_of(const std::string& source_name) {
  if (source_name == "events") return span_timing::events;
  if (source_name == "cupti" || source_name == "host") return span_timing::executing;
  return span_timing::unnamed;
}

std::string format_report(const trace_analysis& a, const std::string& file) {
  std::ostringstream out;
  out << "trace: " << file << ": " << a.operations << " operations on " << a.streams.size()
      << " streams, " << us(a.span_us) << " from the first start to the last end\n";
  // What timed the operations: one line, or one per rank where the ranks' differ.
  std::vector<int> ranks;  // of the streams (a single trace: -1)
  for (const stream_summary& st : a.streams) {
    const int r = rank_of_stream(st.stream);
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) ranks.push_back(-1);
  const auto source_of = [&](int rank) {
    const auto it = a.trace_sources.find(rank);
    return it != a.trace_sources.end() ? it->second : std::string();
  };
  bool one_source = true;
  for (const int rank : ranks) one_source = one_source && source_of(rank) == source_of(ranks[0]);
  if (one_source) {
    out << "timing: " << timing_text(source_of(ranks[0])) << "\n";
  } else {
    for (const int rank : ranks)
      out << "timing on rank " << rank << ": " << timing_text(source_of(rank)) << "\n";
  }
  if (!a.clock_error_us.empty()) {
    // Device times were mapped onto the host clock: against host functions'
    // times (host clock) they may be off by this much.
    out << "device clocks (device times on the host clock within +-):";
    for (const auto& e : a.clock_error_us) {
      if (e.first >= 1000)  // merged traces: (rank + 1) * 1000 + device
        out << " r" << e.first / 1000 - 1 << "/device " << e.first % 1000 << " " << us(e.second);
      else
        out << " device " << e.first << " " << us(e.second);
    }
    out << "\n";
  }
  if (!a.alignment.empty()) {
    out << "ranks (one timeline: each file's times moved onto the reference rank's clock):\n";
    for (const rank_alignment& r : a.alignment) {
      out << "  r" << r.rank << ": " << r.file << ": " << r.how;
      if (r.error_us > 0) out << ", within +-" << us(r.error_us);
      char shift[48];
      std::snprintf(shift, sizeof shift, " (shifted by %.3f us)", r.shift_us);
      out << shift << "\n";
    }
  }
  out << "streams (busy: the union of its operations other than waits, as timed; in flight: the "
         "same, each from when it could start (enqueued, its stream's earlier operations done) to "
         "its end; idle: the rest of the stream's span):\n";
  for (const stream_summary& s : a.streams) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", s.span_us > 0 ? 100.0 * s.busy_us / s.span_us : 0.0);
    out << "  " << label_of(s) << (s.about.empty() ? "" : " (" + s.about + ")") << ": "
        << s.operations << " operations, busy " << us(s.busy_us) << " of " << us(s.span_us) << " ("
        << pct << "), in flight " << us(s.in_flight_us) << ", idle " << us(s.idle_us)
        << " (largest gap " << us(s.largest_gap_us) << "), " << s.waits << " waits ("
        << us(s.waiting_us) << ")\n";
  }
  // Overlap: within each rank (a single trace: one "rank").
  for (const int rank : ranks) {
    const std::string indent = rank >= 0 ? "    " : "  ";
    const span_timing timing = timing_of(source_of(rank));
    out << "overlap" << (rank >= 0 ? " on rank " + std::to_string(rank) : std::string())
        << " (in flight: both streams had an operation in flight at once, % of the shorter "
           "stream's in-flight time";
    if (timing == span_timing::executing)
      out << "; executing: both busy at once, % of the shorter stream's busy time";
    else if (timing == span_timing::events)
      out << "; executing: not measured (timing events cannot tell it from queued)";
    out << "):\n";
    std::vector<overlap_pair> pairs;
    for (const overlap_pair& p : a.overlaps)
      if (rank_of_stream(a.streams[p.a].stream) == rank) pairs.push_back(p);
    if (pairs.empty()) out << indent << "(fewer than two busy streams)\n";
    // The pairs that overlap most first; at most 20 of them.
    std::stable_sort(pairs.begin(), pairs.end(), [](const overlap_pair& x, const overlap_pair& y) {
      return x.overlap_us > y.overlap_us;
    });
    constexpr std::size_t shown = 20;
    if (pairs.size() > shown) {
      out << indent << "(the " << shown << " pairs with the most overlap of " << pairs.size()
          << ")\n";
      pairs.resize(shown);
    }
    for (const overlap_pair& p : pairs) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f%%", p.percent_of_shorter);
      out << indent << label_of(a.streams[p.a]) << " x " << label_of(a.streams[p.b]) << ": "
          << us(p.overlap_us) << " (" << pct << ")";
      if (timing == span_timing::executing) {
        std::snprintf(pct, sizeof pct, "%.1f%%", p.busy_percent);
        out << ", executing " << us(p.busy_overlap_us) << " (" << pct << ")";
      }
      out << "\n";
    }
  }
  out << "critical path: " << us(a.path.length_us) << ", " << a.path.operations << " operations";
  for (std::size_t i = 0; i < a.path.per_stream.size(); ++i)
    out << (i == 0 ? ": " : ", ") << label_of(a.streams[a.path.per_stream[i].first]) << " "
        << a.path.per_stream[i].second;
  out << "\n";
  if (!a.kernels.empty()) {
    out << "kernels (launched through sluice::kokkos::submit; per stream and name):\n";
    constexpr std::size_t listed = 40;
    if (a.kernels.size() > listed)
      out << "  (the first " << listed << " of " << a.kernels.size() << " stream and name pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.kernels.size()); ++i) {
      const kernel_summary& k = a.kernels[i];
      out << "  " << k.stream_label << ": \"" << k.name << "\" " << k.count
          << (k.count == 1 ? " kernel, " : " kernels, ") << us(k.total_us) << "\n";
    }
  }
  if (a.graph_launches != 0 || a.graph_operations != 0) {
    out << "graphs: " << a.graph_launches << (a.graph_launches == 1 ? " launch, " : " launches, ")
        << a.graph_operations
        << " operations run by them (on the tracks of the streams they were captured from; "
           "per stream and kind):\n";
    for (const graph_summary& g : a.graph)
      out << "  " << g.stream_label << ": " << g.kind << " " << g.count << ", " << us(g.total_us)
          << "\n";
  }
  if (!a.comm.empty()) {
    out << "communication (sluice::comm: from the stream's arrival to the done flag; per stream "
           "and operation):\n";
    constexpr std::size_t listed = 40;
    if (a.comm.size() > listed)
      out << "  (the first " << listed << " of " << a.comm.size()
          << " stream and operation pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.comm.size()); ++i) {
      const auto& c = a.comm[i];
      out << "  " << c.stream_label << ": " << c.name << " (" << c.engine << ") " << c.count
          << (c.count == 1 ? " operation, " : " operations, ") << c.bytes << " bytes, "
          << us(c.total_us) << "\n";
    }
    for (const auto& r : a.comm_overlap) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f%%",
                    r.comm_us > 0 ? 100.0 * r.covered_us / r.comm_us : 0.0);
      out << "  " << (r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("in all"))
          << ": communication in flight " << us(r.comm_us) << ", of which streams were busy "
          << us(r.covered_us) << " (" << pct << ")\n";
    }
  }
  if (!a.ranges.empty()) {
    out << "ranges (trace_range: begin to end marker; per stream and name, in the order of their "
           "first start):\n";
    constexpr std::size_t listed = 40;  // a range name per loop iteration would list thousands
    if (a.ranges.size() > listed)
      out << "  (the first " << listed << " of " << a.ranges.size() << " stream and name pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.ranges.size()); ++i) {
      const range_summary& r = a.ranges[i];
      out << "  " << r.stream_label << ": \"" << r.name << "\" ";
      if (r.count == 1)
        out << us(r.total_us) << "\n";
      else
        out << r.count << " ranges, " << us(r.total_us) << " in all (" << us(r.shortest_us)
            << " to " << us(r.longest_us) << " each)\n";
    }
  }
  return out.str();
}

}  // namespace sluice::tool
