// The sources of trace/sources.cmake as one translation unit, for a build
// that names this one file: tests/unit compiles it into the trace tests
// (SLUICE_TRACE_REPORT_SOURCE in tests/unit/CMakeLists.txt). The tools and
// the fuzz target compile the trace/ files one by one.
#include "trace/analyzer.cpp"
#include "trace/framing_scanner.cpp"
#include "trace/in_flight.cpp"
#include "trace/intervals.cpp"
#include "trace/rank_alignment.cpp"
#include "trace/reader.cpp"
#include "trace/report.cpp"
#include "trace/spill_file.cpp"
#include "trace/stream_ids.cpp"
#include "trace/timeline.cpp"
