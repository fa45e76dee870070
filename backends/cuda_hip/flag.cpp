// Flags of the GPU backend: a word of host-mapped pinned memory that the host
// reads and writes directly and streams reach through stream memory operations
// (wait_value / write_value).
#include "gpu.hpp"

#include <new>

namespace sluice {

namespace detail {

void add_flag_user(flag_state& f, stream_state& s) {
  std::lock_guard<std::mutex> lock(f.m);
  for (auto* u : f.users)
    if (u == &s) return;
  f.users.push_back(&s);
  s.add_ref();
}

}  // namespace detail

flag::flag(std::uint32_t initial) : state_(new (std::nothrow) detail::flag_state()) {
  if (state_ == nullptr) detail::fail(errc::out_of_memory, "sluice::flag", "no memory for a flag");
  try {
    state_->w = detail::allocate_word();
  } catch (...) {
    delete state_;
    throw;
  }
  state_->w.host->store(initial, std::memory_order_release);
}

flag::~flag() {
  std::unique_ptr<detail::flag_state> f(state_);
  if (f->users.empty()) {
    detail::free_word(f->w);
    return;
  }
  // Streams may still wait on the word: reuse it only after they passed this
  // moment (an event on each), waited for on a sluice thread.
  auto& e = detail::engine();
  std::vector<std::pair<int, gpu::api::event_t>> marks;
  bool complete = true;
  for (auto* u : f->users) {
    try {
      auto& d = e.devices[static_cast<std::size_t>(u->device)];
      const gpu::api::event_t ev = e.take_event(d);
      if (gpu::api::event_record(ev, u->native).ok())
        marks.emplace_back(u->device, ev);
      else
        e.give_event(d, ev), complete = false;
    } catch (...) {
      complete = false;
    }
    u->release();
  }
  const detail::word w = f->w;
  try {
    e.reaper.submit([marks, w, complete] {
      bool passed = complete;
      auto& eng = detail::engine();
      for (const auto& [device, ev] : marks) {
        passed = gpu::api::event_synchronize(ev).ok() && passed;
        eng.give_event(eng.devices[static_cast<std::size_t>(device)], ev);
      }
      if (passed) detail::free_word(w);  // else leak one word rather than reuse it too early
    });
  } catch (...) {
    // No memory to defer: leak the word.
  }
}

std::uint32_t flag::load() const noexcept {
  return static_cast<std::uint32_t>(state_->w.host->load(std::memory_order_acquire));
}

void flag::store(std::uint32_t v) noexcept { state_->w.host->store(v, std::memory_order_release); }

}  // namespace sluice
