// The word watcher and its runners (word_watch.hpp).
#include "word_watch.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sluice::detail::word_watch {

namespace {

using clock_type = std::chrono::steady_clock;

std::atomic<std::uint64_t> fired_count{0};
std::atomic<std::uint64_t> park_count{0};
std::atomic<std::uint64_t> runner_count{0};
std::atomic<std::uint64_t> runners_parked_now{0};

//! Threads that call the functions of watches that fired. A runner leaves
//! its condition variable only by taking a wake token, so every token wakes a
//! thread of its own. The rule that keeps a blocked function from holding back
//! the next one, and a burst from being drained by a chain of wake-ups: whenever
//! watches are queued, min(queued, max_coming) runners are coming for them
//! (spinning, woken with a token, or being started), or a runner has just popped
//! a watch and is about to apply this rule itself. push() and a runner that pops
//! while more are queued wake parked runners for the shortfall at once (the
//! notifications after the lock is released), and start one thread when none is
//! parked. So K watches that fire together are taken by up to max_coming
//! runners in parallel: no runner waits for another's wake-up before it wakes
//! (a chain of wake-ups was one wake-up latency per function: the fanout of
//! bench/host_fn.cpp); a runner draining short functions alone still makes no
//! system call per function.
class runner_pool {
 public:
  //! Queues the watches first..last (linked by next; `count` of them), whose
  //! words reached their targets, for the runners.
  void push(watch* first, watch* last, std::size_t count) noexcept {
    int notify = 0;
    bool start_one = false;
    {
      std::lock_guard<std::mutex> lock(m_);
      last->next = nullptr;
      if (tail_ != nullptr)
        tail_->next = first;
      else
        head_ = first;
      tail_ = last;
      queued_.fetch_add(count, std::memory_order_release);
      start_one = cover_locked(notify);
    }
    notify_runners(notify);
    if (start_one) start();
  }

  //! A watch was added: have one runner awake (spinning for `linger`) by the
  //! time it fires, so the first function after a quiet spell does not wait
  //! for a thread to wake up.
  void prewake() noexcept {
    if (spinning_.load(std::memory_order_relaxed) != 0) return;
    int notify = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (coming_locked() == 0 && parked_ > tokens_) {
        ++tokens_;
        notify = 1;
      }
    }
    notify_runners(notify);
  }

  //! The first runner; throws std::system_error when it cannot be started.
  void start_first() {
    {
      std::lock_guard<std::mutex> lock(m_);
      ++starting_;
    }
    try {
      std::thread([this] { main(); }).detach();
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      --starting_;
      throw;
    }
    runner_count.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  //! Runners coming for queued watches at most: those beyond the machine's
  //! cores would only queue for the CPU (a function that blocks frees its core,
  //! and the runner that popped it wakes the next one). At least 4.
  static std::size_t max_coming() noexcept {
    static const std::size_t n = std::max<std::size_t>(4, std::thread::hardware_concurrency());
    return n;
  }
  //! Under m_: runners spinning, woken and not yet running, or being started.
  std::size_t coming_locked() const noexcept {
    return static_cast<std::size_t>(spinning_.load(std::memory_order_relaxed)) +
           static_cast<std::size_t>(tokens_) + static_cast<std::size_t>(starting_);
  }
  //! Under m_: gives parked runners tokens for the queued watches that no
  //! runner is coming for (up to max_coming() coming in all); `notify` gets how
  //! many to notify once m_ is released. True: no runner is parked to take one,
  //! start a thread (the caller, after the lock; starting_ counted here).
  bool cover_locked(int& notify) noexcept {
    const std::size_t want = std::min(queued_.load(std::memory_order_relaxed), max_coming());
    const std::size_t coming = coming_locked();
    if (coming >= want) return false;
    const std::size_t missing = want - coming;
    const auto idle = static_cast<std::size_t>(parked_ - tokens_);
    const std::size_t woken = std::min(missing, idle);
    tokens_ += static_cast<int>(woken);
    notify += static_cast<int>(woken);
    if (woken < missing && starting_ == 0) {
      ++starting_;  // one thread at a time: it applies this rule again when it pops
      return true;
    }
    return false;
  }
  //! Wakes `n` parked runners (their tokens given under m_).
  void notify_runners(int n) noexcept {
    for (int i = 0; i < n; ++i) cv_.notify_one();
  }
  //! Starts a runner (starting_ counted by the caller).
  void start() noexcept {
    try {
      std::thread([this] { main(); }).detach();
      runner_count.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      // No thread: the watches stay queued and the next runner that finishes
      // its function takes them (the first runner exists: start_first).
      std::lock_guard<std::mutex> lock(m_);
      --starting_;
    }
  }

  void main() noexcept {
    std::unique_lock<std::mutex> lock(m_);
    --starting_;
    for (;;) {
      if (head_ != nullptr) {
        watch* w = head_;
        head_ = w->next;
        if (head_ == nullptr) tail_ = nullptr;
        queued_.fetch_sub(1, std::memory_order_relaxed);
        int notify = 0;
        const bool start_one = head_ != nullptr && cover_locked(notify);
        lock.unlock();
        notify_runners(notify);
        if (start_one) start();
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
        if (i % 64 == 63) {
          if (clock_type::now() >= until) break;
          std::this_thread::yield();  // let a thread that has work run (few cores)
        }
      }
      lock.lock();
      spinning_.fetch_sub(1, std::memory_order_relaxed);
      if (head_ != nullptr) continue;
      ++parked_;
      runners_parked_now.fetch_add(1, std::memory_order_relaxed);
      cv_.wait(lock, [this] { return tokens_ != 0; });
      runners_parked_now.fetch_sub(1, std::memory_order_relaxed);
      --tokens_;
      --parked_;
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  watch* head_ = nullptr;  // queued watches, under m_
  watch* tail_ = nullptr;
  std::atomic<std::size_t> queued_{
      0};  // how many (changed under m_); read without m_ by spinning runners
  std::atomic<int> spinning_{0};  // changed under m_
  int parked_ = 0;                // waiting on cv_, under m_
  int tokens_ = 0;                // wake tokens not yet taken (<= parked_), under m_
  int starting_ = 0;              // threads started, not yet in their loop, under m_
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
    unsigned polls = 0;
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
          if (i % 64 == 63) {
            if (clock_type::now() >= until) {
              sleep(nullptr);
              break;
            }
            std::this_thread::yield();
          }
        }
        continue;
      }
      watch* first = nullptr;
      watch* last = nullptr;
      std::size_t fired = 0;
      for (watch** link = &watching_; *link != nullptr;) {
        watch* w = *link;
        if (w->word->load(std::memory_order_acquire) >= w->target) {
          *link = w->next;
          w->next = nullptr;
          if (last != nullptr)
            last->next = w;
          else
            first = w;
          last = w;
          ++fired;
        } else {
          link = &w->next;
        }
      }
      const auto now = clock_type::now();
      if (fired != 0) {
        fired_count.fetch_add(fired, std::memory_order_relaxed);
        runners_.push(first, last, fired);  // the runners' now
        last_event = now;
        continue;
      }
      const auto quiet = now - last_event;
      if (quiet < busy_poll) {
        cpu_relax();
        if (++polls % 64 == 0) std::this_thread::yield();
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
  s.runners_parked = runners_parked_now.load(std::memory_order_relaxed);
  return s;
}

}  // namespace sluice::detail::word_watch
