// Several ranks' traces (sluice trace report a b): their alignment onto one
// timeline, merged stream ids, overlap and communication per rank.
#include "trace/analyzer.hpp"
#include "trace/rank_alignment.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"
#include "trace/stream_ids.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::align_ranks;
using sluice::tool::analyze;
using sluice::tool::format_report;
using sluice::tool::read_trace;
using sluice::tool::trace_metadata;

trace_metadata meta(int rank, std::int64_t origin, const std::string& host) {
  trace_metadata m;
  m.present = true;
  m.rank = rank;
  m.ranks = 2;
  m.origin_steady_ns = origin;
  m.host = host;
  return m;
}

TEST(TraceReportRanks, SameHostAlignsExactlyByTheOrigins) {
  // Rank 1 started its trace 5 us after rank 0, on the same host.
  const auto a = align_ranks({meta(0, 1000000, "h"), meta(1, 1005000, "h")});
  ASSERT_EQ(a.size(), 2U);
  EXPECT_EQ(a[0].rank, 0);
  EXPECT_DOUBLE_EQ(a[0].shift_us, 0.0);
  EXPECT_EQ(a[0].how, "reference clock");
  EXPECT_DOUBLE_EQ(a[1].shift_us, 5.0);
  EXPECT_DOUBLE_EQ(a[1].error_us, 0.0);
  EXPECT_NE(a[1].how.find("same host"), std::string::npos);
  // In another order: the earliest is still 0.
  const auto b = align_ranks({meta(1, 1005000, "h"), meta(0, 1000000, "h")});
  EXPECT_DOUBLE_EQ(b[0].shift_us, 5.0);
  EXPECT_DOUBLE_EQ(b[1].shift_us, 0.0);
}

TEST(TraceReportRanks, AnotherHostUsesTheMeasuredOffsetAndItsError) {
  trace_metadata r0 = meta(0, 1000000, "h");
  r0.clock_reference_rank = 0;
  trace_metadata r1 = meta(1, 1005000, "g");
  r1.clock_reference_rank = 0;
  r1.clock_offset_ns = 2000;  // rank 1's clock is 2 us ahead of rank 0's
  r1.clock_offset_error_ns = 500;
  const auto a = align_ranks({r0, r1});
  EXPECT_DOUBLE_EQ(a[0].shift_us, 0.0);
  EXPECT_DOUBLE_EQ(a[1].shift_us, 3.0);  // 1005000 - 2000 - 1000000 ns
  EXPECT_DOUBLE_EQ(a[1].error_us, 0.5);
  EXPECT_NE(a[1].how.find("clock offset"), std::string::npos);
  // The reference is the rank the offsets are against, wherever its file is.
  const auto b = align_ranks({r1, r0});
  EXPECT_DOUBLE_EQ(b[0].shift_us, 3.0);
  EXPECT_EQ(b[1].how, "reference clock");
  // Without an offset another host's trace is not aligned, and says so.
  r1.clock_reference_rank = -1;
  const auto c = align_ranks({r0, r1});
  EXPECT_EQ(c[1].how.rfind("not aligned", 0), 0U);
  EXPECT_DOUBLE_EQ(c[1].shift_us, 0.0);
}

TEST(TraceReportRanks, TwoFilesOfOneRankAreRejected) {
  EXPECT_THROW(align_ranks({meta(1, 0, "h"), meta(1, 0, "h")}), std::runtime_error);
  // Files without a rank take their position.
  trace_metadata none;
  const auto a = align_ranks({none, none});
  EXPECT_EQ(a[0].rank, 0);
  EXPECT_EQ(a[1].rank, 1);
}

TEST(TraceReportRanks, MergedStreamsAreLabelledByRank) {
  EXPECT_EQ(sluice::tool::stream_label(0, sluice::tool::merged_stream(3, 7), "halo"),
            "r3/d0/s7 halo");
  EXPECT_EQ(sluice::tool::stream_label(1, 7, ""), "d1/s7");
  EXPECT_EQ(sluice::tool::rank_of_stream(sluice::tool::merged_stream(0, 7)), 0);
  EXPECT_EQ(sluice::tool::rank_of_stream(7), -1);
}

// Rank 0: a send (comm span 10-30 us on stream 1, its write_value 10-11 and
// wait_value 11-30) while stream 2 computes 0-20. Rank 1 (started 5 us later,
// same host): a receive 0-20 on stream 1 (write_value 0-1), compute 0-10 on
// stream 2. Both files use stream ids 1 and 2.
std::string rank_trace(int rank, std::int64_t origin, const char* op, double comm_end,
                       double compute_end) {
  std::ostringstream t;
  const double start = rank == 0 ? 10.0 : 0.0;
  t << R"({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "d0/s1 halo", "stream_name": "halo", "native_priority": 0}},
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 2, "args": {"name": "d0/s2 compute", "stream_name": "compute", "native_priority": 0}},
{"name": "write_value", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": )"
    << start << R"(, "dur": 1.0, "args": {"seq": 1}},
{"name": "wait_value", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": )"
    << start + 1 << ", \"dur\": " << comm_end - start - 1 << R"(, "args": {"seq": 2}},
{"name": ")"
    << op << R"(", "cat": "comm", "ph": "X", "pid": 0, "tid": 1, "ts": )" << start
    << ", \"dur\": " << comm_end - start << R"(, "args": {"engine": "mpi", "rank": )" << rank
    << R"(, "ranks": 2, "peer": )" << 1 - rank << R"(, "bytes": 100, "match": 0}},
{"name": "host_func", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 0.0, "dur": )"
    << compute_end << R"(, "args": {"seq": 1}},
{"ph": "M", "name": "sluice_trace", "pid": 1000000, "args": {"origin_steady_ns": )"
    << origin << R"(, "host": "h", "rank": )" << rank
    << R"(, "ranks": 2, "clock_reference_rank": 0, "clock_same_host": true, "clock_offset_ns": 0, "clock_offset_error_ns": 0}}
]})";
  return t.str();
}

TEST(TraceReportRanks, SeveralFilesMakeOneTimelineWithOverlapPerRank) {
  const std::string base = "/tmp/sluice-trace-ranks-test-" + std::to_string(::getpid());
  const std::string f0 = base + ".rank0.json", f1 = base + ".rank1.json";
  std::ofstream(f0) << rank_trace(0, 1000000, "send", 30.0, 20.0);
  std::ofstream(f1) << rank_trace(1, 1005000, "recv", 20.0, 10.0);
  sluice::tool::trace_analyzer z(false);
  std::vector<sluice::tool::rank_alignment> al;
  sluice::tool::read_rank_files({f0, f1}, z, &al);
  const auto& a = z.finish();
  std::remove(f0.c_str());
  std::remove(f1.c_str());
  ASSERT_EQ(al.size(), 2U);
  EXPECT_DOUBLE_EQ(al[1].shift_us, 5.0);
  // Four tracks: both files' streams 1 and 2, apart by rank.
  ASSERT_EQ(a.streams.size(), 4U);
  std::vector<std::string> labels;
  for (const auto& s : a.streams)
    labels.push_back(sluice::tool::stream_label(s.device, s.stream, s.name));
  EXPECT_EQ(labels, (std::vector<std::string>{"r0/d0/s1 halo", "r0/d0/s2 compute", "r1/d0/s1 halo",
                                              "r1/d0/s2 compute"}));
  // One timeline: rank 1's operations moved by 5 us; the span from rank 0's
  // first start (0) to rank 0's last end (30).
  EXPECT_DOUBLE_EQ(a.span_us, 30.0);
  // Overlap only within a rank: rank 0's write_value [10, 11) with its
  // compute [0, 20); rank 1's [5, 6) with [5, 15).
  ASSERT_EQ(a.overlaps.size(), 2U);
  for (const auto& p : a.overlaps) {
    EXPECT_EQ(sluice::tool::rank_of_stream(a.streams[p.a].stream),
              sluice::tool::rank_of_stream(a.streams[p.b].stream));
    EXPECT_DOUBLE_EQ(p.overlap_us, 1.0);
  }
  // Comm operations: per stream and name; comm time and the busy share per rank.
  ASSERT_EQ(a.comm.size(), 2U);
  EXPECT_EQ(a.comm[0].stream_label, "r0/d0/s1 halo");
  EXPECT_EQ(a.comm[0].name, "send");
  EXPECT_EQ(a.comm[0].engine, "mpi");
  EXPECT_EQ(a.comm[0].bytes, 100U);
  EXPECT_DOUBLE_EQ(a.comm[0].total_us, 20.0);
  EXPECT_EQ(a.comm[1].stream_label, "r1/d0/s1 halo");
  ASSERT_EQ(a.comm_overlap.size(), 2U);
  EXPECT_EQ(a.comm_overlap[0].rank, 0);
  EXPECT_DOUBLE_EQ(a.comm_overlap[0].comm_us, 20.0);     // [10, 30)
  EXPECT_DOUBLE_EQ(a.comm_overlap[0].covered_us, 10.0);  // busy [0, 20) and [10, 11)
  EXPECT_EQ(a.comm_overlap[1].rank, 1);
  EXPECT_DOUBLE_EQ(a.comm_overlap[1].comm_us, 20.0);     // [5, 25)
  EXPECT_DOUBLE_EQ(a.comm_overlap[1].covered_us, 10.0);  // busy [5, 15)
  const std::string report = format_report(a, "2 files");
  EXPECT_NE(report.find("overlap on rank 0"), std::string::npos) << report;
  EXPECT_NE(report.find("overlap on rank 1"), std::string::npos) << report;
  EXPECT_NE(report.find("r1/d0/s1 halo: recv (mpi) 1 operation, 100 bytes, 20.0 us"),
            std::string::npos)
      << report;
  EXPECT_NE(
      report.find(
          "rank 1: communication in flight 20.0 us, of which streams were busy 10.0 us (50.0%)"),
      std::string::npos)
      << report;
  EXPECT_NE(report.find("r1: " + f1 + ": same host as the reference"), std::string::npos) << report;
}

TEST(TraceReportRanks, ASingleTraceKeepsItsReport) {
  // No rank prefix, overlap as before, and a comm span is not a trace_range.
  const std::string t = rank_trace(0, 1000000, "send", 30.0, 20.0);
  sluice::tool::stream_tracks tracks;
  std::vector<sluice::tool::traced_range> ranges;
  const auto ops = read_trace(t, &tracks, nullptr, &ranges);
  ASSERT_EQ(ranges.size(), 1U);
  EXPECT_TRUE(ranges[0].comm);
  EXPECT_EQ(ranges[0].bytes, 100U);
  const auto a = analyze(ops, tracks, ranges);
  EXPECT_TRUE(a.ranges.empty());
  ASSERT_EQ(a.comm.size(), 1U);
  EXPECT_EQ(a.comm[0].stream_label, "d0/s1 halo");
  const std::string report = format_report(a, "t.json");
  EXPECT_NE(report.find("\noverlap (in flight: "), std::string::npos) << report;
  EXPECT_NE(report.find("in all: communication in flight 20.0 us"), std::string::npos) << report;
}

}  // namespace
