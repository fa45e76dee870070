// Flags of the GPU backend: a word of host-mapped pinned memory that the host
// reads and writes directly and streams reach through stream memory operations
// (wait_value / write_value).
#include "checks.hpp"
#include "engine.hpp"
#include "flag_state.hpp"
#include "graph.hpp"
#include "mapped_word.hpp"
#include "stream_state.hpp"
#include "when_streams_pass.hpp"

#include <cstdio>
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
  detail::forget_flag(state_);  // a graph_exec's next launch refuses instead
  std::unique_ptr<detail::flag_state> f(state_);
  if (f->users.empty()) {
    detail::free_word(f->w);
    return;
  }
  // Streams may still wait on the word: reuse it only after they passed this
  // moment; else leak one word rather than reuse it too early.
  const detail::word w = f->w;
  detail::when_streams_pass(f->users, [w](const std::string& failure) {
    if (failure.empty()) {
      detail::free_word(w);
      return;
    }
    std::fprintf(stderr,
                 "sluice: destroying a flag: waiting for the streams that used it failed (%s); "
                 "its word of pinned memory stays allocated\n",
                 failure.c_str());
  });
  for (auto* u : f->users) u->release();
}

std::uint32_t flag::load() const noexcept {
  return static_cast<std::uint32_t>(state_->w.host->load(std::memory_order_acquire));
}

void flag::store(std::uint32_t v) noexcept { state_->w.host->store(v, std::memory_order_release); }

}  // namespace sluice
