// The nccl engine's state of one send or receive (message::transport,
// impl/message.hpp): NCCL cannot tell a receive of another size than its
// send, so the engine thread sends each send's size (own_bytes) to the
// receiver, whose request learns it (peer_bytes; size_exchange.cpp).
// Internal.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace sluice::comm::detail::nccl {

struct message_state {
  MPI_Request size_sent = MPI_REQUEST_NULL;      // a send's: its size, to the receiver
  MPI_Request size_received = MPI_REQUEST_NULL;  // a receive's: the send's size
  std::uint64_t own_bytes = 0;
  std::uint64_t peer_bytes = 0;
  bool size_told = false;     // size_sent completed (or none)
  bool size_learned = false;  // size_received completed (or none)
};

}  // namespace sluice::comm::detail::nccl
