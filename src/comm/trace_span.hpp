// sluice::comm's spans in a trace (docs/comm.md "Tracing"). Internal.
#pragma once

#include "comm/impl/batch.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::comm::detail {

// While a trace is collected, each stream's part of a batch is one span on
// its track (docs/comm.md "Tracing"): from its arrival to its done flag,
// named after the operation ("group" for a group), with the engine, the
// peer(s), the bytes, the communicator's rank and size and the match number.
struct span {
  std::uint64_t id = 0;  // 0: no trace
  std::string name;
};

//! Opens the span of b's stream `index` (its arguments noted in the trace;
//! enqueue.cpp puts its two markers on the stream).
span open_span(const batch& b, std::size_t index);

}  // namespace sluice::comm::detail
