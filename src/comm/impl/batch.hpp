// A batch: what the streams of one operation of sluice::comm wait for, and
// the pool that lends batches and their flags (batch_pool.cpp). Internal.
#pragma once

#include "comm/impl/message.hpp"

#include <sluice/event.hpp>
#include <sluice/flag.hpp>
#include <sluice/stream.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::comm::detail {

struct communicator_state;

//! A flag lent to one use of a batch: streams wait for it to reach `value`.
struct flag_lease {
  sluice::flag* flag = nullptr;
  std::uint32_t value = 0;
};

//! What the streams of one operation wait for: one message or collective, or
//! a group's sends and receives. Started by the engine once every stream it
//! waits on has reached it (and, for a group, once the group ended).
struct batch {
  std::shared_ptr<communicator_state> comm;
  std::vector<message> messages;
  std::vector<stream_ref> streams;  // each waits once, for `lease`
  flag_lease lease;
  // One per stream: the stream stores it when it gets there (write_value,
  // behind the work before it); the engine starts the batch once all are.
  std::vector<flag_lease> arrivals;
  // mpi, a batch with messages in pieces: its `pieces` (the most of any of
  // its messages); per stream, the arrival of each piece after the first
  // (piece_arrivals[(j - 1) * streams + k], stored once the stream copied
  // piece j in), and the done flag of each piece but the last (stored when
  // every message completed piece j; the last piece's is `lease`).
  std::size_t pieces = 1;
  std::vector<flag_lease> piece_arrivals;
  std::vector<flag_lease> piece_done;
  std::size_t pieces_released = 0;  // the engine's: piece_done flags stored
  // nccl: one event per stream instead of `arrivals` (recorded before the
  // batch's NCCL calls), and one recorded behind them (lease_event).
  std::vector<sluice::event*> arrival_events;
  std::vector<sluice::event*> done_events;
  // nccl: set by the engine before it releases the streams when the batch
  // failed; the host tasks that copy results out of staging then copy nothing.
  std::shared_ptr<std::atomic<bool>> failed;
  // recycle()'s: `failed` of the last use, when no host task still held it.
  std::shared_ptr<std::atomic<bool>> failed_spare;
  // nccl: whether the streams wait for the engine's verdict after the NCCL
  // calls (a batch with a receive: its size is checked against the send's
  // before the stream goes on); false: they go on when NCCL is done, and a
  // failure is reported on them as it is found, like a device fault.
  bool gated = true;
  bool verdict_given = false;  // the engine's (nccl): the lease was stored once the sizes matched
  // The engine's (nccl): the size exchange was posted when the engine took
  // the batch, before its streams got there, so that a receive's verdict is
  // usually given before its stream reaches the wait for it.
  bool sizes_posted = false;
  bool reported = false;  // the engine's: the failure was reported on the streams
  // Back-to-back collectives (docs/comm.md): the operations its one stream
  // had before and after enqueue.cpp enqueued it, where the backend counts them
  // (sluice::detail::enqueued_count) and nobody else enqueued meanwhile;
  // unknown_count otherwise.
  std::uint64_t enqueued_from = ~std::uint64_t{0};
  std::uint64_t enqueued_to = ~std::uint64_t{0};
  // The engine's: nothing was enqueued on its stream between the collective
  // of the same communicator before it and it (`chained`); it was started
  // before its stream got there (`early`), its stream got there (`here`), its
  // messages completed before that (`completed`: finished once `here`).
  bool chained = false;
  bool early = false;
  bool here = false;
  bool completed = false;
  std::size_t arrived = 0;       // the engine's: streams seen there
  std::uint64_t collective = 0;  // its place among the communicator's collectives; 0: none
  bool grouped = false;          // a group's (its trace span is named "group")
  // The engine's.
  std::chrono::steady_clock::time_point deadline{};
  std::string failure;    // empty: none
  batch* next = nullptr;  // the engine's inbox; the pool's free list
  std::string describe() const;

  //! The i-th flag of this use (lease: 0, arrivals: 1 ..):
  //! the batch's own flag i with a larger value than its last use (flags are
  //! never reused with a smaller value, so a stream that has not reached its
  //! wait of an earlier use yet still passes it). Throws errc::out_of_memory.
  flag_lease next_flag(std::size_t i);
  //! Flags this batch owns (kept across uses; never freed: a stream may still
  //! wait on one), each with the last value leased.
  std::vector<flag_lease> own_flags;
  // A small collective's requests and, for all_reduce, every rank's input
  // (kept across uses with the batch: no allocation per operation).
  std::vector<MPI_Request> requests;
  std::vector<char> scratch;
};

//! Batches are pooled (their vectors' capacity and their flags kept): an
//! operation allocates nothing once as many as it needs were in flight
//! before. Empty, reset; throws errc::out_of_memory.
batch* new_batch();
//! Resets b (its communicator let go, its flags that a stream may still store
//! retired) and gives it back to the pool. Any thread; never blocks.
void recycle(batch* b) noexcept;
struct batch_deleter {
  void operator()(batch* b) const noexcept { recycle(b); }
};
using batch_ptr = std::unique_ptr<batch, batch_deleter>;

}  // namespace sluice::comm::detail
