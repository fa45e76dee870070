// What trace_analyzer keeps while it reads (analyzer.cpp), computes in-flight
// time from (in_flight.cpp) and draws the timeline from (timeline.cpp).
#pragma once

#include "trace/analyzer.hpp"
#include "trace/intervals.hpp"
#include "trace/spill_file.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::tool {

//! One operation as the temporary file holds it.
struct op_record {
  double start = 0, end = 0;
  double enqueued = 0;  // with has_enqueue
  std::uint64_t seq = 0, waits_for_stream = 0, waits_for_seq = 0;
  std::uint32_t kind = 0;
  std::uint8_t wait = 0, has_enqueue = 0, on_host = 0;
};

struct stream_state {
  int device = 0;
  std::uint64_t id = 0;
  record_log<op_record> ops;
  bool seq_sorted = true;
  std::uint64_t last_seq = 0;
  record_log<interval> busy;                   // after finish()
  record_log<interval> in_flight;              // after finish()
  std::vector<std::uint64_t> block_first_seq;  // of ops' blocks, after finish()
};

struct range_acc {
  range_summary s;
  double first_start = 0;
  std::uint64_t first_index = 0;
};

struct comm_acc {
  trace_analysis::comm_summary s;
  int device = 0;
  std::uint64_t stream = 0;
  double first_start = 0;
};

constexpr std::size_t max_drawn_ranges = 100000;

struct trace_analyzer::state {
  std::unique_ptr<spill_file> file;
  std::vector<std::unique_ptr<stream_state>> streams;
  std::unordered_map<std::uint64_t, std::size_t> index;  // stream id -> streams
  std::uint64_t last_id = 0;
  std::size_t last_index = SIZE_MAX;
  stream_tracks tracks;
  std::map<int, double> clock_errors;
  std::map<std::string, std::uint32_t, std::less<>> kind_ids;
  std::vector<std::string> kinds;
  std::size_t operations = 0;
  double first = 0, last = 0;
  bool any = false;
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> range_index;
  std::vector<range_acc> ranges;
  // sluice::comm's spans: per stream and name, and their intervals per rank.
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> comm_index;
  std::vector<comm_acc> comm;
  std::map<int, intervals> comm_spans;
  // Kernels per (stream index, name id): count, time, order of first sight.
  struct kernel_acc {
    std::size_t count = 0;
    double total_us = 0;
    std::size_t first = 0;
  };
  std::map<std::pair<std::size_t, std::uint32_t>, kernel_acc> kernels;
  std::size_t kernel_order = 0;
  // Graph launches' operations per (device, stream, kind): count, time, order of first sight.
  std::map<std::pair<std::pair<int, std::uint64_t>, std::string>, kernel_acc> graph_ops;
  std::size_t graph_order = 0;
  std::size_t graph_launches = 0, graph_operations = 0;
  std::uint64_t range_count = 0;
  bool timeline = true;
  std::vector<traced_range> drawn_ranges;  // the first max_drawn_ranges, for the timeline
  std::map<int, std::string> sources;      // per rank: trace_source
  trace_analysis a;
  bool finished = false;

  spill_file& spill() {
    if (!file) file = std::make_unique<spill_file>();
    return *file;
  }

  //! The block of a stream's operations that record k is in: a few cached.
  struct cached {
    std::size_t stream = SIZE_MAX, block = 0;
    std::uint64_t used = 0;
    std::vector<op_record> records;
  };
  std::vector<cached> cache = std::vector<cached>(16);
  std::uint64_t uses = 0;
  const op_record& record(std::size_t stream, std::size_t k) {
    const std::size_t b = k / record_log<op_record>::block;
    cached* slot = &cache[0];
    for (cached& c : cache) {
      if (c.stream == stream && c.block == b) {
        c.used = ++uses;
        return c.records[k % record_log<op_record>::block];
      }
      if (c.used < slot->used) slot = &c;
    }
    streams[stream]->ops.read_block(*file, b, slot->records);
    slot->stream = stream;
    slot->block = b;
    slot->used = ++uses;
    return slot->records[k % record_log<op_record>::block];
  }
  //! The last of a stream's operations whose seq is `seq`; false if none.
  bool find_seq(std::size_t stream, std::uint64_t seq, std::size_t* k) {
    const auto& firsts = streams[stream]->block_first_seq;
    const auto after = std::upper_bound(firsts.begin(), firsts.end(), seq);
    if (after == firsts.begin()) return false;
    const std::size_t b = static_cast<std::size_t>(after - firsts.begin()) - 1;
    const std::size_t from = b * record_log<op_record>::block;
    const std::size_t to =
        std::min(from + record_log<op_record>::block, streams[stream]->ops.size());
    // Within the block: the last record with a seq <= `seq`.
    std::size_t lo = from, hi = to;  // answer in [lo, hi)
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (record(stream, mid).seq <= seq)
        lo = mid;
      else
        hi = mid;
    }
    if (record(stream, lo).seq != seq) return false;
    *k = lo;
    return true;
  }

  //! Stream i's in-flight intervals, merged into its in_flight log; returns
  //! their total (stream_summary::in_flight_us says what they are). After
  //! every stream's operations are in seq order with their block_first_seq
  //! (a wait's source may be on any stream).
  double in_flight(std::size_t i);
};

}  // namespace sluice::tool
