// `sluice conformance matrix A.json B.json ... [--markdown OUT.md]`: the
// command around the verdict-file reader and table (conformance/matrix.hpp),
// which the fuzz target compiles without it.
#pragma once

#include <string>
#include <vector>

namespace sluice::tool {

//! The command: args are those after "matrix". Exit 0 when printed, 1 when a
//! file is unreadable or malformed (the message names it); usage_error otherwise.
int matrix_command(const std::vector<std::string>& args);

}  // namespace sluice::tool
