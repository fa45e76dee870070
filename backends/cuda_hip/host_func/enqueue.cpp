// Enqueueing a host function on the GPU backend (stream_ref::host_func, and
// copies between host buffers): the function joins its stream's open batch
// (joins.hpp), or starts a batch whose device side goes by one path, chosen
// once per batch in choose_batch_path from the process's mode
// (chosen_path.hpp): the signal (a stream memory write the word watcher sees,
// then a stream memory wait for the gate), the gate kernel (host_gate.hpp:
// it stores the signal and spins on the gate), or the vendor callback (it
// hands the batch to a sluice thread, then the same memory wait). The batch
// runs on a runner thread (batch.hpp).
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "host_func/batch.hpp"
#include "host_func/chosen_path.hpp"
#include "host_func/host_holds.hpp"
#include "host_func/joins.hpp"
#include "host_func/word_watch.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"

#include <sluice/detail/interop.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <system_error>
#include <utility>

namespace sluice {

using detail::checked;

void stream_ref::enqueue_host_task(std::unique_ptr<detail::host_task> task) const {
  constexpr const char* api = "sluice::stream_ref::host_func";
  auto& s = checked(*this, api);
  if (detail::any_capture()) [[unlikely]]
    if (detail::record_host_task_if_capturing(s, task)) return;
  if (detail::trace::enabled()) [[unlikely]]
    task = detail::traced_host_task(s, std::move(task));
  detail::enqueue_host(s, std::move(task), api);
}

namespace detail {

namespace {

// Host-function batches per path since the process started (host_function_path_counts).
std::atomic<std::uint64_t> batches_by_signal{0};
std::atomic<std::uint64_t> batches_by_kernel{0};
std::atomic<std::uint64_t> batches_by_callback{0};
std::atomic<std::uint64_t> kernel_launch_failures{0};

using host_path_mode = host_path::mode;

//! A begun signal-path enqueue (host_holds::begin_signal), ended on every way out.
struct signal_enqueue {
  host_holds* holds = nullptr;
  ~signal_enqueue() {
    if (holds != nullptr) holds->end_signal();
  }
};

//! How one batch's device side goes (the paths of docs/design.md "Host
//! functions"; `auto` is a mode that picks signal or kernel per batch).
enum class batch_path { signal, kernel, callback };

const char* name_of(batch_path p) noexcept {
  switch (p) {
    case batch_path::signal: return "signal";
    case batch_path::kernel: return "kernel";
    case batch_path::callback: return "callback";
  }
  return "callback";
}

//! The path of a batch of s, chosen here and nowhere else, after the batch's
//! hold was announced: `signal` and `kernel` as the mode says; under `auto`
//! the signal only where no other stream of the device holds for the host now
//! (host_holds.hpp), its enqueue then in progress until `in_progress` ends,
//! else the gate kernel; the callback where the mode says so, or where the
//! stream may not be signalled (`may_signal`: under `auto`, a borrowed
//! stream). A gate kernel whose launch fails still takes the callback
//! (enqueue_host).
batch_path choose_batch_path(host_path_mode mode, bool may_signal, stream_state& s,
                             host_holds& holds, signal_enqueue& in_progress) noexcept {
  if (mode == host_path_mode::signal) return batch_path::signal;
  if (mode == host_path_mode::automatic && may_signal && holds.begin_signal(s.native)) {
    in_progress.holds = &holds;
    return batch_path::signal;
  }
  return may_signal ? batch_path::kernel : batch_path::callback;
}

}  // namespace

void enqueue_host(stream_state& s, std::unique_ptr<host_task> task, const char* api_name) {
  std::lock_guard<spin_mutex> lock(s.enqueue_m);
  if (join_open_batch(s, task)) return;
  const host_path_mode mode = chosen_host_path().path;
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
  // The batch holds s for the host from here until its gate opens; then its
  // path (choose_batch_path). The gate kernel and the vendor callback enqueue
  // after any signal-path enqueue in progress.
  host_holds& holds = engine().devices[static_cast<std::size_t>(s.device)].holds;
  announce_batch_hold(s);
  signal_enqueue in_progress;
  batch_path path = choose_batch_path(mode, may_signal, s, holds, in_progress);
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
  batch->path = name_of(path);
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
  if (path == batch_path::kernel) {
    // The gate kernel: its signal is seen by the watcher, as the signal path's.
    // A launch that failed enqueued nothing: the callback instead (counted).
    const device_current on_device(s);
    const auto launched =
        gpu::api::stream_gate_kernel(s.native, s.signal.device, ticket, s.gate.device, ticket);
    if (launched.ok()) {
      watch_signal(batches_by_kernel);
      return;
    }
    gpu::api::clear_last_error();
    kernel_launch_failures.fetch_add(1, std::memory_order_relaxed);
    path = batch_path::callback;
    batch->path = name_of(path);
  }
  if (path == batch_path::callback) {
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

host_function_paths host_function_path_counts() noexcept {
  return {batches_by_signal.load(std::memory_order_relaxed),
          batches_by_callback.load(std::memory_order_relaxed),
          batches_by_kernel.load(std::memory_order_relaxed),
          kernel_launch_failures.load(std::memory_order_relaxed)};
}

}  // namespace detail

}  // namespace sluice
