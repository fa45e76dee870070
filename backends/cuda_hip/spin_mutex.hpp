// A small lock for sections that span a couple of vendor calls (internal).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace sluice::detail {

//! A lock around two vendor calls: uncontended it costs one exchange and one
//! store (std::mutex: two atomic read-modify-writes and a library call each
//! way), which the GPU backends' wait(stream) pays on every call. The holder is
//! usually between two vendor calls (a few us), so a waiter first yields; but a
//! vendor call can block while a held stream's queue is full
//! (bench/probes/queue_depth_probe.cpp), so after about 1000 yields the waiter backs off in
//! sleeps of up to 200 us instead of spinning a core. Not fair, not recursive.
class spin_mutex {
 public:
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
      return;
    lock_contended();
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  void lock_contended() noexcept {
    unsigned tries = 0;
    auto pause = std::chrono::microseconds(1);
    do {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++tries < 1000) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(pause);  // back-off while the holder is blocked
          pause = std::min(pause * 2, std::chrono::microseconds(200));
        }
      }
    } while (locked_.exchange(true, std::memory_order_acquire));
  }

  std::atomic<bool> locked_{false};
};

}  // namespace sluice::detail
