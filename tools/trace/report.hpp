// The text report of `sluice trace report`: the analysis (analysis.hpp) in
// words, as the command prints it.
#pragma once

#include "trace/analysis.hpp"

#include <string>

namespace sluice::tool {

//! How a trace's operations were timed: the host track's `trace_source`.
enum class span_timing {
  unnamed,    // no trace_source (traces before it), or one this report does not know
  events,     // "events": timing events, from when the stream reached it to its completion
  executing,  // "cupti" (CUPTI activity records), "host" (the host backend's workers): its run
};
span_timing timing_of(const std::string& source_name);

std::string format_report(const trace_analysis& a, const std::string& file);

}  // namespace sluice::tool
