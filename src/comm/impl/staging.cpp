// Pinned staging for device buffers: sluice::comm copies a device buffer into
// pinned memory before MPI reads it, and out of pinned memory after MPI wrote
// it, on the operation's stream (docs/comm.md "Device buffers"). A slot is
// reused by a later operation of the stream that last used it at once (the
// stream's order puts every use of the earlier one, MPI's included, before
// it), by another stream once the event recorded behind that last use has
// completed; pinned memory is never freed while the process runs (as
// sluice's own pools).
#include "comm/impl/staging.hpp"

#include <sluice/event.hpp>
#include <sluice/memory.hpp>
#include <sluice/stream.hpp>

#include <atomic>
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
  std::optional<stream_ref> last;        // the stream of that last use
};

// Slots by size (powers of two from 4 KiB); per size, the free ones in the
// order they were given back. A lease for stream s takes the slot s gave
// back last, if it is among the last `look_back` given back (an operation's
// loop on one stream goes round one or two slots, as a hand-written loop
// reuses its one buffer, instead of round as many slots as operations are
// enqueued ahead: 0.75x the loop at 16 MiB on 2x H200, 1.0-1.3x since; 64
// reach it past the slots of 31 other streams whose operations alternate
// with s's, each giving back a send's and a receive's); else the first,
// whose guard most likely completed, when it did (no event asked but that
// one: with hundreds of operations in flight, asking every slot's event cost
// milliseconds per operation); else a new one.
struct staging_pool {
  std::mutex m;
  std::vector<slot_state> slots;                // under m (grows only)
  std::map<std::size_t, std::deque<int>> free;  // under m: by size, oldest first
};

std::atomic<std::size_t> leases{0};

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

staging_lease lease_staging(std::size_t bytes, stream_ref stream) {
  leases.fetch_add(1, std::memory_order_relaxed);
  auto& p = pool();
  const std::size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(p.m);
  auto& waiting = p.free[size];
  constexpr std::size_t look_back = 64;  // stream comparisons, no event asked
  for (std::size_t k = 0; k < look_back && k < waiting.size(); ++k) {
    const auto at = waiting.end() - 1 - static_cast<std::ptrdiff_t>(k);
    const int i = *at;
    if (p.slots[static_cast<std::size_t>(i)].last == stream) {
      waiting.erase(at);
      return staging_lease{p.slots[static_cast<std::size_t>(i)].buffer->data(), i};
    }
  }
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

std::size_t staging_slots() noexcept {
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  return p.slots.size();
}

std::size_t staging_leases() noexcept { return leases.load(std::memory_order_relaxed); }

void release_staging_after(int slot, stream_ref s) {
  if (slot < 0) return;
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  slot_state& st = p.slots[static_cast<std::size_t>(slot)];
  if (!st.guard || st.guard->device() != s.device())
    st.guard = std::make_unique<sluice::event>(s.device());
  st.guard->record(s);
  st.last = s;
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
