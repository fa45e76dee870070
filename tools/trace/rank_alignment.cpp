#include "trace/rank_alignment.hpp"

#include "trace/analyzer.hpp"
#include "trace/reader.hpp"
#include "trace/stream_ids.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>

namespace sluice::tool {

std::vector<rank_alignment> align_ranks(const std::vector<trace_metadata>& files) {
  std::vector<rank_alignment> out(files.size());
  std::map<int, std::size_t> seen;
  for (std::size_t i = 0; i < files.size(); ++i) {
    out[i].rank = files[i].rank >= 0 ? files[i].rank : static_cast<int>(i);
    const auto [it, fresh] = seen.emplace(out[i].rank, i);
    if (!fresh)
      throw std::runtime_error("files " + std::to_string(it->second + 1) + " and " +
                               std::to_string(i + 1) + " are both rank " +
                               std::to_string(out[i].rank) + " (one file per rank)");
    if (out[i].rank > 65534)
      throw std::runtime_error("rank " + std::to_string(out[i].rank) + " is too large");
  }
  if (files.empty()) return out;
  // The reference: the rank the offsets were measured against, if among the files.
  std::size_t ref = 0;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (files[i].clock_reference_rank >= 0) {
      const auto it = seen.find(files[i].clock_reference_rank);
      if (it != seen.end()) ref = it->second;
      break;
    }
  const trace_metadata& r = files[ref];
  std::vector<double> place(files.size());  // origin on the reference's clock, ns
  for (std::size_t i = 0; i < files.size(); ++i) {
    const trace_metadata& f = files[i];
    rank_alignment& al = out[i];
    std::int64_t offset = 0;
    if (i == ref) {
      al.how = "reference clock";
    } else if (!f.host.empty() && f.host == r.host) {
      al.how = "same host as the reference: same steady clock, exact";
    } else if (f.clock_reference_rank >= 0 && f.clock_reference_rank == out[ref].rank) {
      offset = f.clock_offset_ns;
      al.error_us = static_cast<double>(f.clock_offset_error_ns) / 1000.0;
      al.how = "clock offset measured at communicator creation";
    } else if (!f.present || !r.present) {
      al.how = "not aligned: a trace without sluice_trace metadata (times from its own start)";
    } else {
      al.how = "not aligned: another host and no clock offset against the reference's rank";
    }
    const bool aligned = al.how.rfind("not aligned", 0) != 0;
    place[i] = aligned ? static_cast<double>(f.origin_steady_ns - offset) : 0.0;
  }
  // Unaligned files start where the reference starts.
  for (std::size_t i = 0; i < files.size(); ++i)
    if (out[i].how.rfind("not aligned", 0) == 0) place[i] = place[ref];
  const double base = *std::min_element(place.begin(), place.end());
  for (std::size_t i = 0; i < files.size(); ++i) out[i].shift_us = (place[i] - base) / 1000.0;
  return out;
}

namespace {

//! Reads only a trace's metadata.
struct metadata_sink : trace_sink {
  trace_metadata m;
  void track(int, std::uint64_t, const stream_track&) override {}
  void clock_error(int, double) override {}
  void op(const traced_op&) override {}
  void range(const traced_range&) override {}
  void metadata(const trace_metadata& t) override { m = t; }
};

//! Hands one rank's events on: times shifted, streams marked with the rank.
struct rank_sink : trace_sink {
  trace_sink& to;
  int rank;
  double shift;
  rank_sink(trace_sink& t, int r, double s) : to(t), rank(r), shift(s) {}
  std::uint64_t id(std::uint64_t stream) const {
    if (stream >> rank_shift != 0)
      throw std::runtime_error("stream id " + std::to_string(stream) + " is too large to merge");
    return merged_stream(rank, stream);
  }
  void track(int device, std::uint64_t stream, const stream_track& t) override {
    to.track(device, id(stream), t);
  }
  void clock_error(int device, double us) override {
    // Keyed by rank too: (rank + 1) * 1000 + device (format_report shows it).
    to.clock_error((rank + 1) * 1000 + device, us);
  }
  void op(const traced_op& o) override {
    traced_op m = o;
    m.stream = id(o.stream);
    if (m.waits_for_stream != 0) m.waits_for_stream = id(o.waits_for_stream);
    m.start_us += shift;
    m.end_us += shift;
    m.enqueued_us += shift;
    to.op(m);
  }
  void range(const traced_range& r) override {
    traced_range m = r;
    m.stream = id(r.stream);
    m.start_us += shift;
    m.end_us += shift;
    to.range(m);
  }
  void graph_op(const traced_graph_op& g) override {
    traced_graph_op m = g;
    m.stream = id(g.stream);
    m.start_us += shift;
    m.end_us += shift;
    to.graph_op(m);
  }
  void metadata(const trace_metadata& m) override { to.metadata(m); }
  void source(const std::string& source_name, int) override { to.source(source_name, rank); }
};

}  // namespace

trace_metadata read_trace_metadata(const std::string& path) {
  metadata_sink m;
  read_trace_file(path, m);
  return m.m;
}

void read_rank_files(const std::vector<std::string>& files, trace_analyzer& into,
                     std::vector<rank_alignment>* alignment) {
  std::vector<trace_metadata> meta;
  for (const std::string& f : files) {
    try {
      meta.push_back(read_trace_metadata(f));
    } catch (const std::exception& e) {
      throw std::runtime_error(f + ": " + e.what());
    }
  }
  std::vector<rank_alignment> al = align_ranks(meta);
  for (std::size_t i = 0; i < files.size(); ++i) {
    al[i].file = files[i];
    rank_sink sink(into, al[i].rank, al[i].shift_us);
    try {
      read_trace_file(files[i], sink);
    } catch (const std::exception& e) {
      throw std::runtime_error(files[i] + ": " + e.what());
    }
  }
  into.note_alignment(al);
  if (alignment != nullptr) *alignment = al;
}

}  // namespace sluice::tool
