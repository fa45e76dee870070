// `sluice trace report <file>...`: the command around the trace reader and
// report (trace/), which the tests and the fuzz target compile without it.
#pragma once

#include <string>
#include <vector>

namespace sluice::tool {

//! `sluice trace report <file>... [--png <out.png>]` with `args` the arguments
//! after "trace": prints the report; returns the exit code (1: unreadable or
//! malformed file, gnuplot failed). Throws usage_error (commands.hpp) on a
//! usage error. --help is the dispatcher's (commands.hpp).
int trace_command(const std::vector<std::string>& args);

}  // namespace sluice::tool
