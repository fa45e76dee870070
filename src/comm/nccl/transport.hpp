// The nccl engine's transport, in two halves: the NCCL calls (lanes.hpp and
// the files beside it where NCCL is built; not_built.cpp where it is not),
// and the engine thread's part over MPI (size_exchange.cpp, poll.cpp), in
// every build. The engine thread calls it; it calls nothing back. Internal.
#pragma once

#include "comm/impl/batch.hpp"
#include "comm/impl/cancelled_requests.hpp"
#include "comm/impl/communicator_state.hpp"

#include <sluice/comm.hpp>

#include <chrono>
#include <string>

namespace sluice::comm::detail {

//! The engine that `automatic` picks in this build, and whether nccl is in it
//! (create_lanes.cpp or not_built.cpp: one per build kind; no vendor #if).
engine default_engine() noexcept;
bool nccl_available() noexcept;

}  // namespace sluice::comm::detail

namespace sluice::comm::detail::nccl {

// --- the NCCL calls (not_built.cpp has none of them: create_lanes throws
// errc::not_supported there) -------------------------------------------------

//! Collective over c.mpi: the ncclUniqueId broadcast, ncclCommInitRank on
//! c.device, the connections to every peer made. Throws errc::comm_failure.
void create_lanes(communicator_state& c);
//! Enqueues b's NCCL calls on its streams (one NCCL group), under c.m. Never
//! throws: a failure goes to b.failure (and no call of b was enqueued).
void enqueue(batch& b) noexcept;
//! The communicator's asynchronous NCCL error (ncclCommGetAsyncError), empty
//! when none.
std::string async_error(communicator_state& c) noexcept;
//! ncclCommAbort (the kernels of c waiting for a peer end); later operations
//! of c fail with `why`. Any thread; takes c.m.
void abort_lanes(communicator_state& c, const std::string& why) noexcept;
//! The communicator's destructor: its lanes kept for the next communicator
//! of its ranks, or ncclCommDestroy on a thread of its own (it may wait for
//! device work that the caller holds).
void release_lanes(communicator_state& c) noexcept;
//! Waits up to `patience` for the aborts and destroys still running (the
//! engine's stop, at MPI_Finalize); false when some still run.
bool settle_lanes(std::chrono::seconds patience) noexcept;

// --- the engine thread's part ------------------------------------------------

//! b's size exchange posted when the engine takes it, in enqueue order
//! (size_exchange.cpp); an MPI failure fails b (fail_batch).
void post_size_exchange(batch& b);
//! m's size exchange: a send tells its size, a receive learns its send's;
//! an MPI error code.
int post_sizes(communicator_state& c, message& m);
//! Whether m's size exchange completed (tested as needed); code: an MPI error.
bool sizes_known(message& m, int& code);
//! b's lease stored before it started, once every size is known and matched.
void early_verdict(batch& b);
//! Tests b (poll.cpp): its sizes, its done events, NCCL's asynchronous
//! error; true when every message is done.
bool poll(batch& b);
//! b failed: reported on its streams, then its NCCL communicator aborted
//! (which ends the kernels that wait for a peer) saying `why`.
void fail_batch(batch& b, const std::string& why) noexcept;
//! b's NCCL calls are about to be made (under c.m): b is open until closed()
//! (the engine's finish). Throws std::bad_alloc.
void opened(batch& b);
void closed(batch& b) noexcept;
//! Every open batch of c marked failed (abort_lanes, before ncclCommAbort):
//! its host tasks copy nothing out of staging.
void fail_open(communicator_state& c) noexcept;
//! m's size exchange given up (b timed out or MPI_Finalize came).
void cancel(message& m, cancelled_requests& cancelled);

}  // namespace sluice::comm::detail::nccl
