// The GPU backend's second trace source: the vendor's activity
// records (CUDA: CUPTI, cupti_source.cpp) instead of a timing event per
// operation (tracer.hpp). Backend-neutral: no vendor type appears here, so
// the host unit tests drive it with a fake activity source
// (tests/unit/activity_tracer_test.cpp).
//
// How an operation is timed: while the backend enqueues it, the operation's
// id is pushed as the calling thread's external correlation id
// (activity_source::push), so every device activity the vendor call makes
// (kernels, copies, fills) is tied to it by an external-correlation record.
// At trace_end the source is flushed and each operation spans its
// activities, from the first start to the last end. Operations with no
// device activity of their own (event records, waits, flag operations,
// trace_range markers) are placed as the event tracer places an instant or a
// wait: where their stream's previous operation ended (not before they were
// enqueued), a wait no earlier than the operation it waited for. Kernels
// and copies the user enqueues on a sluice stream directly (no external id)
// land on that stream's track, named, through the stream ids registered for
// the trace's streams (add_stream). Device times are the source's clock,
// mapped onto the host clock by two calibrations (trace begin and end).
#pragma once

#include "spin_mutex.hpp"
#include "trace.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::detail {

//! One device activity, as the source reports it.
struct activity_record {
  enum class type : std::uint8_t { kernel, copy, fill };
  type what = type::kernel;
  std::uint32_t correlation = 0;  // the vendor's correlation id of the API call
  std::uint32_t stream = 0;       // the source's stream id (add_stream)
  std::uint64_t start = 0;        // source clock, ns
  std::uint64_t end = 0;
  std::uint64_t bytes = 0;
  std::string name;  // a kernel's (mangled) name
};

//! What a source hands over at the end of a trace.
struct activity_batch {
  std::vector<activity_record> activities;
  //! Vendor correlation id -> the external id pushed around its API call.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> correlations;
  std::uint64_t dropped = 0;  // records the source says it lost
  std::string settings;       // JSON members for the trace's source note (may be empty)
};

//! The vendor's activity interface, reduced to what the tracer needs
//! (cupti_source.cpp: CUPTI, loaded at run time; tests: a fake).
class activity_source {
 public:
  virtual ~activity_source() = default;
  //! Starts recording activities; false with *why when it cannot (another
  //! tool holds the vendor's interface, no driver, ...). Nothing is enabled then.
  virtual bool start(std::string* why) = 0;
  //! The calling thread's external correlation id, around one enqueue.
  virtual void push(std::uint64_t external) noexcept = 0;
  virtual void pop() noexcept = 0;
  //! The source's id of a native stream; false when it cannot tell.
  virtual bool stream_id(void* native, std::uint32_t* id) noexcept = 0;
  //! The source's clock now (ns).
  virtual std::uint64_t timestamp() noexcept = 0;
  //! Activities on `native` (a stream of sluice's own, not a sluice
  //! stream's) are none of the trace's: dropped, not counted.
  virtual void ignore_stream(void* /*native*/) noexcept {}
  //! Flushes every buffer, stops recording, hands over what it recorded.
  virtual void stop(activity_batch* out) = 0;
};

//! CUDA: CUPTI through dlopen (cupti_source.cpp); HIP or a build without
//! the CUPTI headers: null, with *why.
activity_source* vendor_activity_source(std::string* why);

//! What end() found, besides the records.
struct activity_summary {
  std::uint64_t operations = 0;       // sluice operations placed
  std::uint64_t user_activities = 0;  // kernels/copies enqueued on sluice streams directly
  std::uint64_t dropped = 0;          // records the source lost
  std::uint64_t left_out = 0;       // device operations with no activity (dropped, or not complete)
  std::uint64_t foreign = 0;        // activities on streams that are not sluice's: left out
  std::uint64_t activities = 0;     // device activities the source handed over
  std::uint64_t correlations = 0;   // external-correlation records among them
  std::int64_t clock_error_ns = 0;  // +- of the source-to-host clock mapping
  std::string settings;             // the source's (activity_batch::settings)
};

//! Kinds of operation whose work is device activity (kernels, copies, fills):
//! only these push an external id; without an activity they are left out.
bool activity_device_kind(const char* kind) noexcept;

//! Whether the CPU's counter can stamp enqueues (activity_tracer::stamp):
//! x86-64 where the kernel keeps its own clock on the TSC (invariant, the
//! same on every core, read without a trap), aarch64's virtual counter;
//! SLUICE_TRACE_COUNTER=1 or 0 decides instead (x86-64 and aarch64).
bool counter_clock_available() noexcept;

class activity_tracer {
 public:
  //! counter: operations are stamped with the CPU's counter (stamp()),
  //! mapped onto the host clock at end(); else with the host clock itself.
  explicit activity_tracer(bool counter = false) noexcept;

  //! The enqueue time of an operation closed into this tracer (its record's
  //! enqueue_ns until end()): with the counter, read in about a third of a
  //! steady_clock read on the enqueuing thread; end() maps it onto the host
  //! clock by the two calibrations, as it maps the source's clock.
  std::int64_t stamp() const noexcept { return counter_ ? counter_ticks() : trace::now_ns(); }
  bool counter() const noexcept { return counter_; }

  //! trace_begin: starts the source and calibrates; false (and *why) when
  //! the source cannot start: the caller uses the event tracer.
  bool begin(activity_source* source, std::string* why);
  bool active() const noexcept { return source_.load(std::memory_order_relaxed) != nullptr; }

  //! One operation's entry in the calling thread's buffer (thread_ops).
  struct slot {
    enum : std::uint8_t { open_state, done_state, dropped_state };
    std::atomic<std::uint8_t> state{open_state};
    std::uint64_t epoch = 0;  // the trace it was opened in
    std::uint64_t id = 0;
    trace::record r;  // filled by the caller between open() and close()
  };

  //! Around the vendor call of one operation: open() reserves the calling
  //! thread's next slot with a new id and, with `push` (a device kind),
  //! pushes the id (*pushed: the source it was pushed to, or null); the
  //! caller fills the slot's record, before the vendor call where it can.
  //! close() pops the id there (even after the trace ended: the thread's
  //! stack stays balanced) and publishes the slot: one store, no lock and no
  //! read-modify-write after the vendor call (on the H200 every line touched
  //! there cost the traced enqueue:
  //! docs/results/runs/2026-11-27-cupti-trace-source.md). abandon() pops it
  //! and drops the slot (the operation threw before it was enqueued).
  slot* open(activity_source** pushed, bool push = true);
  static void close(slot* s, activity_source* pushed) noexcept;
  static void abandon(slot* s, activity_source* pushed) noexcept;

  //! A sluice stream of this trace: activities on `native` belong to its
  //! track (trace id `stream`) even without an external id. Cheap after
  //! the first call per stream and trace (the caller checks `epoch`).
  void add_stream(void* native, std::uint64_t stream, int device, int priority);

  //! A host function (seq-th operation of trace stream `stream`) ended at
  //! `end_ns` (host clock): the operations after it on its stream that have
  //! no device activity of their own are placed no earlier (its record goes
  //! to the trace by itself).
  void host_ran(std::uint64_t stream, std::uint64_t seq, std::int64_t end_ns);
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_relaxed); }

  //! trace_end: stops the source, places every operation; the records go to
  //! *out (in no particular order).
  activity_summary end(std::vector<trace::record>* out);

 private:
  struct sample {
    std::int64_t host = 0;    // middle of the window
    std::int64_t window = 0;  // its width
    std::uint64_t source = 0;
    // With the counter: counter_ticks() in a window of its own (tick_window
    // wide, middle tick_host)
    std::int64_t ticks = 0, tick_host = 0, tick_window = 0;
  };
  struct op {
    std::uint64_t id = 0;
    trace::record r;
  };
  struct track {
    std::uint64_t stream = 0;
    int device = 0;
    int priority = 0;
  };
  static std::int64_t counter_ticks() noexcept {
#if defined(__x86_64__)
    return static_cast<std::int64_t>(__rdtsc());
#elif defined(__aarch64__)
    std::uint64_t v = 0;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return static_cast<std::int64_t>(v);
#else
    return trace::now_ns();
#endif
  }
  sample calibrate() noexcept;
  std::int64_t to_host(std::uint64_t t) const noexcept;
  std::int64_t ticks_to_host(std::int64_t t) const noexcept;
  std::int64_t clock_error() const noexcept;
  static constexpr std::int64_t rate_span_ns = 50000000;  // see to_host

  //! The operations one thread opened, in slots that never move: a list of
  //! chunks, kept from trace to trace. Only the owning thread writes a slot
  //! (open() reserves it: `reserved` stored after the slot's state, epoch
  //! and id; close() stores its state); end() takes the slots done in its
  //! trace, reading a slot only after its state says done. The owner reuses
  //! its slots (a reset) at its first open() of a later trace when none is
  //! still open, under `m`, which end() holds while it reads the thread's.
  //! Owned by the thread and by the tracer's list (a thread may end before
  //! the trace does).
  struct chunk {
    static constexpr std::uint32_t size = 256;
    std::atomic<std::uint32_t> reserved{0};
    std::atomic<chunk*> next{nullptr};
    slot slots[size];
  };
  struct thread_ops {
    thread_ops() : tail(&head) {}
    ~thread_ops();
    spin_mutex m;  // a reset, and end() reading
    chunk head;
    // The owner's: where the next slot goes, the trace it last opened in,
    // its block of ids.
    chunk* tail;
    std::atomic<std::uint64_t> epoch{0};
    std::uint64_t next_id = 0, end_id = 0;
  };
  thread_ops& mine();
  static constexpr std::uint64_t id_block = 4096;  // ids a thread takes at once

  const bool counter_;
  const std::uint64_t serial_;  // which tracer a thread's buffer belongs to (mine())
  std::atomic<activity_source*> source_{nullptr};
  std::mutex m_;
  std::vector<std::shared_ptr<thread_ops>> threads_;  // every thread that closed an op
  struct host_run {
    std::uint64_t stream = 0, seq = 0;
    std::int64_t end = 0;
  };
  std::vector<host_run> host_runs_;                   // host functions of this trace (host_ran)
  std::unordered_map<std::uint32_t, track> streams_;  // source stream id -> track
  std::atomic<std::uint64_t> next_id_{1};             // the next block of ids (thread_ops::next_id)
  std::atomic<std::uint64_t> epoch_{0};
  sample begin_{}, end_{};
};

//! The backend's activity tracer (one per process).
activity_tracer& the_activity_tracer();

}  // namespace sluice::detail
