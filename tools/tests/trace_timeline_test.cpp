// `sluice trace report --png`: the gnuplot script and data of the timeline
// (gnuplot itself need not be installed).
#include "trace/analyzer.hpp"
#include "trace/reader.hpp"
#include "trace_test_traces.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::read_trace;
using trace_test::as_json;
using trace_test::made_trace;
using trace_test::make_trace;
using trace_test::named_trace;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
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

// Above every_op_up_to operations the timeline draws each stream's row in
// time buckets: at most 1400 boxes a stream, none wider than a bucket.
TEST(TraceReport, ManyOperationsAreDrawnInTimeBuckets) {
  const made_trace t = make_trace();
  sluice::tool::trace_analyzer analyzer;
  const std::string json = as_json(t.events);
  sluice::tool::read_trace_string(json, analyzer);
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
