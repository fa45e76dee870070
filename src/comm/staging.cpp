// Pinned staging for device buffers: sluice::comm copies a device buffer into
// pinned memory before MPI reads it, and out of pinned memory after MPI wrote
// it, on the operation's stream (docs/comm.md "Device buffers"). A slot is
// reused once the event recorded behind its last use has completed; pinned
// memory is never freed while the process runs (as sluice's own pools).
#include "engine.hpp"

#include <sluice/event.hpp>
#include <sluice/memory.hpp>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace sluice::comm::detail {

namespace {

struct slot_state {
  std::unique_ptr<sluice::pinned_buffer<unsigned char>> buffer;
  std::unique_ptr<sluice::event> guard;  // recorded behind the last use; null: none yet
};

// Slots by size (powers of two from 4 KiB); per size, the free ones in the
// order they were given back, so the first is the one whose guard most
// likely completed: a lease looks at that one only (O(1): with hundreds of
// operations in flight, asking every slot's event cost milliseconds per
// operation), and takes a new slot when it is still in use.
struct staging_pool {
  std::mutex m;
  std::vector<slot_state> slots;                // under m (grows only)
  std::map<std::size_t, std::deque<int>> free;  // under m: by size, oldest first
};

staging_pool& pool() {
  static auto* p = new staging_pool;  // never destroyed: streams may still use the memory
  return *p;
}

std::size_t rounded(std::size_t bytes) {
  std::size_t size = 4096;
  while (size < bytes) size *= 2;
  return size;
}

}  // namespace

staging_lease lease_staging(std::size_t bytes) {
  auto& p = pool();
  const std::size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(p.m);
  auto& waiting = p.free[size];
  if (!waiting.empty()) {
    const int i = waiting.front();
    slot_state& s = p.slots[static_cast<std::size_t>(i)];
    if (!s.guard || s.guard->ready()) {
      waiting.pop_front();
      return staging_lease{s.buffer->data(), i};
    }
  }
  slot_state fresh;
  fresh.buffer = std::make_unique<sluice::pinned_buffer<unsigned char>>(size);
  p.slots.push_back(std::move(fresh));
  const int i = static_cast<int>(p.slots.size() - 1);
  return staging_lease{p.slots.back().buffer->data(), i};
}

void release_staging_after(int slot, stream_ref s) {
  if (slot < 0) return;
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  slot_state& st = p.slots[static_cast<std::size_t>(slot)];
  if (!st.guard || st.guard->device() != s.device())
    st.guard = std::make_unique<sluice::event>(s.device());
  st.guard->record(s);
  p.free[st.buffer->size()].push_back(slot);
}

void release_staging_unused(int slot) noexcept {
  if (slot < 0) return;
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  slot_state& st = p.slots[static_cast<std::size_t>(slot)];
  try {
    p.free[st.buffer->size()].push_front(slot);  // its guard is its last use's, if any
  } catch (...) {
    // No memory to list it: the slot stays unused.
  }
}

}  // namespace sluice::comm::detail
