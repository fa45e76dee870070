// The mpi engine's state of one message (message::transport, impl/message.hpp):
// its requests, and how far a message in pieces got. The engine thread's
// only. Internal.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::comm::detail::mpi {

class ring_all_reduce;

struct message_state {
  // The request of a message posted whole, and whether it completed
  // (message::done).
  MPI_Request request = MPI_REQUEST_NULL;
  std::shared_ptr<ring_all_reduce> ring;  // a large all_reduce: the ring instead of request
  // A small collective as point-to-point messages (small_collectives.cpp):
  // its requests are the batch's `requests` (the batch holds nothing else).
  bool small = false;
  // A whole receive is posted only once its message is there
  // (MPI_Improbe) and as large as the receive: an Open MPI with CMA single
  // copy wrote past a receive buffer smaller than a rendezvous send
  // (docs/results/runs/2026-11-28-openmpi-receive-overrun.md).
  bool probing = false;
  // A message in pieces (message::piece, docs/comm.md "Pieces"): a send or
  // receive in pieces goes on the communicator's `pieces` duplicate, after a
  // header (its bytes and piece size) that the receiver checks before it
  // posts a piece. Pieces posted and completed, the header.
  std::size_t posted = 0;
  std::size_t completed = 0;
  std::uint64_t header[2] = {0, 0};
  MPI_Request header_request = MPI_REQUEST_NULL;
  std::vector<MPI_Request> piece_requests;  // a send's or receive's, one per piece
  bool header_checked = false;
  // A whole receive whose send went in pieces (another size: its header,
  // found on the pieces communicator, is being received into `header` by
  // header_request; docs/comm.md "Sizes").
  bool straddled = false;
};

}  // namespace sluice::comm::detail::mpi
