// Pinned staging for device buffers: sluice::comm copies a device buffer into
// pinned memory before MPI reads it, and out of pinned memory after MPI wrote
// it, on the operation's stream (docs/comm.md "Device buffers"). A slot is
// reused once the event recorded behind its last use has completed; pinned
// memory is never freed while the process runs (as sluice's own pools).
#include "engine.hpp"

#include <sluice/event.hpp>
#include <sluice/memory.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace sluice::comm::detail {

namespace {

struct slot_state {
  std::unique_ptr<sluice::pinned_buffer<unsigned char>> buffer;
  std::unique_ptr<sluice::event> guard;  // recorded behind the last use; null: none yet
  bool leased = false;
};

struct staging_pool {
  std::mutex m;
  std::vector<slot_state> slots;  // under m (grows only)
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
  std::lock_guard<std::mutex> lock(p.m);
  int best = -1;
  for (std::size_t i = 0; i < p.slots.size(); ++i) {
    slot_state& s = p.slots[i];
    if (s.leased || s.buffer->size() < bytes) continue;
    if (s.guard && !s.guard->ready()) continue;
    if (best < 0 || s.buffer->size() < p.slots[static_cast<std::size_t>(best)].buffer->size())
      best = static_cast<int>(i);
  }
  if (best < 0) {
    slot_state fresh;
    fresh.buffer = std::make_unique<sluice::pinned_buffer<unsigned char>>(rounded(bytes));
    p.slots.push_back(std::move(fresh));
    best = static_cast<int>(p.slots.size() - 1);
  }
  slot_state& s = p.slots[static_cast<std::size_t>(best)];
  s.leased = true;
  return staging_lease{s.buffer->data(), best};
}

void release_staging_after(int slot, stream_ref s) {
  if (slot < 0) return;
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  slot_state& st = p.slots[static_cast<std::size_t>(slot)];
  if (!st.guard || st.guard->device() != s.device())
    st.guard = std::make_unique<sluice::event>(s.device());
  st.guard->record(s);
  st.leased = false;
}

void release_staging_unused(int slot) noexcept {
  if (slot < 0) return;
  auto& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  p.slots[static_cast<std::size_t>(slot)].leased = false;
}

}  // namespace sluice::comm::detail
