#include "priority.hpp"

#include <algorithm>

namespace sluice::detail {

namespace {
int clamp_to(int v, priority_range r) noexcept { return std::clamp(v, r.greatest, r.least); }
}  // namespace

int effective_native_priority(const stream_options& o, priority_range r,
                              int default_value) noexcept {
  if (o.native_priority) return clamp_to(*o.native_priority, r);
  switch (o.priority) {
    case priority::high: return r.greatest;
    case priority::low: return r.least;
    case priority::normal: break;
  }
  return clamp_to(default_value, r);
}

priority level_of(int native, priority_range r, int default_value) noexcept {
  const int d = clamp_to(default_value, r);
  if (native < d) return priority::high;
  if (native > d) return priority::low;
  return priority::normal;
}

}  // namespace sluice::detail
