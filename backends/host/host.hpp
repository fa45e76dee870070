// The host backend's internals: the CPU reference implementation of the
// semantics (docs/semantics.md). Not installed.
//
// Model
// - A stream is a FIFO of `op`s numbered 1, 2, 3, ... (`seq`). Its
//   `completed` counter is the seq of the last finished op, so "the work
//   enqueued on s up to now" is the position (s, enqueued) and it is done when
//   s.completed >= that seq. Events, wait(stream), device::synchronize and
//   deferred frees are all positions.
// - Each simulated device has `slots` worker threads and a ready queue per
//   priority level. A worker takes the highest-priority runnable stream and
//   runs its head op; after each op it yields the stream if an equal or
//   higher priority stream is waiting (round robin within a level, strict
//   priority across levels: PRIO-4).
// - An op that must wait (wait_value, wait on a position) parks its stream
//   with a listener and frees the worker: a gated stream never holds a slot,
//   so any number of streams stay independent (IND-1).
// - Host functions run on a growing pool of host threads, never on a slot, so
//   a blocked host function delays only its own stream (HOST-2).
// - Idle workers spin briefly before parking on a condition variable (thread
//   wake-ups cost ~60 us on our VMs:
//   docs/results/runs/2026-11-23-host-backend-engine.md): one spinner per device.
#pragma once

#include "backend_rules.hpp"
#include "checks.hpp"
#include "diagnose.hpp"
#include "trace.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::detail {

using seq_t = std::uint64_t;

struct stream_state;
struct device_state;

//! Something to do once a dependency is met; fired at most once, outside locks.
struct listener {
  virtual void on_complete() noexcept = 0;

 protected:
  ~listener() = default;
};

enum class step {
  done,        //!< the op finished; the worker completes it
  parked,      //!< the op registered a listener; the stream resumes later
  handed_off,  //!< someone else (the host-function pool) completes it
};

struct op {
  std::atomic<op*> next{nullptr};
  seq_t seq = 0;
  std::unique_ptr<trace::record> trace;  // set at enqueue while tracing, else null
  virtual ~op() = default;
  //! What the trace says about it: kind, bytes, path, what a wait waits for.
  virtual void describe(trace::record& r) const { (void)r; }
  //! Runs on the thread that owns the stream now. After returning `parked`
  //! the op must not touch the stream again (it may already run elsewhere).
  virtual step run(stream_state& s) = 0;
  //! Whether the thread that resumes the stream may run it there (flag ops:
  //! a store or a check, never user code; see resume_inline).
  virtual bool runs_inline() const noexcept { return false; }
  //! Not recorded at enqueue while tracing: a graph launch's internal markers,
  //! and the operations a launch runs, whose records the launch makes itself.
  bool quiet = false;
  //! The memory it reads or writes (a graph's launch checks that the sluice
  //! allocations among them are still alive).
  using memory_ranges = std::vector<std::pair<const void*, std::size_t>>;
  virtual void ranges(memory_ranges& out) const { (void)out; }
};

//! Host priority range: three levels, like HIP's.
inline constexpr priority_range host_priority_range{1, -1};
inline constexpr int host_default_priority = 0;
inline constexpr int priority_levels = 3;  // index 0 = greatest priority

struct stream_state final : listener {
  device_state* dev = nullptr;
  int native_priority = 0;
  int level = 1;               // index into the device's ready queues
  std::uint64_t trace_id = 0;  // this stream's id in traces (new per stream)
  std::atomic<std::uint32_t> generation{1};
  alignas(64) ref_count refs;  // own line: taken and dropped by records on the caller side

  // The queue. Producers append under `queue_m`. The head op belongs to
  // whoever advances the stream (a worker, or the host pool during a host
  // function); it takes `queue_m` only to pop the last op. A non-empty queue
  // always has exactly one owner: the producer that makes it non-empty
  // schedules it, the owner that empties it lets go.
  // Producer-side and owner-side fields sit on separate cache lines: an
  // enqueueing thread and the worker draining the stream would otherwise
  // pull one line back and forth on every op.
  alignas(64) std::mutex queue_m;
  op* tail = nullptr;  // under queue_m
  std::atomic<seq_t> enqueued{0};
  alignas(64) op* head = nullptr;  // owner's; under queue_m while the queue is empty
  std::atomic<seq_t> completed{0};

  // Listeners waiting for `completed` to reach a seq.
  alignas(64) std::mutex waiters_m;
  std::vector<std::pair<seq_t, listener*>> waiters;
  std::atomic<seq_t> next_waiter{UINT64_MAX};

  // Host functions that threw (HOST-4) and failed communications, not yet reported.
  stream_failures failures;

  // A borrowed stream (sluice::borrow) has no queue of its own: it names the
  // stream whose queue it uses (a reference) and that stream's generation then.
  stream_state* alias = nullptr;
  std::uint32_t alias_generation = 0;

  stream_state* ready_next = nullptr;  // intrusive link in the device's ready queue
  stream_state* pool_next = nullptr;   // intrusive link in the free pool

  void on_complete() noexcept override;  // resume: make runnable again
  void add_ref() noexcept { refs.add(); }
  bool try_add_ref() noexcept { return refs.try_add(); }  // (src/backend_rules.hpp)
  void release() noexcept;
};

struct device_state {
  int id = 0;
  int slots = 1;

  std::mutex m;
  std::condition_variable cv;
  stream_state* ready_head[priority_levels] = {};
  stream_state* ready_tail[priority_levels] = {};
  std::atomic<int> ready_count{0};
  std::atomic<int> ready_at_level[priority_levels] = {};
  int sleepers = 0;              // under m
  std::atomic<int> spinners{0};  // at most one per device
  std::once_flag started;

  // Every stream_state of this device that is not in the free pool.
  std::mutex streams_m;
  std::vector<stream_state*> streams;

  void start_workers();
  void make_runnable(stream_state* s) noexcept;
  bool should_yield(const stream_state& s) const noexcept;

 private:
  stream_state* pop_locked() noexcept;
  stream_state* acquire();
  void worker_main();
};

//! A thread pool for host functions that grows so that every queued function
//! gets a thread (HOST-2).
class host_pool {
 public:
  void submit(stream_state* s);

 private:
  void thread_main();
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<stream_state*> queue_;  // FIFO via index
  std::size_t queue_begin_ = 0;
  std::atomic<int> pending_{0};
  int available_ = 0;  // threads not running a function (under m_)
  std::atomic<int> spinners_{0};
};

struct record_state;
struct event_state;
struct flag_state;

class backend {
 public:
  int device_count = 0;
  int slots = 1;
  std::vector<std::unique_ptr<device_state>> devices;
  host_pool pool;

  device_state& dev(int id) { return *devices[static_cast<std::size_t>(id)]; }

  stream_state* new_stream(device_state& d, int native_priority);
  void recycle(stream_state* s) noexcept;

 private:
  std::mutex pool_m_;
  stream_state* free_streams_ = nullptr;
};

//! The backend, started on first use. Throws the configuration error (a bad
//! SLUICE_HOST_DEVICES, say) on every call when it cannot start.
backend& engine();

// --- handles -------------------------------------------------------------

//! Opens the public handles (each declares `friend struct detail::access`).
struct access {
  static stream_state* state(stream_ref s) noexcept { return s.state_; }
  static std::uint32_t generation(stream_ref s) noexcept { return s.generation_; }
  static stream_ref make_ref(stream_state* s, std::uint32_t generation) noexcept {
    return stream_ref(s, generation);
  }
  static event_state*& state(event& e) noexcept { return e.state_; }
  static event_state* state(const event& e) noexcept { return e.state_; }
  static flag_state* state(const flag& f) noexcept { return f.state_; }
  static flag_state*& state(flag& f) noexcept { return f.state_; }
  static stream make_stream(stream_state* s) noexcept {
    return stream(s, s->generation.load(std::memory_order_relaxed));
  }
};

// --- streams -------------------------------------------------------------

//! The state behind a handle; errc::invalid_handle for moved-from or destroyed ones.
stream_state& checked(const stream_state* s, std::uint32_t generation, const char* api);

//! Appends o to s; returns its seq.
seq_t enqueue(stream_state& s, op* o);

//! Pops the finished head op of s, publishes its completion and fires
//! listeners. Returns true when more ops are queued (the caller still owns s).
bool complete_head(stream_state& s) noexcept;

//! Checked state of a stream_ref.
inline stream_state& checked(stream_ref s, const char* api) {
  return checked(access::state(s), access::generation(s), api);
}

//! A host-function op for s (runs on the host pool).
op* make_host_function_op(std::unique_ptr<host_task> task);

//! Runs ops of s until it parks, empties or should yield. Called by the owner.
void run_stream(stream_state& s) noexcept;

//! Resumes s, parked on a flag, on the calling thread while its ops run
//! inline (flag writes and waits: a chain of stream-ordered messages goes on
//! without a hand-off to a worker per message); the rest goes to a worker.
//! Not nested: a flag stored by an op run here resumes its waiters on workers.
void resume_inline(stream_state& s) noexcept;

//! Registers l to fire once s.completed >= seq. Returns false (and registers
//! nothing) when that is already true.
bool when_reached(stream_state& s, seq_t seq, listener* l);

//! Blocks the calling thread until s.completed >= seq. Spins briefly first
//! unless `yield_cpu`.
void wait_reached(stream_state& s, seq_t seq, bool yield_cpu);

//! Throws errc::invalid_argument when the calling thread is a host function
//! of s whose own op precedes `seq` (waiting would deadlock, HOST-3).
void check_not_self_wait(const stream_state& s, seq_t seq, const char* api);

//! The stream whose host function the calling thread runs, or null.
stream_state* current_host_function_stream() noexcept;

//! Throws the pending host-function failures of s, once (HOST-4).
void rethrow_host_errors(stream_state& s);

// --- events --------------------------------------------------------------

//! One record of an event: the position it captured and, for timing events,
//! the time the record op ran.
struct record_state {
  stream_state* stream = nullptr;  // holds a reference
  seq_t seq = 0;
  std::atomic<std::int64_t> timestamp_ns{0};
  explicit record_state(stream_state* s) noexcept : stream(s) { s->add_ref(); }
  ~record_state() { stream->release(); }
  record_state(const record_state&) = delete;
  record_state& operator=(const record_state&) = delete;
  bool done() const noexcept { return stream->completed.load() >= seq; }
};

struct event_state {
  int device = 0;
  event_options options;
  diagnose::event_usage usage;  // SLUICE_DIAGNOSE: recorded and never used
  mutable std::mutex m;
  std::shared_ptr<record_state> last;  // null until recorded
  std::shared_ptr<record_state> snapshot() const {
    std::lock_guard<std::mutex> lock(m);
    return last;
  }
};

// --- flags ---------------------------------------------------------------

struct flag_state {
  std::atomic<std::uint32_t> value{0};
  std::atomic<int> refs{1};
  std::mutex m;
  std::vector<std::pair<std::uint32_t, stream_state*>> waiters;  // (needed value, stream)
  std::atomic<int> waiter_count{0};

  //! Registers s to resume once value >= v; false (nothing registered) when it already is.
  bool wait_for(std::uint32_t v, stream_state* s);
  void store(std::uint32_t v) noexcept;
  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

// --- memory --------------------------------------------------------------

enum class memory_kind { device, pinned };

struct allocation {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  memory_kind kind = memory_kind::device;
  int device = -1;                 // -1 for pinned memory
  stream_state* stream = nullptr;  // stream-ordered allocation: its stream (a reference)
  std::mutex m;
  std::vector<stream_state*> recorded;  // record_stream() targets (references)
};

//! The sluice allocation holding [p, p + bytes), or null for memory sluice did
//! not allocate (pageable host memory). errc::invalid_argument when p lies in
//! an allocation that ends before p + bytes.
const allocation* find_allocation(const void* p, std::size_t bytes, const char* api,
                                  const char* what);

//! Whether host memory that is no sluice allocation counts as pageable: not
//! wholly inside a registered_host_memory range (MEM-3, MEM-8).
bool pageable_host_memory(const void* p, std::size_t bytes) noexcept;

//! The host backend's staged path: bytes from one device's memory to another's
//! through a host bounce buffer, a chunk at a time (the buffer made at first use).
class bounce_buffer {
 public:
  static constexpr std::size_t chunk = std::size_t{4} << 20;
  void move(void* to, const void* from, std::size_t n) {
    const std::size_t want = std::min(n, chunk);
    if (size_ < want) {
      buffer_ = std::make_unique<unsigned char[]>(want);
      size_ = want;
    }
    for (std::size_t done = 0; done < n; done += chunk) {
      const std::size_t m = std::min(chunk, n - done);
      std::memcpy(buffer_.get(), static_cast<const unsigned char*>(from) + done, m);
      std::memcpy(static_cast<unsigned char*>(to) + done, buffer_.get(), m);
    }
  }

 private:
  std::unique_ptr<unsigned char[]> buffer_;
  std::size_t size_ = 0;
};

struct strided_plan;  // src/strided.hpp

//! Enqueues the checked strided copies `pieces` as one op on s (strided.cpp):
//! `kind` and `peer_path` (null for copy()) for the trace; `staged` through a
//! bounce buffer; `snapshot_source` packs the single piece's pageable source
//! at enqueue (MEM-3). Returns its seq.
seq_t enqueue_strided(stream_state& s, std::vector<strided_plan> pieces, const char* kind,
                      const char* peer_path, bool staged, bool snapshot_source, const char* api);

//! Steady-clock nanoseconds.
std::int64_t now_ns() noexcept;

}  // namespace sluice::detail
