// A sluice stream on the GPU backend: a pooled vendor stream (stream_pool.hpp)
// created non-blocking with the effective priority. Its state is pooled and
// never freed, so that stream_refs to a destroyed stream are detected by a
// generation counter (LIFE-2). Host functions run on sluice's own threads:
// the stream stores the function's ticket into its signal word, sluice's word
// watcher (host_func/word_watch.hpp) sees it and hands the function to a runner
// thread, and the stream waits device-side on its gate word until the
// function has returned, so
// host functions of different streams run concurrently (HOST-2) and may call
// sluice (HOST-3). wait(stream other) records other's position event and makes
// this stream wait on it, under other's lock, so that concurrent waits do not
// capture a later position (IND-3). Defined in stream.cpp, host_func/ (host
// functions) and stream_states.cpp (release).
#pragma once

#include "backend_rules.hpp"
#include "checks.hpp"
#include "mapped_word.hpp"
#include "spin_mutex.hpp"
#include "trace/gpu_trace.hpp"
#include "vendor.hpp"

#include <sluice/event.hpp>
#include <sluice/flag.hpp>
#include <sluice/stream.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::detail {

struct staging_set;  // pinned slots, a helper stream and events of a staged peer copy (staging.cpp)
struct host_batch;   // host functions behind one signal and one gate wait (host_func/batch.hpp)

//! What every enqueue reads comes first, in one cache line: the vendor's call
//! in between evicts much of the caller's data, and each further line read
//! back costs the enqueue a cache miss (the copy rows of
//! docs/results/runs/2026-11-23-api-overhead-h100.md).
struct stream_state {
  api::stream_t native{};
  int device = 0;
  int native_priority = 0;
  api::context_t context{};  // its device's (device_current: no lookup in the engine)
  std::atomic<std::uint32_t> generation{1};
  ref_count refs;
  // Consecutive host functions share one signal and one gate wait: fewer
  // stream operations, and one hand-off to a runner per batch. open_batch is the batch that later
  // host functions may join: set under enqueue_m, cleared by every other enqueue on the
  // stream (end_host_batch) and by the batch when it finishes.
  std::atomic<host_batch*> open_batch{nullptr};
  // native_handle() was taken: work sluice does not see may be enqueued, so
  // host functions are never batched on this stream.
  std::atomic<bool> native_escaped{false};
  // Made by sluice::borrow: the vendor stream is its owner's (never pooled).
  bool borrowed = false;
  // Orders the vendor calls of one sluice operation (host function: the
  // signal and the gate wait; wait(stream): record and wait) against the
  // same operation from another thread.
  spin_mutex enqueue_m;
  word gate;    // host function n of this stream opens it by storing n
  word signal;  // the stream stores n when the work before host function n is done
  std::uint32_t host_functions = 0;                        // tickets issued, under enqueue_m
  std::atomic<std::uint32_t> host_functions_published{0};  // for self-wait checks
  api::event_t position{};   // recorded by wait(stream_ref this), under enqueue_m
  int queue = 0;             // the pooled vendor stream's hardware queue (stream_pool.hpp)
  bool pool_counted = true;  // still a user of `queue` in the pool (until ~stream: retire())
  // Host-function batches enqueued whose gates have not opened: while any, the
  // stream holds for the host (host_func/host_holds.hpp).
  std::atomic<std::uint32_t> pending_batches{0};
  // Makes a change of pending_batches and the device's count of holding
  // streams one step (announce_batch_hold, release_batch_hold): otherwise a
  // batch's release between its two steps let the next batch of the same
  // stream count it a second time (host_holds::begin_signal then saw two
  // streams holding and sent a stream alone to the callback; seen once in CI,
  // sim.host_path.cuda under load).
  spin_mutex hold_m;

  // An enqueue is joining open_batch's batch (under enqueue_m): its runner
  // frees the batch only once the join is over (run_host_batch).
  std::atomic<bool> joining{false};
  // The last ticket whose gate wait is enqueued: a batch runs only from then
  // on (run_host_batch), so that what its functions enqueue on this stream
  // lands behind the gate.
  std::atomic<std::uint32_t> gate_enqueued{0};

  // Host functions that threw (HOST-4) and failed communications, not yet reported.
  stream_failures failures;

  stream_trace trace;  // the tracer's (gpu_trace.hpp)

  // Staged peer copies (staging.cpp): the sets this stream used, reused by
  // its later staged copies and pooled when the stream is recycled.
  std::mutex staging_m;
  std::vector<staging_set*> staging;

  stream_state* pool_next = nullptr;

  void add_ref() noexcept { refs.add(); }
  bool try_add_ref() noexcept { return refs.try_add(); }
  void release() noexcept;
};

//! Every enqueue on a stream other than host_func calls this first (device
//! work: through enqueue_scope.hpp): later host functions must not join a
//! batch that runs before this work.
inline void end_host_batch(stream_state& s) noexcept {
  if (s.open_batch.load(std::memory_order_relaxed) != nullptr)
    s.open_batch.store(nullptr, std::memory_order_relaxed);
}

//! The backend's view of the public handles.
struct access {
  static stream_state* state(stream_ref s) noexcept { return s.state_; }
  static std::uint32_t generation(stream_ref s) noexcept { return s.generation_; }
  static event_state* state(const event& e) noexcept { return e.state_; }
  static flag_state* state(const flag& f) noexcept { return f.state_; }
  static stream_ref make_ref(stream_state* s) noexcept {
    return stream_ref(s, s->generation.load(std::memory_order_relaxed));
  }
  static stream make_stream(stream_state* s) noexcept {
    return stream(s, s->generation.load(std::memory_order_relaxed));
  }
};

//! The live state of a stream_ref; errc::invalid_handle for moved-from or
//! destroyed ones. For what enqueues nothing and asks the vendor nothing
//! (device(), name(), native_handle()); operations use checked().
inline stream_state& checked_handle(stream_ref s, const char* api_name) {
  stream_state* st = access::state(s);
  if (st == nullptr) [[unlikely]]
    fail(errc::invalid_handle, api_name, "the stream is empty (moved from)");
  if (st->generation.load(std::memory_order_relaxed) != access::generation(s)) [[unlikely]]
    fail(errc::invalid_handle, api_name,
         "the stream was destroyed (a stream_ref outlived its stream)");
  return *st;
}

//! errc::capture_violation when the vendor captures s's native stream outside
//! sluice (a library's own capture of a stream sluice borrowed): a sluice
//! operation there would join that capture unseen, or spoil it
//! (graph_capture.cpp).
void refuse_foreign_capture(stream_state& s, const char* api_name);

//! checked(), and for a stream borrowed from its owner, whom sluice cannot
//! see capture it, refuse_foreign_capture(): one vendor query per operation
//! on a borrowed stream, none on sluice's own.
inline stream_state& checked(stream_ref s, const char* api_name) {
  stream_state& st = checked_handle(s, api_name);
  if (st.borrowed) [[unlikely]]
    refuse_foreign_capture(st, api_name);
  return st;
}

//! Throws errc::host_function_failed, once, for host functions of s that threw.
void rethrow_host_errors(stream_state& s);

//! The stream whose host function the calling thread runs, and its ticket.
stream_state* current_host_function_stream() noexcept;
std::uint32_t current_host_function_ticket() noexcept;

//! errc::invalid_argument when called from a host function of s whose ticket
//! is <= `tickets` (the work waited for comes after that function).
void check_not_self_wait(const stream_state& s, std::uint32_t tickets, const char* api_name);

//! Makes `s` wait for everything enqueued on `other` so far (IND-3, also used by frees).
void wait_for_stream(stream_state& s, stream_state& other, const char* api_name);

//! Enqueues a host task on s (host_func, and copies between host buffers):
//! ordered after earlier work, later work waits until it has run (HOST-1).
void enqueue_host(stream_state& s, std::unique_ptr<host_task> task, const char* api_name);
//! On a thread running a host-function batch: the path it came by ("signal"
//! or "callback"); elsewhere null.
const char* running_host_function_path() noexcept;

}  // namespace sluice::detail
