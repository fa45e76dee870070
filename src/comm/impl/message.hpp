// One message or collective of sluice::comm as the API enqueued it, and what
// every part reads of it: its bytes, its pieces, its description. Each
// transport's own state of it is its `transport` (mpi/message_state.hpp,
// nccl/message_state.hpp). Internal.
#pragma once

#include "comm/mpi/message_state.hpp"
#include "comm/nccl/message_state.hpp"

#include <sluice/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

namespace sluice::comm::detail {

enum class op_kind { send, recv, all_reduce, broadcast, all_gather };
const char* to_string(op_kind k) noexcept;

std::size_t element_size(datatype t) noexcept;

//! One message or collective, as enqueued.
struct message {
  op_kind kind = op_kind::send;
  const void* in = nullptr;         // send, all_reduce, all_gather
  void* out = nullptr;              // recv, all_reduce, broadcast, all_gather
  std::size_t count = 0;            // elements (bytes for send and recv)
  datatype type = datatype::int32;  // unused by send and recv (bytes)
  reduce_op op = reduce_op::sum;
  int peer = -1;               // send: to; recv: from; broadcast: root
  int tag = 0;                 // send and recv: the match sequence number (COMM-4)
  std::uint64_t sequence = 0;  // send and recv: the match number before it wraps (nccl: its lane)
  std::size_t stream = 0;      // its stream: batch::streams[stream]
  // in / out is memory only the device can address (operations.cpp's checks
  // ask the backend once; staging_plan.cpp copies such buffers through
  // pinned memory).
  bool in_device = false;
  bool out_device = false;
  // Device memory staged through pinned memory (an MPI that cannot read
  // device memory): copied in before the operation, out after it, on the
  // message's stream. slot < 0: nothing of its own to give back.
  struct stage {
    void* device = nullptr;
    void* pinned = nullptr;
    std::size_t bytes = 0;
    int slot = -1;
  };
  stage stage_in, stage_out;
  // mpi: a message in pieces (docs/comm.md "Pieces"): `piece` bytes each
  // (0: whole), carried one after another, so that the stream copies one
  // piece in or out of staging while MPI carries another (staging_plan.cpp
  // decides; the mpi engine carries them).
  std::size_t piece = 0;
  bool done = false;  // the engine's: it completed or failed
  // The engine's, per transport: the mpi engine's requests, or the nccl
  // engine's size exchange (enqueue.cpp picks it by the communicator's engine).
  std::variant<mpi::message_state, nccl::message_state> transport;
  std::string describe() const;
};

// m's state in the transport that carries it (the engine thread's).
inline mpi::message_state& mpi_state(message& m) {
  return std::get<mpi::message_state>(m.transport);
}
inline const mpi::message_state& mpi_state(const message& m) {
  return std::get<mpi::message_state>(m.transport);
}
inline nccl::message_state& nccl_state(message& m) {
  return std::get<nccl::message_state>(m.transport);
}

//! How many pieces m goes in (1: whole), and piece j's byte range within
//! `bytes` (the staged buffer's bytes, or bytes_of(m)).
std::size_t pieces_of(const message& m, std::size_t bytes) noexcept;
struct byte_range {
  std::size_t offset = 0;
  std::size_t length = 0;
};
byte_range piece_range(const message& m, std::size_t bytes, std::size_t j) noexcept;
std::size_t bytes_of(const message& m) noexcept;
//! Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte (empty ranges never do).
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept;

}  // namespace sluice::comm::detail
