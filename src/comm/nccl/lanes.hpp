// The nccl engine's NCCL communicators, its lanes, and what every file that
// calls NCCL shares (only built with nccl.h and libnccl: cmake/SluiceComm.cmake).
// Internal.
#pragma once

#include "comm/impl/communicator_state.hpp"
#include "comm/impl/message.hpp"

#include <sluice/error.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::comm::detail::nccl {

constexpr const char* api = "sluice::comm::communicator";

// The lanes: NCCL runs the operations of one NCCL communicator one after
// another in enqueue order, whatever their streams, so one NCCL communicator
// would let an operation that waits for its peer hold every later one of the
// sluice communicator (COMM-3) and make a send wait for receives enqueued
// before it in the other direction. A sluice communicator therefore has 3K
// NCCL communicators (K = SLUICE_COMM_NCCL_LANES, rank 0's, default 2): K for
// collectives, the n-th collective on lane (n - 1) mod K; and for each of the
// two directions (a send from the lower rank to the higher, or the other
// way) K for point-to-point, the n-th message from a to b on lane n mod K of
// that direction, where a's n-th send to b and b's n-th receive from a meet
// (COMM-4). Operations hold each other only on one lane: a collective the
// K-th after a waiting one, a message the K-th after a waiting one between
// the same two ranks, and messages of other pairs in the same direction and
// lane (docs/comm.md "The nccl engine").
constexpr int default_lanes = 2;
constexpr int max_lanes = 16;

inline std::size_t lanes_per_kind(const communicator_state& c) { return c.nccl.size() / 3; }

inline ncclComm_t collective_lane(const communicator_state& c, std::uint64_t collective) {
  return static_cast<ncclComm_t>(c.nccl[(collective - 1) % lanes_per_kind(c)]);
}

// The lane of a send from `from` to `to`, the sequence-th between them.
inline std::size_t p2p_lane(std::size_t k, int from, int to, std::uint64_t sequence) {
  return k + 2 * static_cast<std::size_t>(sequence % k) + (from < to ? 0 : 1);
}

inline ncclComm_t message_lane(const communicator_state& c, const message& m) {
  const std::size_t k = lanes_per_kind(c);
  const std::size_t lane = m.kind == op_kind::send ? p2p_lane(k, c.rank, m.peer, m.sequence)
                                                   : p2p_lane(k, m.peer, c.rank, m.sequence);
  return static_cast<ncclComm_t>(c.nccl[lane]);
}

//! errc::comm_failure saying `why`, from NCCL's (or MPI's) `call`.
[[noreturn]] inline void fail(const std::string& why, const char* call) {
  throw error(errc::comm_failure, std::string(api) + ": " + why, 0, call);
}

inline std::string nccl_text(ncclResult_t r) {
  const char* text = ncclGetErrorString(r);
  return text != nullptr ? text : "NCCL error " + std::to_string(static_cast<int>(r));
}

// The current device for the NCCL calls, restored after.
struct on_device {
  int previous = -1;
  explicit on_device(int d) {
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != d) cudaSetDevice(d);
  }
  ~on_device() {
    int now = -1;
    if (previous >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous)
      cudaSetDevice(previous);
  }
  on_device(const on_device&) = delete;
  on_device& operator=(const on_device&) = delete;
};

}  // namespace sluice::comm::detail::nccl
