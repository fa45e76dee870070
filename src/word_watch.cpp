// The word watcher and its runners (word_watch.hpp).
#include "word_watch.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sluice::detail::word_watch {

namespace {

using clock_type = std::chrono::steady_clock;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

std::atomic<std::uint64_t> fired_count{0};
std::atomic<std::uint64_t> park_count{0};
std::atomic<std::uint64_t> runner_count{0};

//! Threads that call the functions of watches that fired. Every queued watch
//! finds a runner that is spinning, one woken for it, or a new one; a runner
//! that takes a watch while more are queued and none spins first wakes (or
//! starts) another, so a function that blocks never holds back the next.
class runner_pool {
 public:
  //! Queues w (its word reached its target) for a runner.
  void push(watch& w) noexcept {
    bool start_one = false;
    {
      std::lock_guard<std::mutex> lock(m_);
      append(w);
      if (spinning_.load(std::memory_order_relaxed) == 0) start_one = !wake_locked();
    }
    if (start_one) try_start();
  }

  //! A watch was added: have one runner awake (spinning for `linger`) by the
  //! time it fires, so the first function after a quiet spell does not wait
  //! for a thread to wake up.
  void prewake() noexcept {
    if (spinning_.load(std::memory_order_relaxed) != 0) return;
    std::lock_guard<std::mutex> lock(m_);
    if (spinning_.load(std::memory_order_relaxed) != 0 || tokens_ != 0 || parked_ == 0) return;
    ++tokens_;
    cv_.notify_one();
  }

  //! The first runner; throws std::system_error when it cannot be started.
  void start_first() {
    std::thread([this] { main(); }).detach();
    runner_count.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  void append(watch& w) noexcept {
    w.next = nullptr;
    if (tail_ != nullptr)
      tail_->next = &w;
    else
      head_ = &w;
    tail_ = &w;
    queued_.fetch_add(1, std::memory_order_release);
  }
  watch* pop() noexcept {
    watch* w = head_;
    head_ = w->next;
    if (head_ == nullptr) tail_ = nullptr;
    queued_.fetch_sub(1, std::memory_order_relaxed);
    return w;
  }
  //! Under m_: wakes a parked runner; false if none is parked.
  bool wake_locked() noexcept {
    if (parked_ == 0) return false;
    cv_.notify_one();
    return true;
  }
  void try_start() noexcept {
    try {
      std::thread([this] { main(); }).detach();
      runner_count.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      // No thread: the watch stays queued and the next runner that finishes
      // its function takes it (the first runner exists: start_first).
    }
  }

  void main() noexcept {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      if (head_ != nullptr) {
        watch* w = pop();
        bool start_one = false;
        if (head_ != nullptr && spinning_.load(std::memory_order_relaxed) == 0)
          start_one = !wake_locked();
        lock.unlock();
        if (start_one) try_start();
        // Read before the call: the watch may be gone once fn returns.
        const callback fn = w->fn;
        void* const arg = w->arg;
        fn(arg);
        lock.lock();
        continue;
      }
      spinning_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      const auto until = clock_type::now() + linger;
      for (unsigned i = 0; queued_.load(std::memory_order_acquire) == 0; ++i) {
        cpu_relax();
        if (i % 64 == 63 && clock_type::now() >= until) break;
      }
      lock.lock();
      spinning_.fetch_sub(1, std::memory_order_relaxed);
      if (head_ != nullptr) continue;
      ++parked_;
      cv_.wait(lock, [this] { return head_ != nullptr || tokens_ != 0; });
      --parked_;
      if (tokens_ != 0) --tokens_;
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  watch* head_ = nullptr;  // queued watches, under m_
  watch* tail_ = nullptr;
  std::atomic<std::size_t> queued_{0};  // how many; read without m_ by spinning runners
  std::atomic<int> spinning_{0};        // changed under m_
  int parked_ = 0;                      // under m_
  int tokens_ = 0;                      // prewake requests not yet taken, under m_
};

//! The one thread that polls the watched words.
class watcher {
 public:
  void ensure_started() {
    std::call_once(started_, [this] {
      runners_.start_first();
      std::thread([this] { main(); }).detach();
    });
  }

  void add(watch& w) noexcept {
    watch* head = incoming_.load(std::memory_order_relaxed);
    do {
      w.next = head;
    } while (!incoming_.compare_exchange_weak(head, &w, std::memory_order_seq_cst,
                                              std::memory_order_relaxed));
    // Dekker with the watcher's sleeping_ store and its incoming_ load (both
    // seq_cst): either it sees this watch before it sleeps, or this sees it
    // sleeping and wakes it. Taking m_ first orders the notify after its wait began.
    if (sleeping_.load(std::memory_order_seq_cst)) {
      { const std::lock_guard<std::mutex> lock(m_); }
      cv_.notify_one();
    }
  }

 private:
  //! Moves newly added watches onto the watched list; true if there were any.
  bool take_incoming() noexcept {
    watch* w = incoming_.exchange(nullptr, std::memory_order_acquire);
    if (w == nullptr) return false;
    while (w != nullptr) {
      watch* next = w->next;
      w->next = watching_;
      watching_ = w;
      w = next;
    }
    return true;
  }

  //! Sleeps until a watch is added, or at most `limit` when given.
  void sleep(const clock_type::duration* limit) noexcept {
    std::unique_lock<std::mutex> lock(m_);
    sleeping_.store(true, std::memory_order_seq_cst);
    const auto added = [this] { return incoming_.load(std::memory_order_seq_cst) != nullptr; };
    if (limit == nullptr) {
      park_count.fetch_add(1, std::memory_order_relaxed);
      cv_.wait(lock, added);
    } else {
      cv_.wait_for(lock, *limit, added);
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

  void main() noexcept {
    auto last_event = clock_type::now();
    for (;;) {
      if (take_incoming()) {
        runners_.prewake();
        last_event = clock_type::now();
      }
      if (watching_ == nullptr) {
        // Nothing to watch: linger (the next watch of a burst comes soon), then park.
        const auto until = clock_type::now() + linger;
        for (unsigned i = 0; incoming_.load(std::memory_order_acquire) == nullptr; ++i) {
          cpu_relax();
          if (i % 64 == 63 && clock_type::now() >= until) {
            sleep(nullptr);
            break;
          }
        }
        continue;
      }
      bool fired = false;
      for (watch** link = &watching_; *link != nullptr;) {
        watch* w = *link;
        if (w->word->load(std::memory_order_acquire) >= w->target) {
          *link = w->next;
          fired_count.fetch_add(1, std::memory_order_relaxed);
          runners_.push(*w);  // w belongs to the runner now
          fired = true;
        } else {
          link = &w->next;
        }
      }
      const auto now = clock_type::now();
      if (fired) {
        last_event = now;
        continue;
      }
      const auto quiet = now - last_event;
      if (quiet < busy_poll) {
        cpu_relax();
        continue;
      }
      const clock_type::duration nap =
          std::clamp<clock_type::duration>(quiet / 16, std::chrono::microseconds(2), max_sleep);
      sleep(&nap);
    }
  }

  std::once_flag started_;
  std::atomic<watch*> incoming_{nullptr};  // a stack of added watches
  watch* watching_ = nullptr;              // the watcher's own
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<bool> sleeping_{false};
  runner_pool runners_;
};

watcher& the_watcher() {
  static auto* w = new watcher();  // never destroyed: its threads outlive main
  return *w;
}

}  // namespace

void ensure_started() { the_watcher().ensure_started(); }

void start(watch& w) noexcept { the_watcher().add(w); }

stats snapshot() noexcept {
  stats s;
  s.fired = fired_count.load(std::memory_order_relaxed);
  s.watcher_parks = park_count.load(std::memory_order_relaxed);
  s.runners = runner_count.load(std::memory_order_relaxed);
  return s;
}

}  // namespace sluice::detail::word_watch
