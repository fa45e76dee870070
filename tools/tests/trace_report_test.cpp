// `sluice trace report`'s text report: kernels, the devices' clock errors,
// stream names and trace_ranges as the report states them.
#include "trace/analyzer.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"
#include "trace_test_traces.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::analyze;
using sluice::tool::format_report;
using sluice::tool::read_trace;
using trace_test::named_trace;

// Kernels of sluice::kokkos (args "kind": "kernel") are listed per stream and
// name, with their count and time; other operations are not.
TEST(TraceReport, ListsKernelsPerStreamAndName) {
  const std::string json = R"json({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "stream 1 kk (native priority 0)", "stream_name": "kk", "native_priority": 0}},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"seq": 1}},
{"name": "heat_step", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 10, "dur": 5, "args": {"seq": 2, "kind": "kernel"}},
{"name": "heat_step", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 15, "dur": 7, "args": {"seq": 3, "kind": "kernel"}},
{"name": "norm", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 22, "dur": 1, "args": {"seq": 4, "kind": "kernel"}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 0, "dur": 3, "args": {"seq": 1, "kind": "copy"}}
]})json";
  sluice::tool::stream_tracks tracks;
  const auto ops = read_trace(json, &tracks);
  const std::string report = format_report(analyze(ops, tracks), "t.json");
  EXPECT_NE(report.find("kernels (launched through sluice::kokkos::submit; per stream and name):\n"
                        "  d0/s1 kk: \"heat_step\" 2 kernels, 12.0 us\n"
                        "  d0/s1 kk: \"norm\" 1 kernel, 1.0 us\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("\"fill\""), std::string::npos) << report;
  EXPECT_EQ(report.find("\"copy\""), std::string::npos) << report;
  EXPECT_THROW((void)read_trace(R"json({"traceEvents": [
{"name": "k", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 1, "args": {"kind": 3}}
]})json",
                                nullptr),
               std::runtime_error);
}

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

TEST(TraceReport, NamesStreamsAndListsRangesPerStreamAndName) {
  sluice::tool::stream_tracks tracks;
  std::vector<sluice::tool::traced_range> ranges;
  const auto ops = read_trace(named_trace, &tracks, nullptr, &ranges);
  ASSERT_EQ(ops.size(), 3U);
  ASSERT_EQ(ranges.size(), 4U);
  const auto a = analyze(ops, tracks, ranges);
  ASSERT_EQ(a.streams.size(), 2U);
  EXPECT_EQ(a.streams[0].name, "upload");
  EXPECT_EQ(a.streams[1].name, "");
  const std::string report = format_report(a, "t.json");
  EXPECT_NE(report.find("\n  d0/s1 upload (native priority -1): 2 operations, busy 20.0 us of "
                        "30.0 us"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("\n  d0/s2 (native priority 0): 1 operations"), std::string::npos)
      << report;
  EXPECT_NE(report.find("\n  d0/s1 upload x d0/s2: 10.0 us"), std::string::npos) << report;
  EXPECT_NE(report.find("critical path: 30.0 us, 2 operations: d0/s1 upload 2\n"),
            std::string::npos)
      << report;
  // Per stream in the table's order (a stream with ranges only last), per name
  // by first start.
  EXPECT_NE(report.find("\nranges (trace_range: begin to end marker; per stream and name, in "
                        "the order of their first start):\n"
                        "  d0/s1 upload: \"chunk\" 2 ranges, 21.0 us in all (10.0 us to 11.0 us "
                        "each)\n"
                        "  d0/s1 upload: \"all\" 40.0 us\n"
                        "  d1/s3 it's: \"mine\" 10.0 us\n"),
            std::string::npos)
      << report;
  // Without ranges, no such section.
  EXPECT_EQ(format_report(analyze(ops, tracks), "t.json").find("ranges"), std::string::npos);
  // A name per chunk: the first 40 pairs are listed, and how many there are.
  std::vector<sluice::tool::traced_range> many;
  for (int i = 0; i < 45; ++i)
    many.push_back({0, 2, "chunk " + std::to_string(i), 1.0 * i, 1.0 * i + 0.5, false, "", 0});
  const std::string listed = format_report(analyze(ops, tracks, many), "t.json");
  EXPECT_NE(listed.find("\n  (the first 40 of 45 stream and name pairs)\n"), std::string::npos)
      << listed;
  EXPECT_NE(listed.find("\n  d0/s2: \"chunk 39\" 0.5 us\n"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("\"chunk 40\""), std::string::npos) << listed;
}

}  // namespace

// A graph's launches (operations "graph_launch") and the operations they ran
// (category "graph", on the tracks of the streams they were captured from)
// are counted per stream and kind; the graph's operations stay out of the
// streams' own operations (not positions of those streams).
TEST(TraceReport, CountsGraphLaunchesAndTheirOperationsPerStreamAndKind) {
  const std::string json = R"json({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "d0/s1 s (native priority 0)", "stream_name": "s", "native_priority": 0}},
{"name": "graph_launch", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 30, "args": {"seq": 1, "launch": 1}},
{"name": "copy", "cat": "graph", "ph": "X", "pid": 0, "tid": 1, "ts": 1, "dur": 4, "args": {"launch": 1, "vertex": 1, "kind": "copy", "lane": 5, "bytes": 8}},
{"name": "copy", "cat": "graph", "ph": "X", "pid": 0, "tid": 2, "ts": 2, "dur": 2, "args": {"launch": 1, "vertex": 2, "kind": "copy", "lane": 6}},
{"name": "host_func", "cat": "graph", "ph": "X", "pid": 0, "tid": 1, "ts": 6, "dur": 20, "args": {"launch": 1, "vertex": 3, "kind": "host_func", "lane": 5}},
{"name": "graph_launch", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 30, "dur": 30, "args": {"seq": 2, "launch": 2}},
{"name": "copy", "cat": "graph", "ph": "X", "pid": 0, "tid": 1, "ts": 31, "dur": 6, "args": {"launch": 2, "vertex": 1, "kind": "copy", "lane": 5}}
]})json";
  sluice::tool::trace_analyzer analyzer;
  sluice::tool::read_trace_string(json, analyzer);
  const auto& a = analyzer.finish();
  EXPECT_EQ(a.graph_launches, 2U);
  EXPECT_EQ(a.graph_operations, 4U);
  EXPECT_EQ(a.operations, 2U) << "a graph's operations counted as their streams' own";
  const std::string report = format_report(a, "t.json");
  EXPECT_NE(report.find("graphs: 2 launches, 4 operations run by them (on the tracks of the "
                        "streams they were captured from; per stream and kind):\n"
                        "  d0/s1 s: copy 2, 10.0 us\n"
                        "  d0/s1 s: host_func 1, 20.0 us\n"
                        "  d0/s2: copy 1, 2.0 us\n"),
            std::string::npos)
      << report;
  sluice::tool::trace_analyzer another;
  EXPECT_THROW(sluice::tool::read_trace_string(R"json({"traceEvents": [
{"name": "copy", "cat": "graph", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 1, "args": {"launch": "one"}}
]})json",
                                               another),
               std::runtime_error);
}
