// `sluice trace report`'s analysis (trace_analyzer): busy, idle, overlap,
// waits and the critical path of small made-up traces whose answers are
// known by hand, and of long ones streamed through the analyzer's file.
#include "trace/analyzer.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"
#include "trace_test_traces.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace {

using sluice::tool::analyze;
using sluice::tool::format_report;
using sluice::tool::read_trace;
using trace_test::as_json;
using trace_test::made_trace;
using trace_test::make_trace;

// Stream 1 (device 0): copy 0-10 us, record 10-11, fill 30-40.
// Stream 2 (device 1): wait for stream 1 seq 2 from 5 to 11, fill 11-31.
// Host-thread names use tid 1 as well: they must not name stream 1.
const char* const trace = R"json({"displayTimeUnit": "ns", "traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "stream 1 (native priority 0)"}},
{"ph": "M", "name": "thread_name", "pid": 1000000, "tid": 1, "args": {"name": "host thread 1"}},
{"name": "copy", "cat": "enqueue", "ph": "i", "s": "t", "pid": 1000000, "tid": 1, "ts": 0.0},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0.0, "dur": 10.0, "args": {"seq": 1, "bytes": 64}},
{"name": "record", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 10.0, "dur": 1.0, "args": {"seq": 2}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 30.0, "dur": 10.0, "args": {"seq": 3}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 1, "tid": 2, "ts": 5.0, "dur": 6.0, "args": {"seq": 1, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 1, "tid": 2, "ts": 11.0, "dur": 20.0, "args": {"seq": 2}},
{"name": "forward \"x\"", "cat": "range", "ph": "X", "pid": 1, "tid": 2, "ts": 11.0, "dur": 20.0}
]})json";

TEST(TraceReport, BusyIdleOverlapWaitsAndCriticalPath) {
  sluice::tool::stream_tracks tracks;
  const auto ops = read_trace(trace, &tracks);
  ASSERT_EQ(ops.size(), 5U);  // the "op" events only
  const auto a = analyze(ops, tracks);
  ASSERT_EQ(a.streams.size(), 2U);
  const auto& s1 = a.streams[0];
  const auto& s2 = a.streams[1];
  // A trace written before streams had names: the track's name describes it.
  EXPECT_EQ(s1.name, "");
  EXPECT_EQ(s1.about, "stream 1 (native priority 0)");
  EXPECT_EQ(s1.operations, 3U);
  EXPECT_DOUBLE_EQ(s1.busy_us, 21.0);
  EXPECT_DOUBLE_EQ(s1.span_us, 40.0);
  EXPECT_DOUBLE_EQ(s1.idle_us, 19.0);
  EXPECT_DOUBLE_EQ(s1.largest_gap_us, 19.0);
  EXPECT_EQ(s2.waits, 1U);
  EXPECT_DOUBLE_EQ(s2.waiting_us, 6.0);
  EXPECT_DOUBLE_EQ(s2.busy_us, 20.0);
  ASSERT_EQ(a.overlaps.size(), 1U);
  // Busy s1: [0,11) and [30,40); s2: [11,31): they overlap in [30,31).
  EXPECT_DOUBLE_EQ(a.overlaps[0].overlap_us, 1.0);
  EXPECT_DOUBLE_EQ(a.overlaps[0].percent_of_shorter, 100.0 * 1.0 / 20.0);
  // Last end: s1's fill at 40 -> record (previous on s1) -> copy: 3 operations, 40 us.
  EXPECT_EQ(a.path.operations, 3U);
  EXPECT_DOUBLE_EQ(a.path.length_us, 40.0);
  EXPECT_DOUBLE_EQ(a.span_us, 40.0);
}

TEST(TraceReport, TheCriticalPathFollowsAWaitToItsSource) {
  // Stream 2's fill ends last; it waited (ended at 11) for stream 1's record (ended at 11).
  const std::string last_on_2 = R"json({"traceEvents": [
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"seq": 1}},
{"name": "record", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 10, "dur": 1, "args": {"seq": 2}},
{"name": "wait", "cat": "op", "ph": "X", "pid": 1, "tid": 2, "ts": 1, "dur": 10, "args": {"seq": 2, "waits_for_stream": 1, "waits_for_seq": 2}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 1, "tid": 2, "ts": 0, "dur": 1, "args": {"seq": 1}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 1, "tid": 2, "ts": 11, "dur": 20, "args": {"seq": 3}}
]})json";
  const auto a = analyze(read_trace(last_on_2, nullptr), {});
  // fill(s2) <- wait(s2) <- record(s1) <- copy(s1): 4 operations from 0 to 31.
  EXPECT_EQ(a.path.operations, 4U);
  EXPECT_DOUBLE_EQ(a.path.length_us, 31.0);
  ASSERT_EQ(a.path.per_stream.size(), 2U);
}

std::string report_of(const std::string& json) {
  sluice::tool::trace_analyzer analyzer;
  sluice::tool::read_trace_string(json, analyzer, 777);
  return format_report(analyzer.finish(), "t.json");
}

// The analysis streams the operations through a file in blocks, sorting only
// a stream whose operations come out of seq order: events in any order give
// the same report, and the busy time is each stream's operations' own.
TEST(TraceReport, EventsInAnyOrderGiveTheSameReport) {
  const made_trace t = make_trace();
  const std::string in_order = report_of(as_json(t.events));
  std::vector<std::string> shuffled = t.events;
  // Each stream's first operation keeps its place (the report lists streams
  // in the order they first appear); the rest in a random order.
  std::shuffle(shuffled.begin() + 1, shuffled.end(), std::mt19937(11));
  for (const char* first :
       {"\"tid\": 1, \"ts\": 0,", "\"tid\": 2, \"ts\": 0,", "\"tid\": 3, \"ts\": 0,"})
    for (auto& e : shuffled)
      if (e.find(first) != std::string::npos && e.find("\"seq\": 1}") != std::string::npos) {
        std::swap(e, shuffled[static_cast<std::size_t>(first[7] - '1')]);
        break;
      }
  EXPECT_EQ(report_of(as_json(shuffled)), in_order);
  sluice::tool::stream_tracks tracks;
  std::vector<sluice::tool::traced_range> ranges;
  const auto ops = read_trace(as_json(t.events), &tracks, nullptr, &ranges);
  ASSERT_EQ(ops.size(), 9000U);
  const auto a = analyze(ops, tracks, ranges);
  ASSERT_EQ(a.streams.size(), 3U);
  for (std::size_t s = 0; s < 3; ++s) EXPECT_DOUBLE_EQ(a.streams[s].busy_us, t.busy[s]);
  EXPECT_EQ(a.streams[1].waits, 60U);
  ASSERT_EQ(a.ranges.size(), 3U);
  EXPECT_EQ(a.ranges[0].count, 30U);
}

// Operations whose starts are out of seq order still merge into the right
// busy intervals: [10,20), [0,5), [4,8) are busy [0,8) and [10,20).
TEST(TraceReport, BusyTimeOfOperationsStartedOutOfOrder) {
  const auto a = analyze(read_trace(R"json([
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 10, "dur": 10, "args": {"seq": 1}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 5, "args": {"seq": 2}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 4, "dur": 4, "args": {"seq": 3}}
])json",
                                    nullptr),
                         {});
  ASSERT_EQ(a.streams.size(), 1U);
  EXPECT_DOUBLE_EQ(a.streams[0].busy_us, 18.0);
  EXPECT_DOUBLE_EQ(a.streams[0].largest_gap_us, 2.0);
  EXPECT_DOUBLE_EQ(a.streams[0].span_us, 20.0);
}

}  // namespace
