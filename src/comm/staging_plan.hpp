// What enqueue.cpp decides of a batch before its streams get it: which
// messages go in pieces (mpi engine) and which buffers go through pinned
// staging (impl/staging.hpp). Internal.
#pragma once

#include "comm/impl/batch.hpp"

namespace sluice::comm::detail {

//! Which messages of b go in pieces: message::piece, b.pieces.
void plan_pieces(batch& b);
//! Leases the staging slots of b's buffers that the engine cannot use as
//! they are and points the messages at them. Throws errc::out_of_memory.
void stage(batch& b);
//! Gives back the slots stage() leased (b was not enqueued).
void release_unused_staging(batch& b) noexcept;

}  // namespace sluice::comm::detail
