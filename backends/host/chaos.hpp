// Chaos mode of the host backend (SLUICE_HOST_CHAOS=<seed>): injects the
// delays and interleavings the semantics allow, so that the conformance suite
// meets schedules a quiet machine never produces. A seed makes a run
// replayable in what is injected (thread timing still varies).
//
// Where: before a worker runs an operation, before a completion is published
// (events and streams complete late), before a host function starts, on the
// producer side after an enqueue, and when a worker picks up a stream (another
// worker may take it meanwhile). Each site pauses with probability 1/4 for a
// random yield, spin (up to 50 us) or sleep (up to 300 us). A graph's launch
// starts its ready operations in a random order. Off by default: then each
// site costs one relaxed load.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::detail::chaos {

enum class site : std::uint32_t {
  before_op,
  before_completion,
  before_host_function,
  after_enqueue,
  pick_up,
  in_query  // inside ready(): between reading a stream's state and its host-function errors
};

//! Reads SLUICE_HOST_CHAOS once (errc::invalid_argument for garbage); 0 = off.
void configure();

extern std::atomic<std::uint64_t> seed;  // 0: off

void pause_slow(site where) noexcept;

//! A random number of the calling thread's sequence (chaos mode's choices
//! beyond pauses: the order in which a graph's ready operations start).
std::uint64_t draw() noexcept;

inline void pause(site where) noexcept {
  if (seed.load(std::memory_order_relaxed) != 0) [[unlikely]]
    pause_slow(where);
}

}  // namespace sluice::detail::chaos
