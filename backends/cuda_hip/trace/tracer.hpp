// The GPU backend's tracer (include/sluice/trace.hpp), shared by the files of
// trace/: traced_op.cpp (the traced operation), trace_source.cpp (the
// backend's tracing entry points), tracer.cpp (this header's slots, the
// streams' chains of them, harvest) and trace_clock.cpp (device clocks,
// trace_clock.hpp). The rest of the backend sees gpu_trace.hpp.
//
// A traced device operation ends at a timing event recorded after it on its
// stream and starts where the stream's previous traced operation ended: one
// event per operation (timing events are not cheap to record). The first
// traced operation of a stream, and every one on a stream whose native handle
// was taken (the user's own work may lie between two sluice operations there),
// gets a second event before it. An event record takes no device time: it is
// an instant at the stream's last slot (no event of its own) where there is
// one. No operation is shown starting before the host enqueued it (the stream
// may have been idle since its last slot). Events live in slots,
// reference-counted by the operations that use them and by their stream while
// they are its last, and pooled per device.
// A wait takes no event of its own either where the trace knows when what it
// waits for completes (an event whose last record was traced, or a stream's
// traced work, on the same device): it ends at a join, the later of the
// stream's last slot and that one. Elsewhere it gets a timing event, except
// for a wait on an event that has already completed or was never recorded,
// which waits for nothing (an instant).
// Host functions are timed by the host clock on the sluice thread that runs
// them, so batching is unchanged.
#pragma once

#include "trace.hpp"
#include "trace/gpu_trace.hpp"
#include "trace/trace_clock.hpp"
#include "vendor.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sluice::detail {

//! A timing event and what uses it (all under the tracer's lock).
struct trace_slot {
  api::event_t event{};
  int device = 0;
  std::size_t point = 0;            // the device's latest calibration point when taken
  int refs = 0;                     // operations using it, plus one while it is a stream's last
  bool last = false;                // some stream's trace.last (then in the tracer's list of lasts)
  trace_slot* prev_last = nullptr;  // that list, intrusive: no allocation per operation
  trace_slot* next_last = nullptr;
  bool timed = false;   // ns is known
  std::int64_t ns = 0;  // host-clock time of the event
  // A join (a wait's end) has no event: it completes when both a and b have,
  // at the later of their times; it holds a reference to each.
  bool join = false;
  int depth = 0;  // joins below it, counting itself (bounded: see begin_wait)
  trace_slot* a = nullptr;
  trace_slot* b = nullptr;
};

//! An enqueued operation whose record waits for its end slot to complete.
struct pending {
  trace::record r;
  trace_slot* start = nullptr;  // null for a trace_range marker (it takes no time)
  trace_slot* end = nullptr;
};

//! The slots of the trace and the operations waiting for theirs to complete
//! (tracer.cpp). One per process: the_tracer().
class tracer {
 public:
  //! Under s.trace.m: the slot an operation on s starts at (shared with the
  //! stream's previous operation, or new; *record_start: the caller records
  //! it), and a new slot for its end, which becomes the stream's last. With
  //! `end` null, an instant (see tracer.cpp).
  void begin_op(stream_state& s, std::int64_t now, bool needs_start, trace_slot** start,
                trace_slot** end, bool* record_start);

  enum class wait_plan { timed_by_slots, needs_event, ask_event };

  //! Under s.trace.m: a wait of s that needs no timing event of its own:
  //! *start is the stream's last slot, *end a join of it and what the wait
  //! waits for, or, when it waits for nothing (`nothing`, or the join adds
  //! nothing), *start null and *end the last slot (an instant). needs_event:
  //! time it as any operation; ask_event: the event's last record is not in
  //! the trace, the caller may ask whether it completed.
  wait_plan begin_wait(stream_state& s, std::int64_t now, event_state* ev, stream_state* other,
                       bool nothing, trace_slot** start, trace_slot** end);

  //! Under s.trace.m, after the end event was recorded: `end` becomes the
  //! stream's last, and the operation waits for its end event to complete.
  //! With `mark`, the event that this operation recorded: its mark is `end`.
  void end_op(stream_state& s, pending&& p, event_trace* mark = nullptr);

  //! Under s.trace.m: untraced device work follows (a host function's
  //! signal and gate): the next operation must not start where the last ended.
  void break_chain(stream_state& s) noexcept;

  //! An operation that threw before it was enqueued: its slots go back.
  void abandon(trace_slot* start, trace_slot* end) noexcept;

  //! ~event: the event's mark goes back.
  void forget_event(event_trace& e) noexcept;

  //! A wait found e's last record (made before this trace) completed: later
  //! waits on it in this trace are instants without asking again (a record
  //! in the trace replaces the mark; one outside it is in another trace).
  void mark_completed(event_trace& e);

  //! trace_end(): every completed record to the collection; the rest left out.
  void collect();

 private:
  static constexpr std::size_t harvest_step = 16384;
  // Joins of joins, as a run of waits with no timed operation between makes:
  // beyond this the wait takes a timing event (bounds the walks of joins).
  static constexpr int max_join_depth = 8;
  static constexpr std::size_t pool_limit = 4096;  // slots kept per device

  enum class slot_state { timed, not_ready, failed };

  // All under m_ (tracer.cpp says what each does).
  void set_mark_locked(event_trace& e, trace_slot* slot) noexcept;
  trace_slot* chained_last_locked(const stream_state& s) const noexcept;
  static wait_plan instant_locked(trace_slot* last, trace_slot** start, trace_slot** end) noexcept;
  trace_slot* take_join_locked(int d);
  void link_last(trace_slot* slot) noexcept;
  void unlink_last(trace_slot* slot) noexcept;
  trace_slot* take_locked(int d);
  void unref_locked(trace_slot* slot) noexcept;
  slot_state resolve(trace_slot* slot) noexcept;
  std::size_t harvest_locked(bool all);

  std::mutex m_;
  std::vector<std::vector<trace_slot*>> pools_;  // per device
  trace_clocks clocks_;
  std::vector<pending> ops_;
  std::vector<trace_slot*> joins_;  // pooled joins
  trace_slot completed_;            // an event's mark: its last record has completed
  trace_slot* lasts_ = nullptr;     // every stream's last slot, linked through the slots
  std::uint64_t epoch_ = 1;
  std::size_t next_harvest_ = harvest_step;
};

inline tracer& the_tracer() {
  static auto* t = new tracer();  // never destroyed: traces may be written at exit
  return *t;
}

}  // namespace sluice::detail
