#include "trace/intervals.hpp"

#include <algorithm>

namespace sluice::tool {

intervals merged(intervals v) {
  std::sort(v.begin(), v.end());
  intervals out;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

double intersection(const spill_file& f, const record_log<interval>& a,
                    const record_log<interval>& b) {
  log_reader<interval> ra(f, a), rb(f, b);
  interval x, y;
  bool hx = ra.next(x), hy = rb.next(y);
  double n = 0;
  while (hx && hy) {
    const double lo = std::max(x.first, y.first);
    const double hi = std::min(x.second, y.second);
    if (hi > lo) n += hi - lo;
    if (x.second < y.second)
      hx = ra.next(x);
    else
      hy = rb.next(y);
  }
  return n;
}

}  // namespace sluice::tool
