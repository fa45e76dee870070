// Streams of the GPU backend: handles, synchronization, waits, host functions
// and stream memory operations.
#include "backend_rules.hpp"
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "flag_state.hpp"
#include "gpu_trace.hpp"
#include "host_functions.hpp"
#include "host_path.hpp"
#include "priority.hpp"
#include "range_map.hpp"
#include "stream_names.hpp"
#include "stream_state.hpp"
#include "host_func/word_watch.hpp"

#include <sluice/detail/interop.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

namespace sluice {

namespace detail {
namespace {

thread_local stream_state* tls_host_stream = nullptr;
thread_local std::uint32_t tls_host_ticket = 0;
thread_local const char* tls_host_path = nullptr;

// Host-function batches per path since the process started (host_function_path_counts).
std::atomic<std::uint64_t> batches_by_signal{0};
std::atomic<std::uint64_t> batches_by_kernel{0};
std::atomic<std::uint64_t> batches_by_callback{0};
std::atomic<std::uint64_t> kernel_launch_failures{0};

}  // namespace

//! Host functions in flight behind one signal and one gate wait: the stream
//! stores the batch's ticket into its signal word once the work before the
//! batch is done; the word watcher (host_func/word_watch.hpp) sees it and hands the
//! batch to a runner thread, which runs the functions in order and then opens
//! the gate with the ticket.
//!
//! Later host functions join the batch while it is open without a lock
//! (enqueue_host): each is pushed on `joins`, newest first, and the runner
//! takes the whole list at once (run_host_batch). The runner closes the batch
//! by swapping an empty list for closed_batch(); a join that finds that starts
//! a batch of its own.
struct host_batch {
  std::unique_ptr<host_task> first;        // the function that started the batch
  std::atomic<host_task*> joins{nullptr};  // joined since the runner last looked
  stream_state* stream = nullptr;          // holds a reference until the gate is open
  std::uint32_t ticket = 0;
  word_watch::watch watch;      // signal >= ticket: run the batch (fire_host_batch; signal, kernel)
  const char* path = "signal";  // "kernel" (the gate kernel stores the signal), or "callback":
                                // the vendor callback hands it over (hand_over)
};

namespace {

//! How long a batch whose functions were joined while it ran waits for one
//! more before it closes (run_host_batch).
constexpr std::chrono::microseconds join_wait{2};
//! While functions are being joined to a running batch, its runner lets the
//! enqueuing thread finish before it takes them, up to join_defer: taking and
//! running them meanwhile contends with that thread for the list's cache line
//! and for the allocator (each function's memory freed on the runner while
//! the enqueuing thread allocates the next one). Measured on 2x H100, 100
//! back-to-back host functions: 381 and 295 ns each with the runner taking
//! them under a lock, 185-233 ns without the lock, 136 ns on the vendor
//! callback, whose runner starts after them. The runner looks every
//! join_look_gap: the enqueuing thread has paused when the list did not change
//! between two looks.
constexpr std::chrono::microseconds join_defer{20};
constexpr std::chrono::nanoseconds join_look_gap{1000};

//! Spins (no shared memory read) until `gap` has passed.
void pause_for(std::chrono::nanoseconds gap) noexcept {
  const auto until = std::chrono::steady_clock::now() + gap;
  while (std::chrono::steady_clock::now() < until) word_watch::cpu_relax();
}

//! The end of a closed batch's list: no function joins it any more.
struct closed_marker final : host_task {
  void run() override {}
};
closed_marker closed_tag;
host_task* closed_batch() noexcept { return &closed_tag; }

//! A batch of s was enqueued (or is about to be): s holds for the host until
//! its gate opens (host_holds.hpp).
void announce_batch_hold(stream_state& s) noexcept {
  std::lock_guard<spin_mutex> lock(s.hold_m);
  if (s.pending_batches.fetch_add(1, std::memory_order_seq_cst) == 0)
    engine().devices[static_cast<std::size_t>(s.device)].holds.stream_holds();
}
//! A batch of s opened its gate, or was never enqueued.
void release_batch_hold(stream_state& s) noexcept {
  std::lock_guard<spin_mutex> lock(s.hold_m);
  if (s.pending_batches.fetch_sub(1, std::memory_order_seq_cst) == 1)
    engine().devices[static_cast<std::size_t>(s.device)].holds.stream_released();
}

void run_host_batch(host_batch* batch) noexcept {
  stream_state& s = *batch->stream;
  // The signal can be seen before the enqueue that wrote it has put the gate
  // wait behind it and published the ticket: wait for that (a few vendor-call
  // lengths at most), so that work a function enqueues on its own stream
  // lands behind the gate (HOST-1, HOST-3) and a record it makes carries its
  // ticket (a self-wait through that event is an error). Against the
  // simulated runtime ERR-4's event-synchronize-in-own-host-function once saw
  // no error: the record landed before the gate. (Taking enqueue_m here
  // instead made the enqueuing thread's back-to-back host functions starve
  // this thread.)
  while (static_cast<std::int32_t>(s.gate_enqueued.load(std::memory_order_acquire) -
                                   batch->ticket) < 0)
    std::this_thread::yield();
  tls_host_stream = &s;
  tls_host_ticket = batch->ticket;
  tls_host_path = batch->path;
  std::uint32_t ran = 0;
  const auto run = [&s, &ran](std::unique_ptr<host_task> task) noexcept {
    std::optional<std::string> failure = run_host_task(*task);
    task.reset();  // the function's captures die before later work may run
    ++ran;
    if (failure) s.failures.add(errc::host_function_failed, std::move(*failure));
  };
  run(std::move(batch->first));
  // Then the functions that joined, in the order they were enqueued. A batch
  // that ran one function alone closes at once (the next host function is
  // not in sight); one that was joined waits up to join_wait for more, so that
  // back-to-back host functions keep joining one batch (an enqueue of about
  // 100 ns) instead of each starting one (a stream operation).
  bool waited_for_joins = false;
  host_task* seen = nullptr;  // the list at the last look, while deferring
  std::chrono::steady_clock::time_point deferred_since;
  for (;;) {
    host_task* list = batch->joins.load(std::memory_order_relaxed);
    if (list == nullptr) {
      if (ran < 2 || waited_for_joins) {
        // Closed: later host functions start a batch of their own.
        if (batch->joins.compare_exchange_strong(list, closed_batch(), std::memory_order_acquire,
                                                 std::memory_order_relaxed))
          break;
      } else {
        waited_for_joins = true;
        for (std::chrono::nanoseconds waited{0}; waited < join_wait; waited += join_look_gap) {
          pause_for(join_look_gap);
          if (batch->joins.load(std::memory_order_relaxed) != nullptr) break;
        }
      }
      continue;
    }
    // Functions wait. Still being added to (a push changes the list's head:
    // the new function's address, never the head's at the last look)? Let
    // the enqueuing thread finish first, up to join_defer (above).
    if (list != seen) {
      const auto now = std::chrono::steady_clock::now();
      if (seen == nullptr) deferred_since = now;
      if (now - deferred_since < join_defer) {
        seen = list;
        pause_for(join_look_gap);
        continue;
      }
    }
    seen = nullptr;
    list = batch->joins.exchange(nullptr, std::memory_order_acquire);
    waited_for_joins = false;
    host_task* in_order = nullptr;  // the list reversed: oldest first
    while (list != nullptr) {
      host_task* next = list->next;
      list->next = in_order;
      in_order = list;
      list = next;
    }
    while (in_order != nullptr) {
      std::unique_ptr<host_task> task(in_order);
      in_order = in_order->next;
      run(std::move(task));
    }
  }
  // No later function reaches this batch through the stream: then no join
  // still holds it (the enqueuing thread reads open_batch while `joining`),
  // and it may be freed below.
  host_batch* expected = batch;
  s.open_batch.compare_exchange_strong(expected, nullptr, std::memory_order_seq_cst);
  for (unsigned i = 0; s.joining.load(std::memory_order_seq_cst); ++i) {
    if (i < 64)
      word_watch::cpu_relax();
    else
      std::this_thread::yield();  // the joining thread was preempted
  }
  tls_host_stream = nullptr;
  tls_host_ticket = 0;
  tls_host_path = nullptr;
  // The stream no longer holds for the host once the gate opens, which
  // nothing can stop now: the count drops first, so that whoever saw the
  // gate pass (a synchronize of this stream) also sees this stream holding no
  // more (a signal enqueued meanwhile behind the gate wait waits for the
  // store below, a few instructions, and for nothing else).
  release_batch_hold(s);
  // Open the gate: the stream's device-side wait for this ticket passes.
  s.gate.host->store(batch->ticket, std::memory_order_release);
  delete batch;
  s.release();
}

//! The watch's function: on a runner thread (never the watcher's, never the
//! vendor's), which may block in the user's function (HOST-2) and may call
//! sluice (HOST-3).
void fire_host_batch(void* data) noexcept { run_host_batch(static_cast<host_batch*>(data)); }

//! The vendor callback (the callback path): no vendor calls allowed here, and
//! it runs on the vendor's one callback thread, so it only hands over (HOST-2,
//! HOST-3).
void hand_over(void* data) {
  auto* batch = static_cast<host_batch*>(data);
  try {
    engine().host_functions.submit([batch] { run_host_batch(batch); });
  } catch (...) {
    run_host_batch(batch);  // no memory to hand over: run it here rather than lose it
  }
}

//! How this process's host functions go (host_path.hpp), decided once, after
//! the vendor's runtime has started: a tool's library may come with it.
const host_path::choice& chosen_path() {
  static const host_path::choice chosen = [] {
    (void)engine();
    host_path::choice c = host_path::decide(host_path::this_process(
        api::default_host_path,
        {std::begin(api::launch_blocking_variables), std::end(api::launch_blocking_variables)}));
    diagnose::note_host_function_path(c.name, c.evidence);
    return c;
  }();
  return chosen;
}

using host_path_mode = host_path::mode;
host_path_mode path_mode() { return chosen_path().path; }

}  // namespace

bool kernel_launches_serialized() { return chosen_path().launches_serialized; }

namespace {

//! A begun signal-path enqueue (host_holds::begin_signal), ended on every way out.
struct signal_enqueue {
  host_holds* holds = nullptr;
  ~signal_enqueue() {
    if (holds != nullptr) holds->end_signal();
  }
};

}  // namespace

stream_state* current_host_function_stream() noexcept { return tls_host_stream; }
std::uint32_t current_host_function_ticket() noexcept { return tls_host_ticket; }

void check_not_self_wait(const stream_state& s, std::uint32_t tickets, const char* api_name) {
  if (tls_host_stream == &s && tls_host_ticket <= tickets)
    fail(errc::invalid_argument, api_name,
         "called from a host function of the stream it waits for: it would wait for itself");
}

void rethrow_host_errors(stream_state& s) { s.failures.rethrow(s.device); }

void host_holds::flag_wait(api::stream_t waiting, const std::atomic<std::uint64_t>* word,
                           std::uint64_t value) {
  std::lock_guard<std::mutex> lock(m_);
  flags_.push_back(flag_entry{waiting, word, value});
  waits_.fetch_add(1, std::memory_order_seq_cst);
}

bool host_holds::others_wait(api::stream_t own) noexcept {
  if (waits_.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lock(m_);
  int dropped = 0;
  for (std::size_t i = 0; i < flags_.size();) {
    // The device's >= on a word holding a 32-bit value (mapped_word.hpp); or
    // the stream is idle: the wait passed (the flag may be gone since, its
    // word reused and lower).
    bool passed = flags_[i].word->load(std::memory_order_acquire) >= flags_[i].value;
    if (!passed) {
      passed = api::stream_query(flags_[i].waiting).ok();
      if (!passed) api::clear_last_error();
    }
    if (passed) {
      flags_[i] = flags_.back();
      flags_.pop_back();
      ++dropped;
    } else {
      ++i;
    }
  }
  waits_.fetch_sub(dropped, std::memory_order_seq_cst);
  for (const flag_entry& e : flags_)
    if (e.waiting != own) return true;
  return false;
}

bool host_holds::begin_signal(api::stream_t own) noexcept {
  // The caller's own stream is one of holding_; its own flag waits come
  // before its signal in its own order and do not count.
  const auto clear = [this, own] {
    return holding_.load(std::memory_order_seq_cst) == 1 && !others_wait(own);
  };
  if (!clear()) return false;
  signals_.fetch_add(1, std::memory_order_seq_cst);
  if (clear()) return true;
  signals_.fetch_sub(1, std::memory_order_seq_cst);
  return false;
}

void wait_for_stream(stream_state& s, stream_state& other, const char* api_name) {
  if (&s == &other) return;  // a stream is always ordered after its own work
  std::lock_guard<spin_mutex> lock(other.enqueue_m);
  end_host_batch(other);  // the position recorded on it
  check(api::event_record(other.position, other.native), api_name,
        ": recording the position of a stream on device ", other.device);
  enqueue_scope<keep_device> scope(s, nullptr, &other);
  scope.waits_for(other.trace);
  check(api::stream_wait_event(s.native, other.position), api_name, ": stream on device ", s.device,
        " waiting for a stream on device ", other.device);
  scope.done();
}

}  // namespace detail

using detail::checked;

stream::stream(sluice::device d, stream_options o)
    : stream_ref(static_cast<detail::stream_state*>(nullptr), 0U) {
  auto& dev = detail::engine().dev(d.id(), "sluice::stream");
  const int native = detail::effective_native_priority(o, dev.range, gpu::api::default_priority);
  state_ = detail::engine().new_stream(dev, native);
  generation_ = state_->generation.load(std::memory_order_relaxed);
  detail::stream_names::adopt(state_->trace.id, std::move(o.name));
}

void reserve_streams(sluice::device d, int count, stream_options o) {
  constexpr const char* api = "sluice::reserve_streams";
  auto& dev = detail::engine().dev(d.id(), api);
  if (count < 0 || count > 4096)
    detail::fail(errc::invalid_argument, api, "count ", count, " is outside [0, 4096]");
  const int native = detail::effective_native_priority(o, dev.range, gpu::api::default_priority);
  dev.natives.reserve(dev, native, count, api);
}

stream borrow(sluice::device d, native_stream_t s) {
  constexpr const char* api = "sluice::borrow";
  auto& dev = detail::engine().dev(d.id(), api);
  if (gpu::api::is_default_stream(s))
    detail::fail(errc::invalid_argument, api,
                 "the null stream and the default streams synchronize implicitly with other "
                 "streams (IND-1): borrow a stream created non-blocking");
  if constexpr (gpu::api::can_tell_stream_device) {
    int owner = -1;
    detail::check(gpu::api::stream_device(s, &owner), api, ": the device of the native stream");
    if (owner != d.id())
      detail::fail(errc::invalid_argument, api, "the native stream belongs to device ", owner,
                   ", not to device ", d.id());
  }
  int native_priority = 0;
  detail::check(gpu::api::stream_priority(s, &native_priority), api,
                ": the priority of the native stream");
  return detail::access::make_stream(detail::engine().new_borrowed_stream(dev, s, native_priority));
}

stream::~stream() {
  if (state_ == nullptr) return;
  // A borrowed stream's owner may well have work pending on it: not worth a warning.
  const bool busy = detail::diagnose::enabled() && !state_->borrowed &&
                    gpu::api::stream_query(state_->native).code == gpu::api::not_ready;
  // Invalidate every stream_ref; pending host functions and stream-ordered
  // buffers keep the state (and the vendor stream) alive until they are done.
  state_->generation.fetch_add(1, std::memory_order_relaxed);
  detail::report_stream_destroyed(state_->device, busy, state_->failures, SLUICE_CALL_SITE(),
                                  state_->trace.id);
  // Its queue counts it no more (stream_pool::retire), whoever keeps its state.
  if (!state_->borrowed) {
    detail::engine().devices[static_cast<std::size_t>(state_->device)].natives.retire(
        state_->queue);
    state_->pool_counted = false;
  }
  state_->release();
}

device stream_ref::device() const {
  return sluice::device(checked(*this, "sluice::stream_ref::device").device);
}

priority stream_ref::priority() const {
  auto& s = checked(*this, "sluice::stream_ref::priority");
  return detail::level_of(s.native_priority, detail::engine().dev(s.device).range,
                          gpu::api::default_priority);
}

int stream_ref::native_priority() const {
  return checked(*this, "sluice::stream_ref::native_priority").native_priority;
}

std::string stream_ref::name() const {
  return detail::stream_names::of(checked(*this, "sluice::stream_ref::name").trace.id);
}

void stream_ref::set_name(std::string new_name) const {
  detail::stream_names::set(checked(*this, "sluice::stream_ref::set_name").trace.id,
                            std::move(new_name));
}

bool stream_ref::ready() const {
  auto& s = checked(*this, "sluice::stream_ref::ready");
  // Query first: a host function's error is recorded before its gate opens,
  // so once the query sees the stream complete, every error is there to throw
  // (HOST-4). Checking the errors first let a stream that completed in between
  // answer true without reporting its host function's exception (found by the
  // conformance suite against the simulated runtime, tests/fake_cudart).
  const auto q = gpu::api::stream_query(s.native);
  detail::rethrow_host_errors(s);
  if (q.code == gpu::api::not_ready) return false;
  detail::check(q, "sluice::stream_ref::ready: stream on device ", s.device);
  return true;
}

void stream_ref::synchronize() const {
  auto& s = checked(*this, "sluice::stream_ref::synchronize");
  if (detail::current_host_function_stream() == &s)
    detail::fail(errc::invalid_argument, "sluice::stream_ref::synchronize",
                 "called from a host function of this stream: it would wait for itself");
  const detail::diagnose::synchronize_scope diagnosed(SLUICE_CALL_SITE(), "stream::synchronize");
  detail::check(gpu::api::stream_synchronize(s.native),
                "sluice::stream_ref::synchronize: stream on device ", s.device);
  detail::rethrow_host_errors(s);
}

void stream_ref::wait(stream_ref other) const {
  auto& s = checked(*this, "sluice::stream_ref::wait");
  auto& o = checked(other, "sluice::stream_ref::wait");
  detail::wait_for_stream(s, o, "sluice::stream_ref::wait");
}

void stream_ref::enqueue_host_task(std::unique_ptr<detail::host_task> task) const {
  constexpr const char* api = "sluice::stream_ref::host_func";
  auto& s = checked(*this, api);
  if (detail::trace::enabled()) [[unlikely]]
    task = detail::traced_host_task(s, std::move(task));
  detail::enqueue_host(s, std::move(task), api);
}

namespace detail {

void enqueue_host(stream_state& s, std::unique_ptr<host_task> task, const char* api_name) {
  std::lock_guard<spin_mutex> lock(s.enqueue_m);
  if (!s.native_escaped.load(std::memory_order_relaxed)) {
    // Join the batch of the host function enqueued just before, if it is still
    // running or waiting: its gate opens only after this one has run too.
    // `joining` keeps the batch from being freed meanwhile (run_host_batch).
    s.joining.store(true, std::memory_order_seq_cst);
    if (host_batch* open = s.open_batch.load(std::memory_order_seq_cst)) {
      host_task* head = open->joins.load(std::memory_order_relaxed);
      while (head != closed_batch()) {
        task->next = head;
        if (open->joins.compare_exchange_weak(head, task.get(), std::memory_order_release,
                                              std::memory_order_relaxed)) {
          (void)task.release();  // the runner's now
          s.joining.store(false, std::memory_order_release);
          return;
        }
      }
      task->next = nullptr;
    }
    s.joining.store(false, std::memory_order_release);
  }
  const host_path_mode mode = path_mode();
  if (mode == host_path_mode::invalid)
    fail(errc::invalid_argument, api_name,
         "SLUICE_HOST_FUNC_PATH must be auto, signal, kernel or callback");
  // A borrowed stream's owner enqueues what sluice does not see: the callback.
  const bool may_signal = mode == host_path_mode::signal || mode == host_path_mode::kernel ||
                          (mode == host_path_mode::automatic && !s.borrowed);
  // Before anything is enqueued: a watcher that cannot start loses nothing.
  if (may_signal) {
    try {
      word_watch::ensure_started();
    } catch (const std::system_error& e) {
      fail(errc::backend_failure, api_name,
           "cannot start sluice's host-function threads: ", e.what());
    }
  }
  // The batch holds s for the host from here until its gate opens; the signal
  // only where no other stream of the device holds for the host now
  // (host_holds.hpp). Otherwise the gate kernel (host_gate.hpp), or the
  // vendor callback where the kernel cannot be launched; both enqueue after
  // any signal-path enqueue in progress.
  host_holds& holds = engine().devices[static_cast<std::size_t>(s.device)].holds;
  announce_batch_hold(s);
  signal_enqueue in_progress;
  bool by_signal = mode == host_path_mode::signal;
  if (mode == host_path_mode::automatic && may_signal && holds.begin_signal(s.native)) {
    in_progress.holds = &holds;
    by_signal = true;
  }
  if (in_progress.holds == nullptr) holds.before_hold();
  bool enqueued = false;  // the hold stays announced once anything is enqueued
  struct unannounce {
    stream_state& s;
    const bool& enqueued;
    ~unannounce() {
      if (!enqueued) release_batch_hold(s);
    }
  } undo{s, enqueued};
  auto batch = std::make_unique<host_batch>();
  batch->first = std::move(task);
  batch->stream = &s;
  if (!by_signal) batch->path = "callback";  // or "kernel", below
  // The ticket is read from here on, never from `batch`: once watched, the
  // batch may run, and be freed, before the next line.
  const std::uint32_t ticket = s.host_functions + 1;
  batch->ticket = ticket;
  batch->watch.word = s.signal.host;
  batch->watch.target = ticket;
  batch->watch.fn = fire_host_batch;
  batch->watch.arg = batch.get();
  // Open for joining before the signal: afterwards the batch may be gone.
  // Joining needs enqueue_m, held here until the gate wait is enqueued.
  s.open_batch.store(batch.get(), std::memory_order_seq_cst);
  // The stream signals once the work before the batch is done, then waits
  // until the batch has run and opened the gate (so later work waits for it:
  // HOST-1). No vendor callback: sluice's watcher sees the signal.
  s.add_ref();
  // A host function holds the stream until sluice's thread has run it: no
  // stream pool makes vendor streams meanwhile (IND-4). Only around the vendor
  // calls: a thread that makes streams may hold a lock this one waits for.
  const stream_pool::hold_scope hold(engine().devices[static_cast<std::size_t>(s.device)].natives);
  // The signal is enqueued (by the gate kernel or a stream memory operation):
  // the watcher runs the batch once the stream stores it, whatever happens next.
  const auto watch_signal = [&](std::atomic<std::uint64_t>& batches_by_path) {
    enqueued = true;
    s.host_functions = ticket;
    s.host_functions_published.store(ticket, std::memory_order_release);
    word_watch::start(batch.release()->watch);
    batches_by_path.fetch_add(1, std::memory_order_relaxed);
    s.gate_enqueued.store(ticket, std::memory_order_release);  // the batch may run now
  };
  if (!by_signal && may_signal && mode != host_path_mode::callback) {
    // The gate kernel: its signal is seen by the watcher, as the signal path's.
    // A launch that failed enqueued nothing: the callback instead (counted).
    batch->path = "kernel";
    const device_current on_device(s);
    const auto launched =
        gpu::api::stream_gate_kernel(s.native, s.signal.device, ticket, s.gate.device, ticket);
    if (launched.ok()) {
      watch_signal(batches_by_kernel);
      return;
    }
    gpu::api::clear_last_error();
    kernel_launch_failures.fetch_add(1, std::memory_order_relaxed);
    batch->path = "callback";
  }
  if (!by_signal) {
    // The callback path: the vendor's callback hands the batch to a sluice
    // thread (hand_over); then the same gate wait.
    const auto launched = gpu::api::launch_host_func<hand_over>(s.native, batch.get());
    if (!launched.ok()) {
      end_host_batch(s);
      s.release();
      check(launched, api_name, ": stream on device ", s.device);
    }
    (void)batch.release();  // owned by the callback now
    enqueued = true;
    batches_by_callback.fetch_add(1, std::memory_order_relaxed);
    s.host_functions = ticket;
    s.host_functions_published.store(ticket, std::memory_order_release);
    const auto held = gpu::api::stream_wait_value(s.native, s.gate.device, ticket);
    s.gate_enqueued.store(ticket, std::memory_order_release);  // the batch may run now
    if (!held.ok()) {
      // The functions still run (the callback is enqueued) but later work would
      // not wait for them: report it, the stream is broken.
      end_host_batch(s);
      check(held, api_name, ": holding the stream on device ", s.device,
            " until the host function returns");
    }
    return;
  }
  const auto signalled =
      gpu::api::stream_signal_then_wait(s.native, s.signal.device, ticket, s.gate.device, ticket);
  if (signalled.nothing_enqueued) {
    end_host_batch(s);
    s.release();
    check(signalled.result, api_name, ": stream on device ", s.device);
  }
  watch_signal(batches_by_signal);
  if (!signalled.result.ok()) {
    // The functions still run (the signal is enqueued) but later work would
    // not wait for them: report it, the stream is broken.
    end_host_batch(s);
    check(signalled.result, api_name, ": holding the stream on device ", s.device,
          " until the host function returns");
  }
}

}  // namespace detail

void stream_ref::write_value(flag& f, std::uint32_t v) const {
  auto& s = checked(*this, "sluice::stream_ref::write_value");
  detail::add_flag_user(*detail::access::state(f), s);
  detail::enqueue_scope<detail::keep_device> scope(s, "write_value");
  detail::check(gpu::api::stream_write_value(s.native, detail::access::state(f)->w.device, v),
                "sluice::stream_ref::write_value: stream on device ", s.device);
  scope.done();
}

void stream_ref::wait_value(const flag& f, std::uint32_t v) const {
  auto& s = checked(*this, "sluice::stream_ref::wait_value");
  detail::add_flag_user(*detail::access::state(f), s);
  detail::enqueue_scope<detail::keep_device> scope(s, "wait_value");
  {
    // Holds the stream until the host stores the flag: no stream pool makes
    // vendor streams meanwhile (IND-4). Only around the vendor call: the tracer
    // above may take the tracer's stream from the pool.
    auto& dev = detail::engine().devices[static_cast<std::size_t>(s.device)];
    // A hold for the host: no host function of another stream takes the signal
    // meanwhile (host_holds.hpp); counted until the flag reaches v. Before the
    // hold scope: waiting for a signal enqueue inside one could deadlock with
    // the pool's making of streams.
    // (A flag that has the value already holds nothing.)
    const detail::word& w = detail::access::state(f)->w;
    if (w.host->load(std::memory_order_acquire) < v) {
      try {
        dev.holds.flag_wait(s.native, w.host, v);
      } catch (const std::bad_alloc&) {
        detail::fail(errc::out_of_memory, "sluice::stream_ref::wait_value",
                     "no memory to note the wait");
      }
      dev.holds.before_hold();
    }
    const detail::stream_pool::hold_scope hold(dev.natives);
    detail::check(gpu::api::stream_wait_value(s.native, detail::access::state(f)->w.device, v),
                  "sluice::stream_ref::wait_value: stream on device ", s.device);
  }
  scope.done();
}

native_stream_t native_handle(stream_ref s) {
  auto& st = checked(s, "sluice::native_handle");
  // Work enqueued through the handle is invisible to sluice: from now on no
  // host function joins a batch that could run before such work.
  if (!st.native_escaped.load(std::memory_order_relaxed)) {
    std::lock_guard<detail::spin_mutex> lock(st.enqueue_m);
    st.native_escaped.store(true, std::memory_order_relaxed);
    detail::end_host_batch(st);
  }
  if (detail::trace::enabled()) [[unlikely]]
    detail::trace_native_taken(st);
  return st.native;
}

}  // namespace sluice

namespace sluice::detail {

//! A foreign operation on the GPU backends: a traced operation around the
//! other library's vendor call (timing events before and after it).
struct foreign_op {
  foreign_op(stream_state& s, const char* kind) : scope(s, kind) {}
  enqueue_scope<keep_device> scope;
};

int device_memory_of(const void* p) noexcept {
  // sluice's own allocations from its map (a per-thread cache, no vendor
  // call: sluice::comm asks twice per operation); other memory from the vendor.
  if (const range_lookup r = allocations().find(p, 1); r.owner != nullptr) return r.device;
  int device = -1;
  if (!gpu::api::device_memory_of(p, &device).ok()) {
    gpu::api::clear_last_error();
    return -1;
  }
  return device;
}

// Work enqueued on the native handle (a kernel) is not seen here.
std::uint64_t enqueued_count(stream_ref) noexcept { return unknown_count; }

host_function_paths host_function_path_counts() noexcept {
  return {batches_by_signal.load(std::memory_order_relaxed),
          batches_by_callback.load(std::memory_order_relaxed),
          batches_by_kernel.load(std::memory_order_relaxed),
          kernel_launch_failures.load(std::memory_order_relaxed)};
}

host_function_path_choice host_function_path() {
  const host_path::choice& c = chosen_path();
  return {c.name, c.evidence};
}

const char* running_host_function_path() noexcept { return tls_host_path; }

void report_stream_failure(stream_ref s, errc code, std::string message) {
  auto& st = checked(s, "sluice::detail::report_stream_failure");
  st.failures.add(code, std::move(message));
}

foreign_op* begin_foreign_op(stream_ref s, const char* kind, const char* label) {
  if (!trace::enabled()) return nullptr;
  auto& st = checked(s, "sluice::detail::begin_foreign_op");
  auto op = std::make_unique<foreign_op>(st, kind);
  op->scope.label(label);
  return op.release();
}

void end_foreign_op(foreign_op* op) noexcept {
  if (op == nullptr) return;
  try {
    op->scope.done();
  } catch (...) {  // the trace misses this operation; the work itself was enqueued
  }
  delete op;
}

}  // namespace sluice::detail
