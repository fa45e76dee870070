// `sluice trace report`: the analysis of a small made-up trace whose answers
// are known by hand.
#include "trace_report.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace {

using sluice::tool::analyze;
using sluice::tool::format_report;
using sluice::tool::read_trace;

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
  std::map<std::pair<int, std::uint64_t>, std::string> names;
  const auto ops = read_trace(trace, &names);
  ASSERT_EQ(ops.size(), 5U);  // the "op" events only
  const auto a = analyze(ops, names);
  ASSERT_EQ(a.streams.size(), 2U);
  const auto& s1 = a.streams[0];
  const auto& s2 = a.streams[1];
  EXPECT_EQ(s1.name, "stream 1 (native priority 0)");
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

TEST(TraceReport, MalformedInputIsRejectedWithAPosition) {
  try {
    (void)read_trace(R"json({"traceEvents": [{"ph": "X", )json", nullptr);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_trace(R"json({"events": []})json", nullptr), std::runtime_error);
}

}  // namespace

namespace {

// The devices' clock errors (GPU backends) are read and stated in the report.
TEST(TraceReport, StatesTheDevicesClockErrors) {
  const std::string json = R"json({"traceEvents": [
{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "device 0 (cuda)", "clock_error_us": 8.7}},
{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "device 1 (cuda)", "clock_error_us": 3.1}},
{"ph": "M", "name": "process_name", "pid": 1000000, "args": {"name": "host threads (enqueue)"}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"seq": 1}}
]})json";
  std::map<int, double> errors;
  const auto ops = read_trace(json, nullptr, &errors);
  ASSERT_EQ(ops.size(), 1U);
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_DOUBLE_EQ(errors.at(0), 8.7);
  EXPECT_DOUBLE_EQ(errors.at(1), 3.1);
  auto a = analyze(ops, {});
  EXPECT_EQ(format_report(a, "t.json").find("device clocks"), std::string::npos)
      << "no clock line without clock errors";
  a.clock_error_us = errors;
  const std::string report = format_report(a, "t.json");
  EXPECT_NE(report.find("device clocks (device times on the host clock within +-): device 0 8.7 us "
                        "device 1 3.1 us\n"),
            std::string::npos)
      << report;
}

}  // namespace
