// Host-mapped words: the memory behind flags and host-function gates, which
// the host reads and writes directly and streams reach through stream memory
// operations (defined in mapped_word.cpp).
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::detail {

//! A 64-bit word holding a 32-bit value zero-extended (see the traits: a
//! 64-bit compare is what makes the device's >= an unsigned one).
struct word {
  std::atomic<std::uint64_t>* host = nullptr;  // the host's view
  void* device = nullptr;                      // the address stream memory operations use
};

//! A word from a slab of pinned, host-mapped memory; it starts at 0.
word allocate_word();
void free_word(word w) noexcept;

}  // namespace sluice::detail
