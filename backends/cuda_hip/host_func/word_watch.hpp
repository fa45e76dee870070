// "Call me when this word reaches N": the device-to-host signal of the GPU
// backends' host functions (the comm engine reads the same kind of word, its
// arrival flags, in its own loop: docs/design.md, "The word watcher"). A stream
// stores a value into a host-mapped word (a stream memory write) once the work
// before it is done; one sluice thread per process, the watcher, polls the
// words being watched and hands each one that reached its value to a runner
// thread, which calls the watch's function. No vendor callback is involved.
// Internal; docs/design.md, "Host functions".
//
// Threads and costs:
// - The watcher never runs a watch's function: a function that blocks delays
//   only itself (HOST-2). While a watch is pending it polls every pending word:
//   busily for `busy_poll` after the last event (a watch added or fired), then
//   in sleeps of 1/16 of the time since that event, at least 2 us and at most
//   `max_sleep` (so a word is seen at most 200 us, and at most ~6 % of its
//   wait, after it was stored). With nothing watched it polls one atomic for
//   `linger`, then parks on a condition variable: nothing pending, no polling.
// - Runners: a pool that grows so that every function ready to run finds an
//   idle runner or a new one (a blocked function never holds back another).
//   An idle runner polls one atomic for `linger` for the next function, then
//   parks. The watcher wakes a parked runner when it takes a new watch, so
//   that the first function after a quiet spell finds one awake. When several
//   watches fire at once, as many parked runners are woken at once as there
//   are queued functions, up to C = max(4, the machine's cores) coming at a
//   time (a burst is drained in parallel, not by a chain of wake-ups).
// - Spinning is therefore bounded: the watcher and at most one idle runner
//   (up to C for `linger` after a burst of C or more functions; more only
//   while functions are queued), each for at most busy_poll + linger (150 us)
//   after the last event, then sleeps or parks. Spinning threads yield every
//   64 polls, so on a machine with few cores they leave the CPU to threads
//   that have work.
#pragma once

#include "cpu_relax.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sluice::detail::word_watch {

//! The watcher polls without sleeping for this long after the last event.
inline constexpr std::chrono::microseconds busy_poll{50};
//! An idle watcher or runner polls (one atomic) this long before parking.
inline constexpr std::chrono::microseconds linger{100};
//! The longest sleep between two polls while a watch is pending.
inline constexpr std::chrono::microseconds max_sleep{200};

using callback = void (*)(void* arg) noexcept;

using detail::cpu_relax;  // src/cpu_relax.hpp, shared with the host backend

//! One watch: "call fn(arg) once *word >= target". Owned by the caller, who
//! must keep it alive (and unchanged) until fn has been called; `next` is the
//! watcher's. Registering one never allocates, so it cannot fail.
struct watch {
  const std::atomic<std::uint64_t>* word = nullptr;
  std::uint64_t target = 0;
  callback fn = nullptr;
  void* arg = nullptr;
  watch* next = nullptr;
};

//! Starts the watcher and the first runner if they are not running yet:
//! std::system_error when a thread cannot be started. Call it before the work
//! that a watch will wait for is enqueued, so that a failure loses nothing.
void ensure_started();

//! Calls w.fn(w.arg) once, on a runner thread (never the caller's, never the
//! watcher's), after *w.word >= w.target has been seen (an acquire load: what
//! the writer did before its store is visible to fn). fn may block and may
//! call sluice; it must not throw. Requires ensure_started(). Lock-free for
//! the caller (one compare-exchange; a notify only when the watcher sleeps).
void start(watch& w) noexcept;

//! Counters for tests and benches (relaxed snapshots).
struct stats {
  std::uint64_t fired = 0;           // watches handed to runners
  std::uint64_t watcher_parks = 0;   // times the watcher parked with nothing to watch
  std::uint64_t runners = 0;         // runner threads started
  std::uint64_t runners_parked = 0;  // runner threads parked now (no wake token)
};
stats snapshot() noexcept;

}  // namespace sluice::detail::word_watch
