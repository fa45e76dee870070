// The engine's pool of stream states (engine.hpp): a state is taken for each
// new or borrowed stream and goes back, never freed, when its last reference
// is dropped (stream_state::release).
#include "engine.hpp"
#include "peer_copy.hpp"
#include "stream_state.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace sluice::detail {

stream_state* engine_t::new_stream(device_state& d, int native_priority) {
  // The vendor stream first: it may fail (errc::not_ready, stream_pool.hpp).
  const native_stream n = d.natives.take(d, native_priority, "sluice::stream");
  try {
    return adopt(d, n, native_priority, false);
  } catch (...) {
    d.natives.give(n);
    throw;
  }
}

stream_state* engine_t::new_borrowed_stream(device_state& d, api::stream_t native,
                                            int native_priority) {
  // A position event of its own: the vendor stream is the borrower's, not the pool's.
  const api::event_t position = take_event(d);
  try {
    return adopt(d, native_stream{native, position, native_priority, 0}, native_priority, true);
  } catch (...) {
    give_event(d, position);
    throw;
  }
}

stream_state* engine_t::adopt(device_state& d, const native_stream& n, int native_priority,
                              bool borrowed) {
  stream_state* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_m);
    s = free_states;
    if (s != nullptr) free_states = s->pool_next;
  }
  if (s == nullptr) {
    // Pooled, never freed: a stale stream_ref can still read its generation.
    auto fresh = std::make_unique<stream_state>();
    fresh->gate = allocate_word();
    fresh->signal = allocate_word();
    s = fresh.release();
  }
  s->native = n.stream;
  s->position = n.position;
  s->queue = n.queue;
  s->pool_counted = true;
  s->pool_next = nullptr;
  s->open_batch.store(nullptr, std::memory_order_relaxed);
  // A borrowed stream's owner enqueues work sluice does not see: host
  // functions are never batched on it (as after native_handle()).
  s->native_escaped.store(borrowed, std::memory_order_relaxed);
  s->borrowed = borrowed;
  s->device = d.id;
  s->context = d.context;
  s->native_priority = native_priority;
  s->trace.restart();
  s->refs.reset_to_one();  // the owning handle
  try {
    std::lock_guard<std::mutex> lock(d.streams_m);
    d.streams.push_back(s);
  } catch (...) {
    // Back to the free list as it came; the caller keeps n's handles.
    s->native = {};
    s->position = {};
    std::lock_guard<std::mutex> lock(pool_m);
    s->pool_next = free_states;
    free_states = s;
    throw;
  }
  return s;
}

void stream_state::release() noexcept {
  if (refs.drop()) engine().recycle(this);
}

void engine_t::recycle(stream_state* s) noexcept {
  // Nothing is lost: failures nobody asked about are reported here.
  s->failures.print_unreported(s->device);
  auto& d = devices[static_cast<std::size_t>(s->device)];
  {
    std::lock_guard<std::mutex> lock(d.streams_m);
    auto& v = d.streams;
    for (auto& x : v)
      if (x == s) {
        x = v.back();
        v.pop_back();
        break;
      }
  }
  recycle_staging(*s);
  // The vendor stream goes back to the device's pool, its work still running
  // (LIFE-1): nothing is destroyed, so nothing waits (IND-4). A borrowed
  // stream's vendor stream stays its owner's (NAT-2): only the position event
  // goes back.
  if (s->borrowed)
    give_event(d, s->position);
  else
    d.natives.give(
        native_stream{s->native, s->position, s->native_priority, s->queue, 0, s->pool_counted});
  s->native = {};
  s->position = {};
  std::lock_guard<std::mutex> lock(pool_m);
  s->pool_next = free_states;
  free_states = s;
}

}  // namespace sluice::detail
