// Portable priority levels <-> vendor values (PRIO-2, PRIO-3). Internal.
// Vendors number priorities so that `greatest` <= `least` numerically.
#pragma once

#include <sluice/stream.hpp>

#include <optional>

namespace sluice::detail {

//! The vendor value a stream gets: the clamped native value when given (PRIO-3),
//! else high -> greatest, normal -> default_value (clamped), low -> least (PRIO-2).
int effective_native_priority(const stream_options& o, priority_range r,
                              int default_value) noexcept;

//! The portable level of an effective vendor value: default -> normal, higher
//! priority than default -> high, lower -> low.
priority level_of(int native, priority_range r, int default_value) noexcept;

}  // namespace sluice::detail
