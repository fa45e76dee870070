// The trace clocks of a communicator's ranks, measured against rank 0's when
// any rank traces (docs/comm.md "Tracing"). Internal.
#pragma once

#include "comm/impl/communicator_state.hpp"

namespace sluice::comm::detail {

//! This process's trace clock against that of c's rank 0, noted for the
//! trace. Collective over c (under the MPI guard).
void measure_trace_clock(const communicator_state& c);

}  // namespace sluice::comm::detail
