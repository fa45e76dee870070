// sluice::comm's communicator inside: its MPI duplicates, its settings, its
// NCCL lanes, and the counters that give messages their match numbers.
// Internal.
#pragma once

#include <sluice/comm.hpp>
#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::comm::detail {

struct batch;

//! A communicator, shared by the operations in flight on it.
struct communicator_state {
  MPI_Comm mpi = MPI_COMM_NULL;     // sluice's duplicate
  MPI_Comm ring = MPI_COMM_NULL;    // a second one: the ring all_reduce's messages
  MPI_Comm pieces = MPI_COMM_NULL;  // a third one: sends and receives in pieces
  // mpi: the bytes of a piece (rank 0's SLUICE_COMM_PIECE_BYTES); a send,
  // receive, all_reduce or broadcast of at least twice this goes in pieces.
  // 0: none does.
  std::size_t piece_bytes = 0;
  // mpi: how many pieces of one send, receive or broadcast are posted at
  // once (rank 0's SLUICE_COMM_PIECES_IN_FLIGHT); 0: all that can go.
  std::size_t pieces_in_flight = 0;
  int rank = 0;
  int size = 0;
  // Whether every rank is on this rank's node (MPI_COMM_TYPE_SHARED): then a
  // large all_gather goes as sluice's messages, else MPI's collective
  // (goes_small, small_collectives.cpp).
  bool one_node = false;
  sluice::device device;
  engine kind = engine::mpi;
  int tag_limit = 32767;  // MPI_TAG_UB
  // nccl: the NCCL communicators (ncclComm_t), its lanes (nccl/lanes.hpp:
  // collectives', then each direction's sends; empty once aborted), and why it
  // was aborted (both written under m, by the engine thread only).
  std::vector<void*> nccl;
  std::unique_ptr<sluice::stream> nccl_helper;  // nccl: a batch's later lanes run there
  std::uint64_t nccl_set = 0;                   // nccl: its lanes' id (kept for reuse)
  std::vector<int> nccl_members;                // nccl: MPI_COMM_WORLD ranks, in rank order
  std::string nccl_failure;
  // nccl: the batches whose NCCL calls were made and that the engine has not
  // finished (pushed by the enqueue, under m; erased and read by the engine
  // thread). An abort marks them failed before it lets their kernels end: a
  // kernel that ended by the abort wrote nothing, and no host task may copy
  // its staging slot out as a result (nccl/poll.cpp).
  std::mutex open_m;
  std::vector<batch*> nccl_open;
  // Enqueue order (any thread, under m).
  std::mutex m;
  std::vector<std::uint64_t> sent;      // per peer: sends enqueued so far
  std::vector<std::uint64_t> received;  // per peer: receives enqueued so far
  std::uint64_t collectives = 0;        // collectives enqueued so far
  // The engine thread's: the next collective to start, and those that wait for it.
  std::uint64_t next_collective = 1;
  std::map<std::uint64_t, batch*> waiting;
  // The peers this rank lost (docs/comm.md "After a failure"): an operation
  // waiting for one timed out or MPI failed on it. Written by the engine
  // thread only, under m; the enqueues read them under m (an operation with a
  // lost peer, and every collective once any is lost, is refused there), the
  // engine without it (what was enqueued before fails when it starts).
  std::vector<char> lost;    // per peer
  std::string lost_because;  // the first failure that lost one
  std::atomic<bool> any_lost{false};

  explicit communicator_state(sluice::device d) : device(d) {}
  static const std::shared_ptr<communicator_state>& of(const communicator& c) noexcept {
    return c.state_;
  }
  ~communicator_state();
  communicator_state(const communicator_state&) = delete;
  communicator_state& operator=(const communicator_state&) = delete;
};

}  // namespace sluice::comm::detail
