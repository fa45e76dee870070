// Everything the trace reader, analysis and report of trace/ declare, under
// the name tests/unit/trace_test.cpp includes (with tools/ on its include
// path); code in tools/ includes the trace/ headers it uses.
#pragma once

#include "trace/analysis.hpp"
#include "trace/analyzer.hpp"
#include "trace/events.hpp"
#include "trace/rank_alignment.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"
#include "trace/stream_ids.hpp"
