// The nccl engine's lanes outlive their communicator: kept for the next
// communicator of the same ranks (lane_pool.cpp), aborted or destroyed on
// threads of their own. Internal.
#pragma once

#include <sluice/stream.hpp>

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace sluice::comm::detail::nccl {

// Lane sets of destroyed communicators, kept for the next communicator of
// the same ranks on the same device: ncclCommDestroy may wait for the whole
// device (cudaFree), so a destroy while the program holds a stream waits
// until the stream is released, and a new ncclCommInitRank meanwhile waits
// behind it (COMM-6's moved-from cases hung so on 2x H100:
// docs/results/runs/2026-11-26-comm-bench-2xh100.md). Reused,
// a set also spares its 3K ncclCommInitRank. Destroyed at MPI_Finalize
// (settle_lanes), or when more than `pool_per_key` wait for one key.
struct lane_set {
  std::uint64_t id = 0;
  int device = -1;
  std::vector<int> members;  // MPI_COMM_WORLD ranks, in the communicator's order
  std::vector<void*> lanes;
  std::unique_ptr<sluice::stream> helper;
  // Every message and collective of its last communicator, for the check
  // that none is left unmatched before the set is used again.
  std::vector<std::uint64_t> sent, received;
  std::uint64_t collectives = 0;
};
constexpr std::size_t pool_per_key = 4;
constexpr int candidates = 4;

struct lane_pool {
  std::mutex m;
  std::vector<lane_set> sets;
  std::uint64_t next_id = 1;
};
//! The process's kept sets (never destroyed: settle_lanes empties it).
lane_pool& pool();

inline bool same_key(const lane_set& x, int device, const std::vector<int>& members,
                     std::size_t lanes) {
  return x.device == device && x.members == members && x.lanes.size() == lanes;
}

// ncclCommAbort or ncclCommDestroy on each of `lanes`, each on a thread of
// its own (lane_pool.cpp says why); settle_lanes waits for them.
void off_thread(std::vector<void*> lanes, ncclResult_t (*call)(ncclComm_t)) noexcept;

}  // namespace sluice::comm::detail::nccl
