// sluice::comm's enqueue: an operation's batch put on its streams, then
// handed to the engine thread (docs/comm.md "How it works"). Internal.
#pragma once

#include "comm/impl/batch.hpp"

namespace sluice::comm::detail {

//! Puts b on its streams (copies into staging, the arrival, the wait for the
//! batch, copies out), then submits it to the engine thread, which frees it
//! when done. Nothing was enqueued when this throws before any stream has it.
void enqueue(batch_ptr b);

}  // namespace sluice::comm::detail
