// Flags of the host backend: a 32-bit word plus the streams parked on it.
#include "host.hpp"

#include <algorithm>
#include <new>

namespace sluice {

namespace detail {

bool flag_state::wait_for(std::uint32_t v, stream_state* s) {
  std::lock_guard<std::mutex> lock(m);
  waiter_count.fetch_add(1);  // seq_cst: store() either sees this or we see its value
  if (value.load() >= v) {
    waiter_count.fetch_sub(1);
    return false;
  }
  waiters.emplace_back(v, s);
  return true;
}

void flag_state::store(std::uint32_t v) noexcept {
  value.store(v);  // seq_cst, see wait_for
  if (waiter_count.load() == 0) return;
  // The streams to resume: a few in place (a flag usually has one waiter;
  // no allocation per store), the rest in a vector.
  constexpr std::size_t inline_wakes = 4;
  stream_state* few[inline_wakes];
  std::size_t woken = 0;
  std::vector<stream_state*> more;
  {
    std::lock_guard<std::mutex> lock(m);
    auto keep = waiters.begin();
    for (auto& w : waiters) {
      if (value.load() >= w.first) {
        if (woken < inline_wakes) {
          few[woken] = w.second;
        } else {
          try {
            more.push_back(w.second);
          } catch (...) {  // no memory for the list: this one stays registered
            *keep++ = w;
            continue;
          }
        }
        ++woken;
      } else {
        *keep++ = w;
      }
    }
    waiters.erase(keep, waiters.end());
    waiter_count.fetch_sub(static_cast<int>(woken));
  }
  // Greatest priority first (PRIO-4): the store makes every one of them
  // runnable at once, but they become runnable one after another here; in
  // the order they parked, a low-priority stream resumed first could have a
  // worker run its whole backlog while this thread, preempted, had not yet
  // resumed a high-priority one (unit.scheduling.one_slot saw 64 of 256
  // low-priority fills finish first on a loaded 2-core VM).
  // Every stream is resumed exactly once: its level is its priority clamped
  // into the host range (greatest -1 .. least 1), and a resumed one is
  // never looked at again (it may be gone once resumed).
  static_assert(host_priority_range.greatest < host_priority_range.least);
  const auto resume_at = [](stream_state*& st, int p) {
    if (st == nullptr || std::clamp(st->native_priority, host_priority_range.greatest,
                                    host_priority_range.least) != p)
      return;
    stream_state& resumed = *st;
    st = nullptr;
    resume_inline(resumed);
  };
  for (int p = host_priority_range.greatest; p <= host_priority_range.least; ++p) {
    for (std::size_t i = 0; i < woken && i < inline_wakes; ++i) resume_at(few[i], p);
    for (auto*& s : more) resume_at(s, p);
  }
}

}  // namespace detail

flag::flag(std::uint32_t initial) : state_(new (std::nothrow) detail::flag_state()) {
  if (state_ == nullptr) detail::fail(errc::out_of_memory, "sluice::flag", "no memory for a flag");
  state_->value.store(initial);
}

flag::~flag() { state_->release(); }  // streams parked on it hold their own reference

std::uint32_t flag::load() const noexcept { return state_->value.load(std::memory_order_acquire); }

void flag::store(std::uint32_t v) noexcept { state_->store(v); }

}  // namespace sluice
