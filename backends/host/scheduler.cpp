// The host backend's execution engine: per-device slot workers with priority
// ready queues, stream completion and listeners, the host-function pool.
#include "backend_rules.hpp"
#include "chaos.hpp"
#include "cpu_relax.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "host_functions.hpp"
#include "mutation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace sluice::detail {

namespace {

// How long an idle thread keeps looking for work before it parks. Waking a
// parked thread costs ~60 us on our VMs
// (docs/results/runs/2026-11-23-host-backend-engine.md); a short spin keeps
// back-to-back work (ping-pong, enqueue loops) on running threads.
constexpr auto spin_budget = std::chrono::microseconds(50);

// How long the owner of a stream that just ran out of work keeps it, watching
// for the next op. A producer enqueueing in a loop usually appends within this
// window, so the op joins the running stream instead of going through the
// device's ready queue (two lock round trips between cores per op otherwise).
constexpr auto linger_budget = std::chrono::microseconds(2);

//! Spins until pred() or the budget is spent; yields the CPU now and then so
//! that on a 2-core machine the thread that will produce the work can run.
template <class Pred>
bool spin_until(Pred pred, std::chrono::nanoseconds budget) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    if ((i & 63U) == 0) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}

thread_local bool tls_resuming_inline = false;
thread_local bool tls_enqueuing_inline = false;        // the producer runs its own flag op
thread_local stream_state* tls_host_stream = nullptr;  // set while running a host function
thread_local seq_t tls_host_seq = 0;

}  // namespace

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

stream_state* current_host_function_stream() noexcept { return tls_host_stream; }

std::pair<stream_state*, seq_t> exchange_host_function_stream(stream_state* s, seq_t seq) noexcept {
  const std::pair<stream_state*, seq_t> previous{tls_host_stream, tls_host_seq};
  tls_host_stream = s;
  tls_host_seq = seq;
  return previous;
}

// --- stream lifetime -----------------------------------------------------

void stream_state::on_complete() noexcept { dev->make_runnable(this); }

void stream_state::release() noexcept {
  if (refs.drop()) engine().recycle(this);
}

// --- device scheduling ---------------------------------------------------

void device_state::start_workers() {
  std::call_once(started, [this] {
    for (int i = 0; i < slots; ++i) std::thread([this] { worker_main(); }).detach();
  });
}

void device_state::make_runnable(stream_state* s) noexcept {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(m);
    const int l = s->level;
    s->ready_next = nullptr;
    if (ready_tail[l] != nullptr)
      ready_tail[l]->ready_next = s;
    else
      ready_head[l] = s;
    ready_tail[l] = s;
    ready_at_level[l].fetch_add(1, std::memory_order_relaxed);
    ready_count.fetch_add(1);
    wake = sleepers > 0 && spinners.load() == 0;
  }
  if (wake) cv.notify_one();
}

bool device_state::should_yield(const stream_state& s) const noexcept {
  if (ready_count.load(std::memory_order_relaxed) == 0) return false;
  for (int l = 0; l <= s.level; ++l)
    if (ready_at_level[l].load(std::memory_order_relaxed) > 0) return true;
  return false;
}

stream_state* device_state::pop_locked() noexcept {
  for (int l = 0; l < priority_levels; ++l) {
    stream_state* s = ready_head[l];
    if (s == nullptr) continue;
    ready_head[l] = s->ready_next;
    if (ready_head[l] == nullptr) ready_tail[l] = nullptr;
    s->ready_next = nullptr;
    ready_at_level[l].fetch_sub(1, std::memory_order_relaxed);
    ready_count.fetch_sub(1);
    return s;
  }
  return nullptr;
}

stream_state* device_state::acquire() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m);
      if (stream_state* s = pop_locked()) {
        // More work than this thread: pass the baton to a parked worker.
        const bool wake = ready_count.load() > 0 && sleepers > 0 && spinners.load() == 0;
        lock.unlock();
        if (wake) cv.notify_one();
        return s;
      }
    }
    int expected = 0;
    if (spinners.compare_exchange_strong(expected, 1)) {
      const bool found = spin_until([this] { return ready_count.load() > 0; }, spin_budget);
      spinners.store(0);
      if (found) continue;
    }
    std::unique_lock<std::mutex> lock(m);
    if (ready_count.load() > 0) continue;
    ++sleepers;
    cv.wait(lock, [this] { return ready_count.load() > 0; });
    --sleepers;
  }
}

void device_state::worker_main() {
  for (;;) {
    stream_state* s = acquire();
    chaos::pause(chaos::site::pick_up);
    run_stream(*s);
  }
}

// --- running streams -----------------------------------------------------

namespace {

// Runs ops of s until it parks or empties, or until hand_over(s) says a
// worker should take it (the stream then goes to the device's ready queue).
template <class HandOver>
void run_ops(stream_state& s, HandOver hand_over) noexcept {
  for (;;) {
    chaos::pause(chaos::site::before_op);
    if (s.head->trace != nullptr && s.head->trace->start_ns == 0) [[unlikely]]
      s.head->trace->start_ns = trace::now_ns();
    const step r = s.head->run(s);
    if (r != step::done) return;  // parked or handed off: someone else resumes s
    if (!complete_head(s)) return;
    if (hand_over(s)) {
      s.dev->make_runnable(&s);
      return;
    }
  }
}

}  // namespace

void run_stream(stream_state& s) noexcept {
  run_ops(s, [](const stream_state& st) { return st.dev->should_yield(st); });
}

void resume_inline(stream_state& s) noexcept {
  if (tls_resuming_inline || !s.head->runs_inline()) {
    s.on_complete();
    return;
  }
  tls_resuming_inline = true;
  // Anything but a flag op (user work) goes to a worker.
  run_ops(s, [](const stream_state& st) { return !st.head->runs_inline(); });
  tls_resuming_inline = false;
}

bool complete_head(stream_state& s) noexcept {
  chaos::pause(chaos::site::before_completion);
  op* o = s.head;
  const seq_t seq = o->seq;
  if (o->trace != nullptr) [[unlikely]] {
    o->trace->end_ns = trace::now_ns();
    trace::submit(std::move(*o->trace));
  }
  s.completed.store(seq);  // seq_cst: pairs with when_reached and wait_reached
  if (seq >= s.next_waiter.load()) {
    std::vector<listener*> fire;
    {
      std::lock_guard<std::mutex> lock(s.waiters_m);
      seq_t next = UINT64_MAX;
      auto keep = s.waiters.begin();
      for (auto& w : s.waiters) {
        if (w.first <= seq) {
          fire.push_back(w.second);
        } else {
          next = std::min(next, w.first);
          *keep++ = w;
        }
      }
      s.waiters.erase(keep, s.waiters.end());
      s.next_waiter.store(next);
    }
    for (listener* l : fire) l->on_complete();
  }
  op* next = o->next.load(std::memory_order_acquire);
  // (Not on the producer that runs its own op: its next op cannot come meanwhile.)
  if (next == nullptr && !tls_enqueuing_inline && !s.dev->should_yield(s))
    spin_until([&] { return (next = o->next.load(std::memory_order_acquire)) != nullptr; },
               linger_budget);
  if (next == nullptr) {
    std::lock_guard<std::mutex> lock(s.queue_m);
    next = o->next.load(std::memory_order_acquire);
    if (next == nullptr) s.tail = nullptr;
    s.head = next;
  } else {
    s.head = next;
  }
  delete o;
  if (next == nullptr) s.release();  // the reference held while the queue was non-empty
  return next != nullptr;
}

seq_t enqueue(stream_state& s, op* o) {
  // A capturing stream records the op as a vertex of its graph instead (its
  // seq is then 0: nothing was enqueued).
  if (any_capture()) [[unlikely]] {
    if (record_if_capturing(s, o)) return 0;
  }
  seq_t seq = 0;
  bool activate = false;
  if (trace::enabled() && !o->quiet) [[unlikely]] {
    try {
      auto r = std::make_unique<trace::record>();
      o->describe(*r);
      trace::fill_graph(*r);
      r->device = s.dev->id;
      r->stream = s.trace_id;
      r->priority = s.native_priority;
      r->host_thread = trace::thread_id();
      r->enqueue_ns = trace::now_ns();
      o->trace = std::move(r);
    } catch (...) {
      delete o;
      throw;
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.queue_m);
    seq = s.enqueued.load(std::memory_order_relaxed) + 1;
    o->seq = seq;
    if (o->trace != nullptr) [[unlikely]]
      o->trace->seq = seq;
    s.enqueued.store(seq, std::memory_order_release);
    if (s.tail != nullptr) {
      s.tail->next.store(o, std::memory_order_release);
    } else {
      s.head = o;
      activate = true;
    }
    s.tail = o;
  }
  if (activate) {
    s.add_ref();
    // A flag op on an idle stream runs here, on the producer (a store or a
    // check: never user code), like a flag op resumed by the thread that
    // stores the flag (resume_inline): no worker wake-up per message when
    // sluice::comm's engine keeps up with the thread that enqueues.
    if (o->runs_inline() && !tls_resuming_inline) {
      tls_enqueuing_inline = true;
      resume_inline(s);
      tls_enqueuing_inline = false;
    } else {
      s.dev->make_runnable(&s);
    }
  }
  chaos::pause(chaos::site::after_enqueue);
  return seq;
}

bool when_reached(stream_state& s, seq_t seq, listener* l) {
  std::lock_guard<std::mutex> lock(s.waiters_m);
  if (s.completed.load() >= seq) return false;
  s.waiters.emplace_back(seq, l);
  const seq_t previous = s.next_waiter.load();
  if (seq < previous) s.next_waiter.store(seq);
  // Dekker with complete_head: we published next_waiter, then look at completed;
  // it publishes completed, then looks at next_waiter. One of us sees the other.
  if (s.completed.load() >= seq) {
    s.waiters.pop_back();
    s.next_waiter.store(previous);
    return false;
  }
  return true;
}

namespace {
//! A host thread blocked until a stream reaches a position: woken once, by
//! the completion that reaches it (not by every completion on the stream).
struct host_waiter final : listener {
  std::mutex m;
  std::condition_variable cv;
  bool fired = false;
  // Notifies under the lock: the waiter cannot return (and destroy this)
  // before the notifier lets go of it.
  void on_complete() noexcept override {
    std::lock_guard<std::mutex> lock(m);
    fired = true;
    cv.notify_one();
  }
};
}  // namespace

void wait_reached(stream_state& s, seq_t seq, bool yield_cpu) {
  if (s.completed.load(std::memory_order_acquire) >= seq) return;
  if (!yield_cpu &&
      spin_until([&] { return s.completed.load(std::memory_order_acquire) >= seq; }, spin_budget))
    return;
  host_waiter w;
  if (!when_reached(s, seq, &w)) return;
  std::unique_lock<std::mutex> lock(w.m);
  w.cv.wait(lock, [&] { return w.fired; });
}

void check_not_self_wait(const stream_state& s, seq_t seq, const char* api) {
  refuse_position_self_wait(tls_host_stream == &s && seq >= tls_host_seq, api);
}

void rethrow_host_errors(stream_state& s) { s.failures.rethrow(s.dev->id); }

// --- host functions --------------------------------------------------------

namespace {

struct host_function_op final : op {
  explicit host_function_op(std::unique_ptr<host_task> t) : task(std::move(t)) {}
  void describe(trace::record& r) const override { r.kind = "host_func"; }
  step run(stream_state& s) override {
    engine().pool.submit(&s);
    return step::handed_off;
  }
  std::unique_ptr<host_task> task;
};

void run_host_function(stream_state& s) noexcept {
  auto* o = static_cast<host_function_op*>(s.head);  // handed off to us: the head is ours
  chaos::pause(chaos::site::before_host_function);
  tls_host_stream = &s;
  tls_host_seq = o->seq;
  std::optional<std::string> failure = run_host_task(*o->task);
  o->task.reset();  // the function's captures die before its completion is visible
  tls_host_stream = nullptr;
  tls_host_seq = 0;
  if (failure && !mutation::is(mutation::kind::lose_host_function_exceptions)) {
    s.failures.add(errc::host_function_failed, std::move(*failure));
  }
  if (complete_head(s)) s.dev->make_runnable(&s);
}

}  // namespace

op* make_host_function_op(std::unique_ptr<host_task> task) {
  return new host_function_op(std::move(task));
}

std::unique_ptr<host_task> take_host_task(op& o) {
  auto* h = dynamic_cast<host_function_op*>(&o);
  return h != nullptr ? std::move(h->task) : nullptr;
}

void host_pool::submit(stream_state* s) {
  bool spawn = false;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(s);
    const int queued = pending_.fetch_add(1) + 1;
    if (available_ < queued) {
      spawn = true;
      ++available_;  // the new thread starts available
    } else {
      wake = spinners_.load() == 0;
    }
  }
  if (spawn) std::thread([this] { thread_main(); }).detach();
  if (wake) cv_.notify_one();
}

void host_pool::thread_main() {
  for (;;) {
    stream_state* s = nullptr;
    {
      std::unique_lock<std::mutex> lock(m_);
      for (;;) {
        if (queue_begin_ < queue_.size()) break;
        int expected = 0;
        if (spinners_.compare_exchange_strong(expected, 1)) {
          lock.unlock();
          spin_until([this] { return pending_.load() > 0; }, spin_budget);
          lock.lock();
          spinners_.store(0);
          if (queue_begin_ < queue_.size()) break;
        }
        cv_.wait(lock, [this] { return queue_begin_ < queue_.size(); });
      }
      s = queue_[queue_begin_++];
      if (queue_begin_ == queue_.size()) {
        queue_.clear();
        queue_begin_ = 0;
      }
      pending_.fetch_sub(1);
      --available_;
      // Another function is queued and the spinner may have left: pass the baton.
      if (queue_begin_ < queue_.size()) cv_.notify_one();
    }
    run_host_function(*s);
    std::lock_guard<std::mutex> lock(m_);
    ++available_;
  }
}

}  // namespace sluice::detail
