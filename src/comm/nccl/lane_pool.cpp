// The nccl engine's lanes after their communicator: kept for the next
// communicator of the same ranks on the same device, or aborted and destroyed
// on threads of their own; MPI_Finalize waits for those (settle_lanes).
#include "comm/nccl/lane_pool.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/nccl/transport.hpp"

#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::comm::detail::nccl {

namespace {

// ncclCommAbort and ncclCommDestroy may wait for device work: the
// communicator's own (a receive's gate, stored by the engine) and, through
// cudaFree, any stream of the device, which a caller may hold (COMM-6's cases
// destroy a communicator while a stream waits for the test). They run on a
// thread of their own, so that destroying a communicator does not wait (the
// contract) and the engine goes on finishing what an abort ends.
// Detached, and counted: MPI_Finalize (settle_lanes) waits for them, so that
// no NCCL call is still running when the process ends.
struct pending_calls {
  std::mutex m;
  std::condition_variable cv;
  int running = 0;
};
pending_calls& pending() {
  static auto* p = new pending_calls;  // never destroyed: detached threads use it
  return *p;
}

}  // namespace

// One thread per lane: an abort or destroy may wait for the whole device
// (cudaFree), whose kernels of another lane end only when that lane is
// aborted too (one thread for all lanes deadlocked there on 2x H100).
void off_thread(std::vector<void*> lanes, ncclResult_t (*call)(ncclComm_t)) noexcept {
  for (void* lane : lanes) {
    auto comm = static_cast<ncclComm_t>(lane);
    try {
      {
        std::lock_guard<std::mutex> lock(pending().m);
        ++pending().running;
      }
      std::thread([comm, call] {
        call(comm);
        std::lock_guard<std::mutex> lock(pending().m);
        --pending().running;
        pending().cv.notify_all();
      }).detach();
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(pending().m);
        --pending().running;
      }
      call(comm);  // no thread: here, as the last resort
    }
  }
}

lane_pool& pool() {
  static auto* p = new lane_pool;  // never destroyed: settle_lanes empties it
  return *p;
}

bool settle_lanes(std::chrono::seconds patience) noexcept {
  try {
    std::vector<lane_set> kept;
    {
      std::lock_guard<std::mutex> lock(pool().m);
      kept.swap(pool().sets);
    }
    for (lane_set& set : kept) off_thread(std::move(set.lanes), ncclCommDestroy);
    std::unique_lock<std::mutex> lock(pending().m);
    return pending().cv.wait_for(lock, patience, [] { return pending().running == 0; });
  } catch (...) {
    return false;
  }
}

void abort_lanes(communicator_state& c, const std::string& why) noexcept {
  std::vector<void*> lanes;
  try {
    std::lock_guard<std::mutex> lock(c.m);  // no enqueue calls NCCL meanwhile
    if (c.nccl.empty()) return;
    lanes.swap(c.nccl);  // later operations of c fail at once
    c.nccl_failure = why;
  } catch (...) {
    return;  // No lock: nothing to do but leave the communicator as it is.
  }
  fail_open(c);  // before the abort ends their kernels
  off_thread(std::move(lanes), ncclCommAbort);
}

void release_lanes(communicator_state& c) noexcept {
  if (c.nccl.empty()) return;  // none, or aborted
  // Every operation of c is done: each batch held c until its done flags.
  // Kept for the next communicator of these ranks (lane_set), not destroyed.
  try {
    lane_set set;
    set.id = c.nccl_set;
    set.device = c.device.id();
    set.members = c.nccl_members;
    set.lanes = c.nccl;
    set.helper = std::move(c.nccl_helper);
    set.sent = c.sent;
    set.received = c.received;
    set.collectives = c.collectives;
    c.nccl.clear();
    std::vector<void*> surplus;
    {
      std::lock_guard<std::mutex> lock(pool().m);
      std::size_t same = 0;
      for (const lane_set& x : pool().sets)
        if (same_key(x, set.device, set.members, set.lanes.size())) ++same;
      if (same >= pool_per_key)
        surplus = std::move(set.lanes);
      else
        pool().sets.push_back(std::move(set));
    }
    if (!surplus.empty()) off_thread(std::move(surplus), ncclCommDestroy);
  } catch (...) {
    off_thread(std::move(c.nccl), ncclCommDestroy);
    c.nccl.clear();
  }
}

}  // namespace sluice::comm::detail::nccl
