// Flags of the host backend: a 32-bit word plus the streams parked on it.
#include "host.hpp"

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
  for (std::size_t i = 0; i < woken && i < inline_wakes; ++i) resume_inline(*few[i]);
  for (auto* s : more) resume_inline(*s);
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
