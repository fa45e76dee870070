// In flight and executing: the overlap of `sluice trace report` from traces
// timed by events and by CUPTI, and where an operation is in flight from.
#include "trace/analyzer.hpp"
#include "trace/rank_alignment.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using sluice::tool::format_report;
using sluice::tool::trace_analysis;

//! The analysis of a trace read as `sluice trace report` reads it (its
//! trace_source included), and its report.
struct read_back {
  sluice::tool::trace_analyzer analyzer{false};
  const trace_analysis* a = nullptr;
  std::string report;
  explicit read_back(const std::string& json) {
    sluice::tool::read_trace_string(json, analyzer);
    a = &analyzer.finish();
    report = format_report(*a, "t.json");
  }
};

std::string host_track(const char* source) {
  return std::string(
             R"json({"ph": "M", "name": "process_name", "pid": 1000000, "args": {"name": "host threads (enqueue)", "trace_source": ")json") +
         source + "\"}}";
}

// A trace from timing events, placed as the event tracer places operations:
// each from the later of its enqueue and its stream's previous operation's
// end (a wait to the later of that and what it waited for). Stream 1: fill
// 0-12, copy (enqueued at 1) 12-20, record at 20, idle, copy enqueued at 30,
// 30-35. Stream 2: fill 3-15, wait for stream 1's record 15-20, copy
// (enqueued at 4) 20-26. In flight, computed from the enqueue times and the
// ends, is exactly the busy time (without the enqueue times stream 1's last
// copy would be in flight from 20; without the ends stream 2's copy from 4).
const std::string events_trace = R"json({"traceEvents": [
)json" + host_track("events") + R"json(,
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 12, "args": {"seq": 1, "enqueued_us": 0, "host_thread": 1}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 12, "dur": 8, "args": {"seq": 2, "enqueued_us": 1, "host_thread": 1}},
{"name": "record", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 0, "args": {"seq": 3, "enqueued_us": 2, "host_thread": 1}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 30, "dur": 5, "args": {"seq": 4, "enqueued_us": 30, "host_thread": 1}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 3, "dur": 12, "args": {"seq": 1, "enqueued_us": 3, "host_thread": 1}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 15, "dur": 5, "args": {"seq": 2, "enqueued_us": 3.5, "host_thread": 1, "waits_for_stream": 1, "waits_for_seq": 3}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 20, "dur": 6, "args": {"seq": 3, "enqueued_us": 4, "host_thread": 1}}
]})json";

TEST(TraceReportInFlight, AnEventsTracesInFlightTimeIsItsBusyTime) {
  const read_back r(events_trace);
  const trace_analysis& a = *r.a;
  ASSERT_EQ(a.streams.size(), 2U);
  EXPECT_EQ(a.trace_sources.at(-1), "events");
  // Stream 1: [0, 20) and [30, 35); stream 2: [3, 15) and [20, 26).
  EXPECT_DOUBLE_EQ(a.streams[0].busy_us, 25.0);
  EXPECT_DOUBLE_EQ(a.streams[1].busy_us, 18.0);
  for (const auto& s : a.streams) EXPECT_DOUBLE_EQ(s.in_flight_us, s.busy_us);
  ASSERT_EQ(a.overlaps.size(), 1U);
  // [3, 15) within [0, 20): 12 us, 12 / 18 of the shorter.
  EXPECT_DOUBLE_EQ(a.overlaps[0].overlap_us, 12.0);
  EXPECT_DOUBLE_EQ(a.overlaps[0].busy_overlap_us, 12.0);
  EXPECT_DOUBLE_EQ(a.overlaps[0].percent_of_shorter, 100.0 * 12.0 / 18.0);
  EXPECT_NE(r.report.find("\ntiming: timing events (trace_source events): "), std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find(", in flight 25.0 us, "), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("\noverlap (in flight: both streams had an operation in flight at once, "
                          "% of the shorter stream's in-flight time; executing: not measured "
                          "(timing events cannot tell it from queued)):\n"
                          "  d0/s1 x d0/s2: 12.0 us (66.7%)\n"),
            std::string::npos)
      << r.report;
}

// CUPTI: three workers' copies, each enqueued after a wait for the producer's
// record (stream 1: fill 0-20, record at 20), all enqueued before 8 us, ran
// one after another on one copy engine: 20-30 (stream 2), 30-40 (stream 3),
// 40-50 (stream 4). In flight from 20 (the record's end: the waits end there)
// to their ends; executing never at once. `source`: the trace_source (null:
// none, as in a trace written before it).
std::string cupti_trace(const char* source) {
  return std::string(R"json({"traceEvents": [
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 20, "args": {"seq": 1, "enqueued_us": 0, "host_thread": 1}},
{"name": "record", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 0, "args": {"seq": 2, "enqueued_us": 1, "host_thread": 1}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 2, "dur": 18, "args": {"seq": 1, "enqueued_us": 2, "host_thread": 1, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 20, "dur": 10, "args": {"seq": 2, "enqueued_us": 3, "host_thread": 1, "bytes": 1024}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 0, "tid": 3, "ts": 4, "dur": 16, "args": {"seq": 1, "enqueued_us": 4, "host_thread": 1, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 3, "ts": 30, "dur": 10, "args": {"seq": 2, "enqueued_us": 5, "host_thread": 1, "bytes": 1024}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 0, "tid": 4, "ts": 6, "dur": 14, "args": {"seq": 1, "enqueued_us": 6, "host_thread": 1, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 4, "ts": 40, "dur": 10, "args": {"seq": 2, "enqueued_us": 7, "host_thread": 1, "bytes": 1024}})json") +
         (source != nullptr ? ",\n" + host_track(source) : std::string()) + "\n]}";
}

TEST(TraceReportInFlight, CopiesQueuedForOneEngineAreInFlightTogetherButNotExecuting) {
  const read_back r(cupti_trace("cupti"));
  const trace_analysis& a = *r.a;
  ASSERT_EQ(a.streams.size(), 4U);
  EXPECT_EQ(a.trace_sources.at(-1), "cupti");
  const double busy[] = {20, 10, 10, 10}, in_flight[] = {20, 10, 20, 30};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(a.streams[i].busy_us, busy[i]) << i;
    EXPECT_DOUBLE_EQ(a.streams[i].in_flight_us, in_flight[i]) << i;
  }
  // Pairs of the workers (streams 2-4: indices 1-3): in flight [20, 30),
  // [20, 40), [20, 50): each pair all of the shorter; executing: none. The
  // producer [0, 20) touches none of them.
  ASSERT_EQ(a.overlaps.size(), 6U);
  for (const auto& p : a.overlaps) {
    const bool workers = p.a > 0;
    EXPECT_DOUBLE_EQ(p.overlap_us, !workers ? 0.0 : p.a == 1 ? 10.0 : 20.0) << p.a << p.b;
    EXPECT_DOUBLE_EQ(p.percent_of_shorter, workers ? 100.0 : 0.0) << p.a << p.b;
    EXPECT_DOUBLE_EQ(p.busy_overlap_us, 0.0) << p.a << p.b;
    EXPECT_DOUBLE_EQ(p.busy_percent, 0.0) << p.a << p.b;
  }
  EXPECT_NE(r.report.find("\ntiming: CUPTI activity records (trace_source cupti): "),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("\n  d0/s4: 2 operations, busy 10.0 us of 44.0 us (23%), in flight "
                          "30.0 us, "),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("\noverlap (in flight: both streams had an operation in flight at once, "
                          "% of the shorter stream's in-flight time; executing: both busy at "
                          "once, % of the shorter stream's busy time):\n"
                          "  d0/s3 x d0/s4: 20.0 us (100.0%), executing 0.0 us (0.0%)\n"
                          "  d0/s2 x d0/s3: 10.0 us (100.0%), executing 0.0 us (0.0%)\n"
                          "  d0/s2 x d0/s4: 10.0 us (100.0%), executing 0.0 us (0.0%)\n"),
            std::string::npos)
      << r.report;
  // The same trace read without its source: the overlap is in flight all the
  // same, and nothing is called executing.
  const read_back u(cupti_trace(nullptr));
  ASSERT_EQ(u.a->overlaps.size(), 6U);
  EXPECT_TRUE(u.a->trace_sources.empty());
  EXPECT_DOUBLE_EQ(u.a->streams[3].in_flight_us, 30.0);
  EXPECT_NE(u.report.find("\ntiming: not named in the trace (no trace_source)"), std::string::npos)
      << u.report;
  EXPECT_EQ(u.report.find("executing"), std::string::npos) << u.report;
}

// Where in flight starts: at the enqueue where the operation started later; a
// wait's source holds back its stream's next operation even where the wait's
// own span ends earlier; an operation run by a host thread (a host function, a
// copy with path "host") counts from its own start, as does one with no
// enqueue time (the user's own work); starts out of order are merged in memory.
TEST(TraceReportInFlight, WhereAnOperationIsInFlightFrom) {
  const read_back r(R"json({"traceEvents": [
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 3, "dur": 37, "args": {"seq": 1, "enqueued_us": 0}},
{"name": "record", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 40, "dur": 0, "args": {"seq": 2, "enqueued_us": 1}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 2, "dur": 0, "args": {"seq": 1, "enqueued_us": 2, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 45, "dur": 5, "args": {"seq": 2, "enqueued_us": 3}},
{"name": "host_func", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 60, "dur": 1, "args": {"seq": 3, "enqueued_us": 4}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 70, "dur": 2, "args": {"seq": 4, "enqueued_us": 5, "path": "host"}},
{"name": "kernel (user)", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 80, "dur": 4, "args": {"seq": 5, "through_sluice": false}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 3, "ts": 20, "dur": 10, "args": {"seq": 1, "enqueued_us": 20}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 3, "ts": 5, "dur": 5, "args": {"seq": 2, "enqueued_us": 1}}
]})json");
  const trace_analysis& a = *r.a;
  ASSERT_EQ(a.streams.size(), 3U);
  // Stream 1: the fill started 3 us after its enqueue: in flight from 0.
  EXPECT_DOUBLE_EQ(a.streams[0].busy_us, 37.0);
  EXPECT_DOUBLE_EQ(a.streams[0].in_flight_us, 40.0);
  // Stream 2: copy [40, 50) (from the record's end, not the wait's 2), host
  // function [60, 61), host copy [70, 72), the user's kernel [80, 84).
  EXPECT_DOUBLE_EQ(a.streams[1].busy_us, 12.0);
  EXPECT_DOUBLE_EQ(a.streams[1].in_flight_us, 17.0);
  // Stream 3: [20, 30), then [min(5, max(1, 30)), 10) = [5, 10).
  EXPECT_DOUBLE_EQ(a.streams[2].in_flight_us, 15.0);
  EXPECT_DOUBLE_EQ(a.streams[2].busy_us, 15.0);
}

// Several ranks' files: each rank's timing line where they differ, and the
// executing figure only for the rank whose trace times execution.
TEST(TraceReportInFlight, EachRankKeepsItsOwnSource) {
  const std::string base = "/tmp/sluice-trace-sources-test-" + std::to_string(::getpid());
  const std::string f0 = base + ".rank0.json", f1 = base + ".rank1.json";
  std::ofstream(f0) << events_trace;
  std::ofstream(f1) << cupti_trace("cupti");
  sluice::tool::trace_analyzer z(false);
  sluice::tool::read_rank_files({f0, f1}, z, nullptr);
  const std::string report = format_report(z.finish(), "2 files");
  std::remove(f0.c_str());
  std::remove(f1.c_str());
  EXPECT_NE(report.find("\ntiming on rank 0: timing events (trace_source events)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("\ntiming on rank 1: CUPTI activity records (trace_source cupti)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("\n    r0/d0/s1 x r0/d0/s2: 12.0 us (66.7%)\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("\n    r1/d0/s3 x r1/d0/s4: 20.0 us (100.0%), executing 0.0 us (0.0%)\n"),
            std::string::npos)
      << report;
}

}  // namespace
