// `sluice trace report`: the analysis of a small made-up trace whose answers
// are known by hand.
#include "trace_report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

TEST(TraceReport, MalformedInputIsRejectedWithAPosition) {
  try {
    (void)read_trace(R"json({"traceEvents": [{"ph": "X", )json", nullptr);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("byte "), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_trace(R"json({"events": []})json", nullptr), std::runtime_error);
}

}  // namespace

namespace {

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

}  // namespace

namespace {

// A trace with stream names (written since stream_options::name) and
// trace_ranges. Stream 1 (device 0) "upload": copy 0-10, copy 20-30, each in
// a range "chunk" (0-10, 20-31), both in "all" (0-40). Stream 2 (device 0),
// unnamed: fill 5-25. Stream 3 (device 1) "it's": a range only, 50-60.
const char* const named_trace = R"json({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "d0/s1 upload (native priority -1)", "stream_name": "upload", "native_priority": -1}},
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 2, "args": {"name": "d0/s2 (native priority 0)", "native_priority": 0}},
{"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "d1/s3 it's (native priority 0)", "stream_name": "it's", "native_priority": 0}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"seq": 2}},
{"name": "chunk", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 10, "args": {"seq": 5}},
{"name": "chunk", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 11},
{"name": "all", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 40},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 5, "dur": 20, "args": {"seq": 1}},
{"name": "mine", "cat": "range", "ph": "X", "pid": 1, "tid": 3, "ts": 50, "dur": 10}
]})json";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
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

// The timeline names the streams on its rows, draws each stream's ranges on
// rows of their own (one per nesting level) and names a range where its bar
// is wide enough; quotes are doubled for gnuplot.
TEST(TraceReport, TheTimelineShowsStreamNamesAndRanges) {
  sluice::tool::stream_tracks tracks;
  std::vector<sluice::tool::traced_range> ranges;
  const auto ops = read_trace(named_trace, &tracks, nullptr, &ranges);
  sluice::tool::trace_analyzer analyzer;
  for (const auto& t : tracks) analyzer.track(t.first.first, t.first.second, t.second);
  for (const auto& o : ops) analyzer.op(o);
  for (const auto& r : ranges) analyzer.range(r);
  const std::string png = "/tmp/sluice-trace-report-test-" + std::to_string(::getpid()) + ".png";
  try {
    analyzer.write_timeline_png(png);
  } catch (const std::runtime_error& e) {
    // Without gnuplot the script is still written; anything else is a failure.
    if (std::string(e.what()).find("gnuplot not found") == std::string::npos)
      ADD_FAILURE() << e.what();
  }
  const std::string script = read_text(png + ".gnuplot");
  const std::string data = read_text(png + ".dat");
  for (const char* f : {"", ".gnuplot", ".dat"}) std::remove((png + f).c_str());
  // Rows from the bottom: d0/s1 upload, its two range levels, d0/s2, d1/s3's ranges.
  EXPECT_NE(script.find("set ytics ('d0/s1 upload' 0, 'd0/s1 upload ranges' 1, 'd0/s1 upload "
                        "ranges 2' 2, 'd0/s2' 3, 'd1/s3 it''s ranges' 4)"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("set label 'all' at 0, 1 "), std::string::npos) << script;
  EXPECT_NE(script.find("set label 'chunk' at 20, 2 "), std::string::npos) << script;
  EXPECT_NE(script.find("set label 'mine' at 50, 4 "), std::string::npos) << script;
  EXPECT_NE(script.find("index 1 using"), std::string::npos) << script;
  EXPECT_NE(script.find("title 'trace_range'"), std::string::npos) << script;
  EXPECT_NE(data.find("# trace_range (index 1): row start_us end_us name\n"), std::string::npos)
      << data;
  EXPECT_NE(data.find("\n4 50 60 mine\n"), std::string::npos) << data;
}

}  // namespace

namespace {

// A trace of three streams of 3000 operations each (past the analyzer's
// blocks of 1024), times in whole microseconds (sums exact in any order);
// streams 2 and 3 wait, every 50th operation, for the stream before.
struct made_trace {
  std::vector<std::string> events;  // "op" events and ranges, in seq order per stream
  double busy[3] = {0, 0, 0};       // each stream's operations do not overlap
};

made_trace make_trace() {
  made_trace t;
  std::mt19937 random(7);
  for (int s = 1; s <= 3; ++s) {
    long time = 0;
    for (int seq = 1; seq <= 3000; ++seq) {
      const long dur = 1 + static_cast<long>(random() % 20);
      const bool wait = s > 1 && seq % 50 == 0;
      std::string args = "{\"seq\": " + std::to_string(seq);
      if (wait)
        args += ", \"waits_for_stream\": " + std::to_string(s - 1) +
                ", \"waits_for_seq\": " + std::to_string(seq - 1);
      args += "}";
      t.events.push_back(std::string("{\"name\": \"") + (wait ? "wait" : "copy") +
                         "\", \"cat\": \"op\", \"ph\": \"X\", \"pid\": 0, \"tid\": " +
                         std::to_string(s) + ", \"ts\": " + std::to_string(time) +
                         ", \"dur\": " + std::to_string(dur) + ", \"args\": " + args + "}");
      if (!wait) t.busy[s - 1] += static_cast<double>(dur);
      if (seq % 100 == 0)
        t.events.push_back(
            "{\"name\": \"r\", \"cat\": \"range\", \"ph\": \"X\", \"pid\": 0, "
            "\"tid\": " +
            std::to_string(s) + ", \"ts\": " + std::to_string(time) +
            ", \"dur\": " + std::to_string(dur) + "}");
      time += dur + static_cast<long>(random() % 3);
    }
  }
  return t;
}

std::string as_json(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n" : "") + events[i];
  return json + "\n]}\n";
}

std::string report_of(const std::string& json) {
  sluice::tool::trace_analyzer analyzer;
  std::size_t at = 0;
  sluice::tool::read_trace_events(
      [&](char* into, std::size_t size) {
        const std::size_t n = std::min<std::size_t>({size, json.size() - at, 777});
        std::copy_n(json.data() + at, n, into);
        at += n;
        return n;
      },
      analyzer);
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

// Above every_op_up_to operations the timeline draws each stream's row in
// time buckets: at most 1400 boxes a stream, none wider than a bucket.
TEST(TraceReport, ManyOperationsAreDrawnInTimeBuckets) {
  const made_trace t = make_trace();
  sluice::tool::trace_analyzer analyzer;
  const std::string json = as_json(t.events);
  std::size_t at = 0;
  sluice::tool::read_trace_events(
      [&](char* into, std::size_t size) {
        const std::size_t n = std::min(size, json.size() - at);
        std::copy_n(json.data() + at, n, into);
        at += n;
        return n;
      },
      analyzer);
  const auto& a = analyzer.finish();
  const std::string png = "/tmp/sluice-trace-buckets-test-" + std::to_string(::getpid()) + ".png";
  try {
    analyzer.write_timeline_png(png, 1000);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("gnuplot not found") == std::string::npos)
      ADD_FAILURE() << e.what();
  }
  const std::string script = read_text(png + ".gnuplot");
  std::istringstream data(read_text(png + ".dat"));
  for (const char* f : {"", ".gnuplot", ".dat"}) std::remove((png + f).c_str());
  EXPECT_NE(script.find("9000 operations on 3 streams (each row in 1400 time buckets"),
            std::string::npos)
      << script;
  const double width = a.span_us / 1400;
  std::map<int, int> boxes;  // per row
  std::string line;
  while (std::getline(data, line) && !line.empty()) {
    if (line[0] == '#') continue;
    std::istringstream fields(line);
    int row = 0;
    double start = 0, end = 0;
    fields >> row >> start >> end;
    ++boxes[row];
    // The data file has 6 significant digits.
    EXPECT_LE(end - start, width + 2e-5 * end) << line;
  }
  ASSERT_EQ(boxes.size(), 3U);
  for (const auto& b : boxes) {
    EXPECT_LE(b.second, 1400) << "row " << b.first;
    EXPECT_GT(b.second, 1000) << "row " << b.first;  // the streams are busy nearly throughout
  }
}

}  // namespace

namespace {
// --- several ranks' traces (sluice trace report a b) ---------------------------------

using sluice::tool::align_ranks;
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

namespace {
// --- in flight and executing (the events and CUPTI sources) -------------------------

using sluice::tool::trace_analysis;

//! The analysis of a trace read as `sluice trace report` reads it (its
//! trace_source included), and its report.
struct read_back {
  sluice::tool::trace_analyzer analyzer{false};
  const trace_analysis* a = nullptr;
  std::string report;
  explicit read_back(const std::string& json) {
    std::size_t at = 0;
    sluice::tool::read_trace_events(
        [&](char* into, std::size_t size) {
          const std::size_t n = std::min(size, json.size() - at);
          std::copy_n(json.data() + at, n, into);
          at += n;
          return n;
        },
        analyzer);
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
