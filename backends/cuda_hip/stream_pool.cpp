// The per-device pool of vendor streams (stream_pool.hpp has the why).
#include "stream_pool.hpp"

#include "engine.hpp"
#include "settings.hpp"
#include "stream_state.hpp"

#include <algorithm>
#include <climits>
#include <numeric>
#include <thread>

namespace sluice::detail {

void stream_pool::fill(device_state& d, const std::vector<int>& priorities) {
  reserve_ = settings::stream_reserve(api::stream_reserve_default);
  std::lock_guard<std::mutex> lock(m_);
  device_ = &d;
  levels_ = priorities;
  queue_users_.assign(static_cast<std::size_t>(std::max(1, d.hardware_queues)), 0);
  // CUDA_DEVICE_MAX_CONNECTIONS=32 asked for may give the default 8 queues (the
  // simulated runtime's SLUICE_SIM_HW_QUEUES=8): streams 8 apart in creation
  // order then share a queue, and IND-1's held streams serialized.
  fallback_users_.assign(
      static_cast<std::size_t>(
          std::gcd(std::max(1, d.hardware_queues), std::max(1, api::default_hardware_queues))),
      0);
  free_.reserve(priorities.size() * static_cast<std::size_t>(reserve_));
  // One priority after the other: each priority's streams are consecutive in
  // creation order, so they cover every hardware queue (interleaved, each
  // priority had every other queue only).
  for (const int p : priorities)
    for (int i = 0; i < reserve_; ++i) make(d, p, "sluice::device (filling the stream pool)");
}

void stream_pool::make(device_state& d, int priority, const char* what) {
  native_stream n;
  n.priority = priority;
  const scoped_device guard(d.id);
  check(api::stream_create(&n.stream, priority), what, ": creating a stream on device ", d.id,
        " with priority ", priority);
  const api::status e = api::event_create(&n.position, false, false);
  if (!e.ok()) {
    (void)api::stream_destroy(n.stream);
    check(e, what, ": creating a stream's position event on device ", d.id);
  }
  n.index = made_.size();
  n.queue = static_cast<int>(n.index % queue_users_.size());
  try {
    made_.reserve(made_.size() + 1);
    free_.push_back(entry{n, false});
  } catch (...) {
    (void)api::event_destroy(n.position);
    (void)api::stream_destroy(n.stream);
    throw;
  }
  made_.push_back(made{n.stream, n.index, n.priority});
}

void stream_pool::begin_hold() noexcept {
  for (;;) {
    holds_.fetch_add(1, std::memory_order_seq_cst);
    if (!making_.load(std::memory_order_seq_cst)) return;
    holds_.fetch_sub(1, std::memory_order_seq_cst);
    while (making_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
}

stream_pool::making_scope::making_scope(stream_pool& p) noexcept : p_(p) {
  p_.making_.store(true, std::memory_order_seq_cst);
  while (p_.holds_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

stream_pool::making_scope::~making_scope() { p_.making_.store(false, std::memory_order_release); }

void stream_pool::count_user(int queue, int delta) noexcept {
  queue_users_[static_cast<std::size_t>(queue)] += delta;
  fallback_users_[static_cast<std::size_t>(queue) % fallback_users_.size()] += delta;
}

int stream_pool::pick_idle(int priority) {
  // The least used queue of the default count, then of the count asked for
  // (stream_pool.hpp), then the earliest made: from a fresh pool, consecutive
  // streams get consecutive vendor streams, as fresh creations did.
  int best = -1;
  int best_fallback = INT_MAX;
  int best_users = INT_MAX;
  std::uint64_t best_index = UINT64_MAX;
  for (std::size_t i = 0; i < free_.size(); ++i) {
    entry& e = free_[i];
    if (e.n.priority != priority) continue;
    const int fallback =
        fallback_users_[static_cast<std::size_t>(e.n.queue) % fallback_users_.size()];
    const int users = queue_users_[static_cast<std::size_t>(e.n.queue)];
    if (fallback > best_fallback) continue;
    if (fallback == best_fallback &&
        (users > best_users || (users == best_users && e.n.index >= best_index)))
      continue;
    if (e.maybe_busy) {
      const api::status q = api::stream_query(e.n.stream);
      if (!q.ok()) {
        api::clear_last_error();
        continue;  // a dead stream's work still runs: no false dependency on it
      }
      e.maybe_busy = false;
    }
    best = static_cast<int>(i);
    best_fallback = fallback;
    best_users = users;
    best_index = e.n.index;
  }
  return best;
}

int stream_pool::idle_count(int priority) {
  int n = 0;
  for (entry& e : free_) {
    if (e.n.priority != priority) continue;
    if (e.maybe_busy) {
      if (!api::stream_query(e.n.stream).ok()) {
        api::clear_last_error();
        continue;
      }
      e.maybe_busy = false;
    }
    ++n;
  }
  return n;
}

bool stream_pool::quiet(device_state& d) {
  for (const entry& e : free_)
    if (e.maybe_busy && !api::stream_query(e.n.stream).ok()) {
      api::clear_last_error();
      return false;
    }
  if (d.alloc_stream != api::stream_t{} && !api::stream_query(d.alloc_stream).ok()) {
    api::clear_last_error();
    return false;
  }
  std::lock_guard<std::mutex> lock(d.streams_m);
  for (const stream_state* s : d.streams)
    if (!api::stream_query(s->native).ok()) {
      api::clear_last_error();
      return false;
    }
  return true;
}

native_stream stream_pool::take(device_state& d, int priority, const char* what) {
  std::lock_guard<std::mutex> lock(m_);
  int at = pick_idle(priority);
  // Below the reserve: fill up while nothing of sluice's runs on the device
  // (then no creation can wait), so that later creations while it is busy
  // find streams ready.
  if (at < 0 || idle_count(priority) <= reserve_) {
    const making_scope no_new_holds(*this);
    if (quiet(d)) {
      for (int idle = idle_count(priority); idle <= reserve_ || idle == 0; ++idle)
        make(d, priority, what);
      at = pick_idle(priority);
    }
  }
  if (at < 0)
    fail(
        errc::not_ready, what, "no stream of priority ", priority, " is ready on device ", d.id,
        " (of the ", made_of(priority), " made for it, ",
        made_of(priority) - pooled_locked(priority),
        " belong to live sluice streams or to destroyed ones whose state is still referenced, and ",
        pooled_locked(priority), " still run work of destroyed streams)",
        " and the device has pending work: creating one now could wait for that work (",
        api::vendor, " stream creation does past about 33 streams, IND-4). Reserve streams ",
        "while the device is idle: sluice::reserve_streams(), or SLUICE_STREAM_RESERVE (now ",
        reserve_, ")");
  native_stream n = free_[static_cast<std::size_t>(at)].n;
  n.counted = true;
  free_[static_cast<std::size_t>(at)] = free_.back();
  free_.pop_back();
  count_user(n.queue, 1);
  return n;
}

api::stream_t stream_pool::take_for_life(device_state& d, int priority, const char* what) {
  const native_stream n = take(d, priority, what);
  try {
    const std::lock_guard<std::mutex> lock(m_);
    for_life_.push_back(n);
    // sluice's own streams never wait for the host (no flag wait, no host
    // function): a queue-mate of theirs is held by nothing, so they count as
    // no queue's user and the streams handed out spread as if they were not
    // there (IND-1: `independent_stream_limit()` streams on as many queues).
    count_user(n.queue, -1);
    for_life_.back().counted = false;
  } catch (...) {
    give(n);
    throw;
  }
  return n.stream;
}

void stream_pool::give(native_stream n) noexcept {
  const bool busy = !api::stream_query(n.stream).ok();
  if (busy) api::clear_last_error();
  std::lock_guard<std::mutex> lock(m_);
  // Its place in the creation order and its queue, whatever the caller kept.
  for (const made& m : made_)
    if (m.stream == n.stream) {
      n.index = m.index;
      n.queue = static_cast<int>(m.index % queue_users_.size());
      break;
    }
  if (n.counted) count_user(n.queue, -1);
  try {
    free_.push_back(entry{n, busy});
    // Below the reserve: a sluice thread refills it if the device is quiet
    // then (never this caller: stream destructors must not wait).
    if (!refill_posted_ && device_ != nullptr && idle_count(n.priority) < reserve_) {
      refill_posted_ = true;
      device_state* d = device_;
      engine().reaper.submit([d] { d->natives.refill(); });
    }
  } catch (...) {
    // No memory to keep it: destroy it where that returns at once (the
    // traits); elsewhere it is left to the process's end rather than waited for.
    if constexpr (!api::stream_destroy_blocks) {
      (void)api::event_destroy(n.position);
      (void)api::stream_destroy(n.stream);
    }
  }
}

void stream_pool::retire(int queue) noexcept {
  std::lock_guard<std::mutex> lock(m_);
  count_user(queue, -1);
}

void stream_pool::refill() noexcept {
  std::lock_guard<std::mutex> lock(m_);
  refill_posted_ = false;
  try {
    const making_scope no_new_holds(*this);
    if (device_ == nullptr || !quiet(*device_)) return;
    for (const int p : levels_)
      for (int idle = idle_count(p); idle < reserve_; ++idle)
        make(*device_, p, "sluice: refilling the stream pool");
  } catch (...) {
    api::clear_last_error();  // a later take() tries again, or reports it
  }
}

void stream_pool::reserve(device_state& d, int priority, int count, const char* what) {
  std::lock_guard<std::mutex> lock(m_);
  for (int idle = idle_count(priority); idle < count; ++idle) make(d, priority, what);
}

std::size_t stream_pool::made_of(int priority) const {
  return static_cast<std::size_t>(std::count_if(
      made_.begin(), made_.end(), [priority](const made& m) { return m.priority == priority; }));
}

std::size_t stream_pool::pooled(int priority) {
  std::lock_guard<std::mutex> lock(m_);
  return pooled_locked(priority);
}

std::size_t stream_pool::pooled_locked(int priority) const {
  return static_cast<std::size_t>(std::count_if(
      free_.begin(), free_.end(), [priority](const entry& e) { return e.n.priority == priority; }));
}

}  // namespace sluice::detail
