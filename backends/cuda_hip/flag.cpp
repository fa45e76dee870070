// Flags of the GPU backend: a 32-bit word of host-mapped pinned memory that
// the host reads and writes directly and streams reach through stream memory
// operations (wait_value / write_value).
#include "gpu.hpp"

#include <new>

namespace sluice {

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
  detail::free_word(state_->w);
  delete state_;
}

std::uint32_t flag::load() const noexcept { return state_->w.host->load(std::memory_order_acquire); }

void flag::store(std::uint32_t v) noexcept { state_->w.host->store(v, std::memory_order_release); }

}  // namespace sluice
