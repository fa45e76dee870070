// Pinned staging slots for the buffers sluice::comm copies through pinned
// memory (staging.cpp). Internal.
#pragma once

#include <sluice/stream.hpp>

#include <cstddef>

namespace sluice::comm::detail {

//! A pinned staging buffer: reused at once by the stream that last used it,
//! by another once that stream has passed the event recorded behind that use.
struct staging_lease {
  void* data = nullptr;
  int slot = -1;
};
//! A slot for an operation on stream s. Throws errc::out_of_memory.
staging_lease lease_staging(std::size_t bytes, stream_ref s);
//! Records the slot's guard on s (behind its last use there) and frees it.
void release_staging_after(int slot, stream_ref s);
//! Frees a slot never used on a stream (an operation that was not enqueued).
void release_staging_unused(int slot) noexcept;
//! How many slots the process has made so far (tests/comm: COMM-1's reuse test).
std::size_t staging_slots() noexcept;
//! How many leases the process has taken so far: one per staged buffer (tests/comm:
//! registered buffers go unstaged).
std::size_t staging_leases() noexcept;

}  // namespace sluice::comm::detail
