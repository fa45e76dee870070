// Helpers shared by the backend-neutral conformance tests.
//
// Naming: TEST(<Family>, <RULE>_<N>__<what>) checks rule <RULE>-<N>; a suite
// whose name ends in "MultiDevice" needs two devices (ctest label
// multi_device). MAY rules that were not observed call SLUICE_NOT_OBSERVED,
// which the runner reports as NOT OBSERVED (never as PASS).
#pragma once

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace sluice::conformance {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

//! How long "not ready" must be seen while a gate is held (semantics.md).
inline constexpr auto hold_time = 50ms;
//! Deadline for work that must complete once released (generous for VMs and sanitizers).
inline constexpr auto deadline = 10s;

//! A host-released gate: streams held by it do not advance until release().
//! Released by the destructor too, so a failing test never leaves a stream stuck.
class gate {
 public:
  void hold(stream_ref s) const { s.wait_value(flag_, 1); }
  void release() { flag_.store(1); }
  ~gate() { flag_.store(1); }
  const sluice::flag& raw() const { return flag_; }

 private:
  sluice::flag flag_{0};
};

//! Polls pred until it is true or the deadline passes (yielding, no sleeps).
template <class Pred>
bool eventually(Pred pred, clock::duration limit = deadline) {
  const auto end = clock::now() + limit;
  while (!pred()) {
    if (clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

//! True if pred stays false for the whole duration.
template <class Pred>
bool stays_false(Pred pred, clock::duration duration = hold_time) {
  const auto end = clock::now() + duration;
  while (clock::now() < end) {
    if (pred()) return false;
    std::this_thread::yield();
  }
  return !pred();
}

}  // namespace sluice::conformance

#define SLUICE_REQUIRE_DEVICES(n)                                                       \
  do {                                                                                  \
    if (::sluice::device_count() < (n))                                                 \
      GTEST_SKIP() << "needs " << (n) << " devices, found " << ::sluice::device_count(); \
  } while (0)

#define SLUICE_NOT_OBSERVED(why) GTEST_SKIP() << "not observed: " << why
