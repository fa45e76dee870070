// Interval arithmetic of `sluice trace report`: unions of busy (or in-flight)
// intervals and their intersections.
#pragma once

#include "trace/spill_file.hpp"

#include <utility>
#include <vector>

namespace sluice::tool {

using interval = std::pair<double, double>;
using intervals = std::vector<interval>;

//! The union of `v`, as disjoint intervals in order (empty ones dropped).
intervals merged(intervals v);

//! The length of the intersection of two streams' busy intervals (each
//! merged, in order), read from the file.
double intersection(const spill_file& f, const record_log<interval>& a,
                    const record_log<interval>& b);

}  // namespace sluice::tool
