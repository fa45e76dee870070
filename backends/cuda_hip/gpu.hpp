// The GPU backend (sluice::cuda and sluice::hip): one implementation written
// against a vendor API traits type, `api` (cuda_api.hpp / hip_api.hpp, chosen
// by the build through SLUICE_GPU_API_HEADER and SLUICE_GPU_API). Nothing in
// backends/cuda_hip/*.cpp names a vendor; every difference lives in the traits.
//
// Model (docs/design.md has the long form):
// - A sluice stream is a vendor stream created non-blocking with the effective
//   priority. Its state is pooled and never freed, so that stream_refs to a
//   destroyed stream are detected by a generation counter (LIFE-2).
// - Host functions run on sluice's own threads. The vendor callback only hands
//   the function over; the stream then waits device-side on the stream's gate
//   word (stream memory operation on host-mapped memory) until the function
//   has returned. So host functions of different streams run concurrently
//   (HOST-2) and may call sluice (HOST-3).
// - wait(stream other) records other's position event and makes this stream
//   wait on it, under other's lock so that concurrent waits do not capture a
//   later position (IND-3).
// - device_buffer memory comes from a sluice pool per device without hidden
//   cross-stream reuse dependencies; frees never block the caller. A
//   stream-ordered buffer is freed on its stream; a synchronous one on a
//   sluice thread once the streams that may use it have passed the moment of
//   destruction (no device queue ever waits on behalf of a free).
// - Calls that need a current device set it for their own duration and restore
//   it (XDEV-2); hot paths (record, wait, copy, ready) need none.
#pragma once

#include SLUICE_GPU_API_HEADER

#include "backend_rules.hpp"
#include "checks.hpp"
#include "diagnose.hpp"
#include "peer_plan.hpp"
#include "spin_mutex.hpp"
#include "stream_pool.hpp"
#include "trace.hpp"

#include <sluice/device.hpp>
#include <sluice/event.hpp>
#include <sluice/flag.hpp>
#include <sluice/memory.hpp>
#include <sluice/native.hpp>
#include <sluice/peer.hpp>
#include <sluice/stream.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sluice::gpu {
using api = SLUICE_GPU_API;
}

namespace sluice::detail {

using gpu::api;

// --- errors ------------------------------------------------------------------

//! Throws the sluice::error for a failed vendor call: portable code, vendor
//! code and name, the call, and `context` (operation and devices).
[[noreturn]] void vendor_fail(api::status s, const std::string& context);

template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

//! Throws unless s succeeded. The message parts are formatted only on failure.
template <class... Parts>
inline void check(api::status s, Parts&&... parts) {
  if (!s.ok()) [[unlikely]]
    vendor_fail(s, concat(std::forward<Parts>(parts)...));
}

//! Sets the calling thread's current device for a scope and restores it (XDEV-2).
class scoped_device {
 public:
  explicit scoped_device(int d);
  ~scoped_device();
  scoped_device(const scoped_device&) = delete;
  scoped_device& operator=(const scoped_device&) = delete;

 private:
  int previous_ = -1;
};

// --- host-mapped words (flags, host-function gates) ----------------------------

//! A 64-bit word holding a 32-bit value zero-extended (see the traits: a
//! 64-bit compare is what makes the device's >= an unsigned one).
struct word {
  std::atomic<std::uint64_t>* host = nullptr;  // the host's view
  void* device = nullptr;                      // the address stream memory operations use
};
word allocate_word();
void free_word(word w) noexcept;

// --- streams -------------------------------------------------------------------

struct staging_set;  // pinned slots, a helper stream and events of a staged peer copy (staging.cpp)
struct host_batch;   // host functions behind one vendor callback and one gate wait (stream.cpp)

//! What every enqueue reads comes first, in one cache line: the vendor's call
//! in between evicts much of the caller's data, and each further line read
//! back costs the enqueue a cache miss (docs/performance.md, api_overhead).
struct stream_state {
  api::stream_t native{};
  int device = 0;
  int native_priority = 0;
  api::context_t context{};  // its device's (device_current: no lookup in the engine)
  std::atomic<std::uint32_t> generation{1};
  ref_count refs;
  // Consecutive host functions share one vendor callback and one gate wait:
  // the vendor queues only about 55 callbacks separated by device work on a
  // held stream (bench/queue_depth.cpp), and consecutive raw callbacks do not
  // count against it. open_batch is the batch that later host functions may
  // join: set under enqueue_m and batch_m, cleared by every other enqueue on
  // the stream (end_host_batch) and by the batch when it finishes.
  std::atomic<host_batch*> open_batch{nullptr};
  // native_handle() was taken: work sluice does not see may be enqueued, so
  // host functions are never batched on this stream.
  std::atomic<bool> native_escaped{false};
  // Orders the two vendor calls of one sluice operation (host function: the
  // callback and the gate wait; wait(stream): record and wait) against the
  // same operation from another thread.
  spin_mutex enqueue_m;
  word gate;                         // host function n of this stream opens it by storing n
  std::uint32_t host_functions = 0;  // tickets issued, under enqueue_m
  std::atomic<std::uint32_t> host_functions_published{0};  // for self-wait checks
  api::event_t position{};  // recorded by wait(stream_ref this), under enqueue_m
  int queue = 0;            // the pooled vendor stream's hardware queue (stream_pool.hpp)

  std::mutex batch_m;  // with enqueue_m, guards setting open_batch

  // Messages of host functions that threw, not yet reported (HOST-4).
  std::mutex errors_m;
  std::vector<std::string> errors;
  std::atomic<bool> has_errors{false};

  // Tracing (trace.cpp): the stream's id in traces (new per stream), the last
  // position given to a traced operation, and the lock that keeps a traced
  // operation's timing events next to it.
  std::uint64_t trace_id = 0;
  std::atomic<std::uint64_t> trace_seq{0};
  std::mutex trace_m;
  // Under trace_m: the timing event that ended the stream's last traced
  // operation (the next one starts there) and the trace it belongs to.
  void* trace_last = nullptr;
  std::uint64_t trace_epoch = 0;

  // Staged peer copies (staging.cpp): the sets this stream used, reused by
  // its later staged copies and pooled when the stream is recycled.
  std::mutex staging_m;
  std::vector<staging_set*> staging;

  stream_state* pool_next = nullptr;

  void add_ref() noexcept { refs.add(); }
  bool try_add_ref() noexcept { return refs.try_add(); }
  void release() noexcept;
};

//! Every enqueue on a stream other than host_func calls this first: later
//! host functions must not join a batch that runs before this work.
inline void end_host_batch(stream_state& s) noexcept {
  if (s.open_batch.load(std::memory_order_relaxed) != nullptr)
    s.open_batch.store(nullptr, std::memory_order_relaxed);
}

struct access {
  static stream_state* state(stream_ref s) noexcept { return s.state_; }
  static std::uint32_t generation(stream_ref s) noexcept { return s.generation_; }
  static event_state* state(const event& e) noexcept { return e.state_; }
  static flag_state* state(const flag& f) noexcept { return f.state_; }
};

//! The live state of a stream_ref; errc::invalid_handle for moved-from or destroyed ones.
inline stream_state& checked(stream_ref s, const char* api_name) {
  stream_state* st = access::state(s);
  if (st == nullptr) [[unlikely]]
    fail(errc::invalid_handle, api_name, "the stream is empty (moved from)");
  if (st->generation.load(std::memory_order_relaxed) != access::generation(s)) [[unlikely]]
    fail(errc::invalid_handle, api_name,
         "the stream was destroyed (a stream_ref outlived its stream)");
  return *st;
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

// --- events ----------------------------------------------------------------------

struct event_state {
  api::event_t native{};
  int device = 0;
  event_options options;
  std::atomic<bool> recorded{false};
  // The last record's stream and its host-function count then (self-wait check).
  std::atomic<stream_state*> record_stream{nullptr};
  std::atomic<std::uint32_t> record_tickets{0};
  diagnose::event_usage usage;  // SLUICE_DIAGNOSE: recorded and never used
  // Tracing: the stream and position of the last traced record (for wait arrows).
  std::atomic<std::uint64_t> trace_stream{0};
  std::atomic<std::uint64_t> trace_seq{0};
  // Tracing, under the tracer's lock: the slot whose time is the last traced
  // record's (a wait on the event ends no earlier), in the trace `trace_mark_epoch`.
  void* trace_mark = nullptr;
  std::uint64_t trace_mark_epoch = 0;
};

//! Gives back the event's trace slot (from ~event, when it holds one).
void trace_forget_event(event_state& e) noexcept;

// --- tracing (trace.cpp) -------------------------------------------------------

struct traced_op_state;

//! Times one device-side operation while a trace is collected, with a timing
//! event after it on its stream; it starts where the stream's previous traced
//! operation ended, or, for the first one and on streams whose native handle
//! was taken (the user's own work may lie between), at a timing event recorded
//! before it. Everything happens under the stream's trace_m, so that no other
//! thread's work lands in between. Construct it after the argument checks and
//! before the vendor call; call done() after the vendor call. While no trace
//! is collected it costs one relaxed load.
class traced_op {
 public:
  //! instant: the operation takes no device time of its own (an event
  //! record): it is timed where the stream's previous traced operation ended,
  //! or when it was enqueued if later, without a timing event of its own.
  traced_op(stream_state& s, const char* kind, std::size_t bytes = 0, bool instant = false) {
    if (trace::enabled()) [[unlikely]]
      begin(s, kind, bytes, instant);
  }
  //! A wait of s for an event's last record or for another stream's work so
  //! far (one of the two): on one device, where the trace knows when that
  //! completes, it ends at the later of that and the stream's last traced
  //! operation, without a timing event of its own.
  traced_op(stream_state& s, event_state* waited_event, stream_state* waited_stream) {
    if (trace::enabled()) [[unlikely]]
      begin_wait(s, waited_event, waited_stream);
  }
  ~traced_op() {
    if (state_ != nullptr) [[unlikely]]
      abandon();
  }
  traced_op(const traced_op&) = delete;
  traced_op& operator=(const traced_op&) = delete;

  //! Arguments of the record: a copy's path, the position a wait waits for.
  void path(const char* p) noexcept;
  void waits_for(std::uint64_t stream, std::uint64_t seq) noexcept;
  //! The position this operation got in its stream (0 when not traced).
  std::uint64_t seq() const noexcept;
  //! This operation records e: waits on e end no earlier than it (see above).
  void marks(event_state& e) noexcept;
  //! The operation was enqueued: time its end.
  void done() {
    if (state_ != nullptr) [[unlikely]]
      finish();
  }

 private:
  void begin(stream_state& s, const char* kind, std::size_t bytes, bool instant);
  void begin_wait(stream_state& s, event_state* waited_event, stream_state* waited_stream);
  void finish();
  void abandon() noexcept;
  traced_op_state* state_ = nullptr;
};

//! host_func while tracing: the task, wrapped to stamp its start and end with
//! the host clock where it runs (host functions run on sluice threads). Also
//! a copy run on the host (kind "copy", path "host").
std::unique_ptr<host_task> traced_host_task(stream_state& s, std::unique_ptr<host_task> task,
                                            const char* kind = "host_func", std::size_t bytes = 0,
                                            const char* path = nullptr);

//! Enqueues a host task on s (host_func, and copies between host buffers):
//! ordered after earlier work, later work waits until it has run (HOST-1).
void enqueue_host(stream_state& s, std::unique_ptr<host_task> task, const char* api_name);

struct flag_state {
  word w;
  // Streams that wait on or write this flag (each holds a reference): the word
  // is reused only after they passed the moment the flag was destroyed, so a
  // stream still waiting never sees a later flag's value.
  std::mutex m;
  std::vector<stream_state*> users;
};

//! Notes that s waits on or writes f.
void add_flag_user(flag_state& f, stream_state& s);

// --- memory ----------------------------------------------------------------------

struct allocation {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  std::size_t block = 0;           // pinned: the cached block's size (>= bytes)
  int device = -1;                 // -1: pinned host memory
  stream_state* stream = nullptr;  // stream-ordered allocation: its stream (holds a ref)
  std::mutex m;
  std::vector<stream_state*> recorded;  // record_stream (hold refs)
};

// --- devices and the engine -----------------------------------------------------------

//! Per-device state, set up at first use of the device.
struct device_state {
  int id = 0;
  std::once_flag ready;
  std::string name;
  priority_range range{0, 0};
  int hardware_queues = 1;
  api::pool_t pool{};
  api::context_t context{};  // the vendor context of this device (CUDA: its primary context)
  // Blocks of the SM copy kernel for a full-size launch (4 per multiprocessor);
  // 0 when the kernel cannot run here (no code for this device, or a runtime
  // without kernels): peer copies then always use the copy engine.
  unsigned sm_blocks = 0;
  api::stream_t
      alloc_stream{};  // synchronous device_buffer allocations and their frees; never waits

  // Vendor streams made ahead of need: no sluice call creates one while the
  // device may be busy (IND-4, stream_pool.hpp).
  stream_pool natives;

  std::mutex
      streams_m;  // live streams of the device (frees of synchronous allocations wait on them)
  std::vector<stream_state*> streams;

  std::mutex events_m;  // pooled non-timing events for internal waits
  std::vector<api::event_t> events;
};

//! Runs functions on sluice threads: host functions, and deferred vendor calls
//! that may block (pinned frees, stream destruction where it blocks).
class worker_pool {
 public:
  void submit(std::function<void()> f);
  //! Waits until no function is queued or running, at most `limit`; false if
  //! some still were (at exit: a free waiting for a stream that never ends).
  bool drain(std::chrono::milliseconds limit);

 private:
  void thread_main();
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  int idle_ = 0;
  int running_ = 0;
};

struct engine_t {
  engine_t();
  int count = 0;
  std::unique_ptr<device_state[]> devices;

  //! errc::invalid_device unless 0 <= id < count; sets the device up at first use.
  device_state& dev(int id, const char* api_name = "sluice::device");

  stream_state* new_stream(device_state& d, int native_priority);
  void recycle(stream_state* s) noexcept;

  api::event_t take_event(device_state& d);
  void give_event(device_state& d, api::event_t e) noexcept;

  std::mutex pool_m;
  stream_state* free_states = nullptr;

  worker_pool host_functions;  // user host functions
  worker_pool reaper;          // blocking vendor frees and destroys

  std::mutex peer_m;  // enable_peer_access (the flags: src/peer_access.hpp)

  std::mutex staging_m;
  std::vector<staging_set*> staging_free;  // staging sets of recycled streams
};

engine_t& engine();

//! Makes the stream's device current for the scope when it is not. CUDA 13
//! refused cudaMemcpyAsync on pool memory of device 1, on a stream of device 1,
//! while device 0 was current (cudaErrorInvalidValue; explicit kinds and
//! cuMemcpyAsync too: 2x H200, sluice-probe-xdev). When the device is current
//! this costs one context query (CUDA: cuCtxGetCurrent, 8 ns there).
class device_current {
 public:
  explicit device_current(const stream_state& s) {
    if (!api::device_is_current(s.device, s.context)) [[unlikely]]
      guard_.emplace(s.device);
  }

 private:
  std::optional<scoped_device> guard_;
};

//! Single peer copies over the link of at most these many bytes, 16-byte
//! aligned at both ends, run as sluice's SM copy kernel (sm_copy.cu) on the
//! stream's device rather than on a copy engine. The limit depends on which end
//! the stream is on: `push` (the source's stream: the kernel writes over the
//! link) and `pull` (the destination's: it reads over the link).
//! SLUICE_PEER_SM_PUSH_MAX_KIB and SLUICE_PEER_SM_PULL_MAX_KIB (0 .. 1048576;
//! 0: never); SLUICE_PEER_SM_MAX_KIB sets both where those are unset. Defaults:
//! api::peer_sm_push_default_kib and api::peer_sm_pull_default_kib, measured per
//! vendor (cuda_api.hpp; HIP: 0, never measured).
struct sm_copy_limits {
  std::size_t push = 0;
  std::size_t pull = 0;
};
const sm_copy_limits& sm_copy_limit();
//! copy_peer_batch: when every piece is at most this many bytes (and 16-byte
//! aligned), sluice's SM batch kernel moves them, 64 per launch:
//! SLUICE_PEER_SM_BATCH_MAX_KIB (0 .. 1048576; 0: never), default 256. On one
//! H200 (sluice-probe-batch, docs/performance.md) 64 pieces of 16, 64 and 256
//! KiB took 12.2, 11.9 and 15.4 us against 333, 276 and 264 us for 64 raw
//! cudaMemcpyPeerAsync calls and 313, 244 and 254 us for cudaMemcpyBatchAsync,
//! which gains nothing over the calls; not yet measured between two GPUs.
constexpr int sm_batch_default_kib = 256;
std::size_t sm_batch_limit();
//! What src/peer_plan needs to plan a copy on a stream of device d: the SM
//! kernel's shape and the limits of single copies (or of batches, `batch`).
peer_limits peer_limits_of(const device_state& d, bool batch);

//! Copies the pieces from device src_dev to device dst_dev through pinned host
//! memory, as one operation of u (u is on one of the two devices): sluice's
//! double-buffered pipeline (staging.cpp), for devices without peer access.
void staged_copy(stream_state& u, int dst_dev, int src_dev, const peer_piece* pieces,
                 std::size_t count, const char* api_name);
//! Hands the staging sets of a recycled stream to the engine's pool.
void recycle_staging(stream_state& s) noexcept;

//! On a sluice thread: marks the end of each stream that is not idle (a pooled
//! event, recorded under the stream's enqueue lock), waits on the host until
//! every stream has passed its mark, then calls then(""); then(failure) when a
//! mark could not be made or a wait failed (a device fault), with the first
//! failure in words (vendor call, device, vendor error). Idle streams get
//! no mark. Never holds a device queue. At process exit (runtime unloading)
//! `then` is not called. The caller keeps its references to the streams only
//! for the duration of this call (this takes its own).
void when_streams_pass(const std::vector<stream_state*>& streams,
                       std::function<void(const std::string& failure)> then) noexcept;

}  // namespace sluice::detail
