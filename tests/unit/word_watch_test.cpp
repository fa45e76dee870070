// The word watcher and its runners (backends/cuda_hip/host_func/word_watch.hpp),
// without a device: words stored by a thread of the test play the streams'
// signals. What the GPU backends' host functions rely on: every watch fires
// once, on a runner; functions that block hold back no other (HOST-2), whether
// the words are stored one after another or all at once, also after the
// runners parked.
// Run under TSan and ASan in CI (the host build's unit tests).
#include "host_func/word_watch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

namespace ww = sluice::detail::word_watch;
using clock_type = std::chrono::steady_clock;

//! Functions that block until opened, counting those that entered.
struct latch {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;

  void enter() {
    std::unique_lock<std::mutex> lock(m);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
  }
  //! Waits (a condition variable, not a sleep) until `n` entered or `limit`
  //! passed; `seen` gets how many had entered then.
  bool wait_entered(int n, std::chrono::seconds limit, int* seen = nullptr) {
    std::unique_lock<std::mutex> lock(m);
    const bool all = cv.wait_for(lock, limit, [&] { return entered >= n; });
    if (seen != nullptr) *seen = entered;
    return all;
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

struct blocking_watch {
  std::atomic<std::uint64_t> word{0};
  ww::watch w;
  latch* l = nullptr;
  std::atomic<int> calls{0};
  std::atomic<bool> done{false};
};

void enter_latch(void* arg) noexcept {
  auto* b = static_cast<blocking_watch*>(arg);
  b->calls.fetch_add(1);
  b->l->enter();
  b->done.store(true, std::memory_order_release);
}

//! n watches whose functions all block: every one must start while the
//! others block. `burst`: the words are stored at once (one after another
//! with no pause); otherwise each after the previous function has entered.
void all_blocked_functions_start(int n, bool burst) {
  latch l;
  std::vector<std::unique_ptr<blocking_watch>> ws;
  ww::ensure_started();
  for (int i = 0; i < n; ++i) {
    auto b = std::make_unique<blocking_watch>();
    b->l = &l;
    b->w.word = &b->word;
    b->w.target = 1;
    b->w.fn = enter_latch;
    b->w.arg = b.get();
    ws.push_back(std::move(b));
  }
  for (auto& b : ws) ww::start(b->w);
  for (int i = 0; i < n; ++i) {
    ws[static_cast<std::size_t>(i)]->word.store(1, std::memory_order_release);
    if (!burst) {
      int seen = 0;
      const bool started = l.wait_entered(i + 1, std::chrono::seconds(10), &seen);
      if (!started) {
        l.release();  // the others return, and the test ends
        for (auto& b : ws)
          while (b->calls.load() != 0 && !b->done.load(std::memory_order_acquire))
            std::this_thread::yield();
      }
      ASSERT_TRUE(started) << "only " << seen << " of " << (i + 1) << " blocked functions started";
    }
  }
  int seen = 0;
  const bool all = l.wait_entered(n, std::chrono::seconds(10), &seen);
  l.release();
  for (auto& b : ws)
    while (!b->done.load(std::memory_order_acquire)) std::this_thread::yield();
  ASSERT_TRUE(all) << "only " << seen << " of " << n << " blocked functions started";
  for (auto& b : ws) EXPECT_EQ(b->calls.load(), 1);
}

TEST(WordWatch, BlockedFunctionsStoredOneAfterAnotherAllStart) {
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    all_blocked_functions_start(12, false);
  }
}

TEST(WordWatch, BlockedFunctionsStoredAtOnceAllStart) {
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    all_blocked_functions_start(64, true);
  }
}

// After a quiet spell the runners and the watcher park: the next blocked
// functions must still each find a runner.
TEST(WordWatch, BlockedFunctionsStartAfterTheRunnersParked) {
  all_blocked_functions_start(8, true);
  // Waits until the watcher and every runner parked (a condition of theirs,
  // polled): each lingers 150 us at most, so this takes about that.
  const auto until = clock_type::now() + std::chrono::seconds(10);
  const auto all_parked = [] {
    const ww::stats s = ww::snapshot();
    return s.runners_parked == s.runners && s.runners >= 8;
  };
  while (!all_parked() && clock_type::now() < until) std::this_thread::yield();
  ASSERT_TRUE(all_parked()) << ww::snapshot().runners_parked << " of " << ww::snapshot().runners
                            << " runners parked";
  all_blocked_functions_start(8, false);
  all_blocked_functions_start(16, true);
}

struct counting_watch {
  std::atomic<std::uint64_t> word{0};
  ww::watch w;
  std::atomic<int> calls{0};
  std::atomic<bool> on_caller{false};
};

//! True on the threads that start watches. Not a comparison of thread ids: a
//! runner started after a starting thread ended may get its id (2x H200's 32
//! cores: 78 of 8000 calls "on the caller" by id, in runners).
thread_local bool starts_watches = false;

void count_call(void* arg) noexcept {
  auto* c = static_cast<counting_watch*>(arg);
  if (starts_watches) c->on_caller.store(true);
  c->calls.fetch_add(1, std::memory_order_release);
}

// Many short functions from several threads, some words stored before the
// watch starts: each is called exactly once, never on the thread that started it.
TEST(WordWatch, EveryWatchFiresOnceOnARunner) {
  constexpr int threads = 4;
  constexpr int per_thread = 2000;
  std::vector<std::unique_ptr<counting_watch>> all(threads * per_thread);
  for (auto& c : all) c = std::make_unique<counting_watch>();
  ww::ensure_started();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      starts_watches = true;
      for (int i = 0; i < per_thread; ++i) {
        counting_watch& c = *all[static_cast<std::size_t>(t * per_thread + i)];
        c.w.word = &c.word;
        c.w.target = 7;
        c.w.fn = count_call;
        c.w.arg = &c;
        if (i % 3 == 0) c.word.store(9, std::memory_order_release);  // already reached
        ww::start(c.w);
        if (i % 3 == 1) c.word.store(7, std::memory_order_release);
      }
      for (int i = 2; i < per_thread; i += 3)
        all[static_cast<std::size_t>(t * per_thread + i)]->word.store(8, std::memory_order_release);
    });
  for (auto& t : pool) t.join();
  const auto until = clock_type::now() + std::chrono::seconds(30);
  for (auto& c : all)
    while (c->calls.load(std::memory_order_acquire) == 0 && clock_type::now() < until)
      std::this_thread::yield();
  int missing = 0, twice = 0, on_caller = 0;
  for (auto& c : all) {
    if (c->calls.load() == 0) ++missing;
    if (c->calls.load() > 1) ++twice;
    if (c->on_caller.load()) ++on_caller;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(twice, 0);
  EXPECT_EQ(on_caller, 0);
}

}  // namespace
