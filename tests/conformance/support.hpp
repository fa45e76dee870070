// Helpers shared by the backend-neutral conformance tests.
//
// Naming: TEST(<Family>, <RULE>_<N>__<what>) checks rule <RULE>-<N>; a suite
// whose name ends in "MultiDevice" needs two devices (ctest label
// multi_device). MAY rules that were not observed call SLUICE_NOT_OBSERVED,
// which the runner reports as NOT OBSERVED (never as PASS).
//
// Each test file puts its helpers and TESTs inside
//   namespace sluice::conformance { namespace { ... } }
// so that the helpers below are used without qualification or
// using-declarations; a namespace is no part of a gtest name.
#pragma once

#include "../pattern.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::conformance {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

//! How long "not ready" must be seen while a gate is held (semantics.md).
inline constexpr auto hold_time = 50ms;
//! Deadline for work that must complete once released (generous for VMs and sanitizers).
inline constexpr auto deadline = 10s;

//! The tests' unit of data, and sizes.
using byte = unsigned char;
inline constexpr std::size_t kib = 1024;
inline constexpr std::size_t mib = 1024 * kib;

//! A host-released gate: streams held by it do not advance until release().
//! Released by the destructor too, so a failing test never leaves a stream stuck.
class gate {
 public:
  gate() = default;
  //! A gate that holds `streams` from here on: `gate g{s};` is `gate g; g.hold(s);`.
  explicit gate(std::initializer_list<stream_ref> streams) {
    try {
      for (const stream_ref s : streams) hold(s);
    } catch (...) {  // leave no stream waiting on the flag of a gate that never was
      release();
      throw;
    }
  }

  void hold(stream_ref s) const { s.wait_value(flag_, 1); }
  void release() { flag_.store(1); }
  ~gate() { flag_.store(1); }
  const sluice::flag& raw() const { return flag_; }

 private:
  sluice::flag flag_{0};
};

//! A stream held by a gate of its own, with an event recorded behind the hold:
//! work that waits on `behind` runs only once `g` is released.
struct held_stream {
  explicit held_stream(sluice::device d) : s(d), behind(d) {
    g.hold(s);
    behind.record(s);
  }
  sluice::stream s;
  gate g;
  sluice::event behind;
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

// ---------------------------------------------------------------------------
// Calls that must (not) block. Both run the call on a helper thread so that a
// wrong backend makes the test fail instead of hanging it.

//! Runs f on a thread of its own from construction on; remembers an exception f threw.
class background_call {
 public:
  explicit background_call(std::function<void()> f)
      : f_(std::move(f)), thread_([this] {
          try {
            f_();
          } catch (...) {
            failure_ = std::current_exception();
          }
          done_.store(true, std::memory_order_release);
        }) {}
  background_call(const background_call&) = delete;
  background_call& operator=(const background_call&) = delete;
  ~background_call() {
    if (thread_.joinable()) thread_.join();
  }
  //! f has returned (or thrown).
  bool done() const { return done_.load(std::memory_order_acquire); }
  //! Joins; rethrows what f threw (gtest reports it as the test's failure).
  void finish() {
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  std::function<void()> f_;
  std::atomic<bool> done_{false};
  std::exception_ptr failure_;
  std::thread thread_;  // last: started once the members above exist
};

//! f must return within `limit` while what holds the stream is still in place.
//! If it does not, unblock() removes the hold (so f can finish) and the result
//! is a failure.
template <class F, class Unblock>
::testing::AssertionResult returns_before_unblocked(F&& f, Unblock&& unblock,
                                                    clock::duration limit = deadline) {
  background_call call{[&f] { f(); }};
  const bool in_time = eventually([&] { return call.done(); }, limit);
  if (!in_time) unblock();
  call.finish();
  if (in_time) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the call blocked while the stream was held";
}

//! f must return while g is still held (see returns_before_unblocked).
template <class F>
::testing::AssertionResult returns_while_held(gate& g, F&& f, clock::duration limit = deadline) {
  return returns_before_unblocked(
      std::forward<F>(f), [&g] { g.release(); }, limit);
}

//! f must block for hold_time while g is held, and return within the deadline
//! once g is released.
template <class F>
::testing::AssertionResult blocks_until_released(gate& g, F&& f) {
  background_call call{[&f] { f(); }};
  const bool blocked = stays_false([&] { return call.done(); });
  g.release();
  const bool returned = eventually([&] { return call.done(); });
  call.finish();  // joins even when `returned` is false (the test then hangs: a deadlock)
  if (!blocked) return ::testing::AssertionFailure() << "the call returned while the gate was held";
  if (!returned) return ::testing::AssertionFailure() << "the call did not return after release";
  return ::testing::AssertionSuccess();
}

//! A gate for host threads (and host functions): waiter() blocks until open().
//! The state is shared with the waiters, so a host function still blocked when
//! a failing test unwinds does not touch freed memory; the destructor opens.
class host_latch {
 public:
  host_latch() = default;
  host_latch(const host_latch&) = delete;
  host_latch& operator=(const host_latch&) = delete;
  ~host_latch() { open(); }

  //! A callable that counts itself as entered, then blocks until open().
  auto waiter() const {
    return [s = state_] {
      s->entered.fetch_add(1, std::memory_order_acq_rel);
      std::unique_lock<std::mutex> lock(s->mutex);
      s->cv.wait(lock, [&] { return s->is_open; });
    };
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->is_open = true;
    }
    state_->cv.notify_all();
  }
  //! How many waiters have started waiting (or passed).
  int entered() const { return state_->entered.load(std::memory_order_acquire); }

 private:
  struct state {
    std::mutex mutex;
    std::condition_variable cv;
    bool is_open = false;
    std::atomic<int> entered{0};
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

//! A thread-safe record of what ran, in the order it ran.
class order_log {
 public:
  void add(int value) {
    std::lock_guard<std::mutex> lock(mutex_);
    values_.push_back(value);
  }
  std::vector<int> values() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_;
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<int> values_;
};

//! Lets `count` threads start their work at (nearly) the same moment.
class start_line {
 public:
  explicit start_line(int count) : waiting_(count) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1, std::memory_order_acq_rel);
    while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

//! Restores the calling thread's current device when it goes out of scope.
class current_device_guard {
 public:
  current_device_guard() : saved_(sluice::device::current()) {}
  current_device_guard(const current_device_guard&) = delete;
  current_device_guard& operator=(const current_device_guard&) = delete;
  ~current_device_guard() {
    try {
      saved_.make_current();
    } catch (...) {  // destructors never throw; the test has failed already
    }
  }

 private:
  sluice::device saved_;
};

//! Spends `duration` on the calling thread without sleeping: a duration (a gate
//! held for T ms, EVT-9), never an ordering mechanism.
inline void busy_for(clock::duration duration) {
  const auto end = clock::now() + duration;
  while (clock::now() < end) std::this_thread::yield();
}

// ---------------------------------------------------------------------------
// Errors.

//! The sluice::error f threw, or nothing. Other exception types propagate.
template <class F>
std::optional<sluice::error> error_of(F&& f) {
  try {
    f();
  } catch (const sluice::error& e) {
    return e;
  }
  return std::nullopt;
}

//! f must throw sluice::error with `expected`, a non-empty message and a
//! non-empty api(); errors other than device_fault must not be sticky (ERR-3).
template <class F>
::testing::AssertionResult throws_code(sluice::errc expected, F&& f) {
  const std::optional<sluice::error> e = error_of(f);
  if (!e)
    return ::testing::AssertionFailure()
           << "no sluice::error was thrown, expected " << sluice::to_string(expected);
  if (e->code() != expected)
    return ::testing::AssertionFailure()
           << "threw " << sluice::to_string(e->code()) << " (\"" << e->what() << "\"), expected "
           << sluice::to_string(expected);
  if (std::string_view(e->what()).empty())
    return ::testing::AssertionFailure() << "the error's message is empty";
  if (e->api() == nullptr || std::string_view(e->api()).empty())
    return ::testing::AssertionFailure() << "the error names no api (\"" << e->what() << "\")";
  if (expected != sluice::errc::device_fault && e->sticky())
    return ::testing::AssertionFailure()
           << "a recoverable error is sticky (\"" << e->what() << "\")";
  return ::testing::AssertionSuccess();
}

//! True when text contains part.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// ---------------------------------------------------------------------------
// Data.

//! The index of the first of n bytes at p that is not `value`; n when all are.
inline std::size_t first_byte_not(const void* p, std::size_t n, unsigned char value) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != value) return i;
  return n;
}

//! Byte i of the suite's test data (tests/pattern.hpp).
using sluice::test_data::pattern_byte;
inline void write_pattern(void* p, std::size_t n, unsigned seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(i, seed);
}
//! The index of the first byte that differs from the pattern; n when none does.
inline std::size_t first_pattern_mismatch(const void* p, std::size_t n, unsigned seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != pattern_byte(i, seed)) return i;
  return n;
}

//! The contents of device memory, read through a stream of its own (the caller
//! has ordered the writers before this call, e.g. by synchronizing them).
template <class T>
std::vector<T> read_back(const sluice::device_buffer<T>& buffer) {
  sluice::stream s{buffer.device()};
  sluice::pinned_buffer<T> staging{buffer.size()};
  sluice::copy(s, staging.data(), buffer.data(), buffer.size_bytes());
  s.synchronize();
  return std::vector<T>(staging.data(), staging.data() + staging.size());
}

//! Pinned memory of n bytes, all `value`: e.g. the destination of a copy whose
//! arrival the test watches for (its first byte no longer 0).
inline sluice::pinned_buffer<byte> filled_pinned_bytes(std::size_t n, byte value) {
  sluice::pinned_buffer<byte> buffer{n};
  std::fill(buffer.begin(), buffer.end(), value);
  return buffer;
}

//! Device memory of n bytes, all `value` (synchronously).
inline sluice::device_buffer<unsigned char> filled_device_bytes(sluice::device d, std::size_t n,
                                                                unsigned char value) {
  sluice::device_buffer<unsigned char> buffer{d, n};
  sluice::stream s{d};
  sluice::fill(s, buffer.data(), value, n);
  s.synchronize();
  return buffer;
}

//! Device memory of n bytes, filled with the pattern of `seed` (synchronously).
inline sluice::device_buffer<unsigned char> patterned_device_bytes(sluice::device d, std::size_t n,
                                                                   unsigned seed) {
  sluice::device_buffer<unsigned char> buffer{d, n};
  sluice::pinned_buffer<unsigned char> staging{n};
  write_pattern(staging.data(), n, seed);
  sluice::stream s{d};
  sluice::copy(s, buffer.data(), staging.data(), n);
  s.synchronize();
  return buffer;
}

// ---------------------------------------------------------------------------
// Peer copies (PEER-2, PEER-5).

//! The paths copy_peer may report for a copy ordered on a stream of `on`,
//! reaching the `other` device: without peer access only staged; with it,
//! direct (the host backend), or direct / direct_sm (GPUs: copy engine or
//! sluice's SM copy kernel, by size and alignment). Within one device: local,
//! or on the GPUs local_sm (a batch moved by the SM copy kernel).
inline ::testing::AssertionResult path_is_consistent(sluice::copy_path path, sluice::device on,
                                                     sluice::device other) {
  const bool local = path == sluice::copy_path::local || path == sluice::copy_path::local_sm;
  if (on == other) {
    if (path == sluice::copy_path::local ||
        (path == sluice::copy_path::local_sm && sluice::backend() != sluice::backend_kind::host))
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "same device, path " << sluice::to_string(path);
  }
  const bool enabled = sluice::peer_access_enabled(on, other);
  if (local)
    return ::testing::AssertionFailure() << "two devices, path " << sluice::to_string(path);
  if (!enabled && path != sluice::copy_path::staged)
    return ::testing::AssertionFailure() << "peer access " << on.id() << " -> " << other.id()
                                         << " is not enabled, path " << sluice::to_string(path);
  if (enabled && path == sluice::copy_path::staged)
    return ::testing::AssertionFailure()
           << "peer access " << on.id() << " -> " << other.id() << " is enabled, path staged";
  if (enabled && sluice::backend() == sluice::backend_kind::host &&
      path != sluice::copy_path::direct)
    return ::testing::AssertionFailure()
           << "host backend, peer access enabled, path " << sluice::to_string(path);
  return ::testing::AssertionSuccess();
}

}  // namespace sluice::conformance

#define SLUICE_REQUIRE_DEVICES(n)                                                        \
  do {                                                                                   \
    if (::sluice::device_count() < (n))                                                  \
      GTEST_SKIP() << "needs " << (n) << " devices, found " << ::sluice::device_count(); \
  } while (0)

#define SLUICE_NOT_OBSERVED(why) GTEST_SKIP() << "not observed: " << why
