// Tracing on the GPU backend (include/sluice/trace.hpp). A traced device
// operation ends at a timing event recorded after it on its stream and starts
// where the stream's previous traced operation ended: one event per operation
// (timing events are not cheap to record). The first traced operation of a
// stream, and every one on a stream whose native handle was taken (the user's
// own work may lie between two sluice operations there), gets a second event
// before it. An event record takes no device time: it is an instant at the
// stream's last slot (no event of its own) where there is one. No operation
// is shown starting before the host enqueued it (the stream may have been
// idle since its last slot). Events live in slots, reference-counted by the operations that
// use them and by their stream while they are its last, and pooled per device.
// Device times become host-clock times through calibration points per
// device: an event recorded on an idle stream of the tracer and waited for,
// whose host time is the middle of the record-to-return window (under 20 us
// when the device and the host are idle); the narrowest of up to 8 windows is
// kept, and the widest half-window of the trace is the device's clock error,
// written into the trace (a busy host widens it). A point is taken when a
// device is first traced, again before an operation enqueued a second or more
// after the latest, and before the completed operations are read. A slot's
// time is interpolated between the two points around it: the device clock
// runs a few ppm off the host's (+3.45 ppm on an H200: 0.4 ms in two minutes
// through one point), and cudaEventElapsedTime's float loses microseconds
// a minute or more from its base; a second between points keeps both under
// a microsecond.
// Records are read when their end event has completed: in bulk as the pending
// list grows, and at trace_end(), which leaves out (and says so) operations
// whose end event has not completed. Host functions are timed by the host
// clock on the sluice thread that runs them, so batching is unchanged.
// A wait takes no event of its own either where the trace knows when what it
// waits for completes (an event whose last record was traced, or a stream's
// traced work, on the same device): it ends at a join, the later of the
// stream's last slot and that one. Elsewhere it gets a timing event, except
// for a wait on an event that has already completed or was never recorded,
// which waits for nothing (an instant).
#include "engine.hpp"
#include "event_state.hpp"
#include "gpu_trace.hpp"
#include "host_functions.hpp"
#include "stream_state.hpp"

#include <sluice/trace.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

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

struct traced_op_state {
  stream_state* stream = nullptr;
  std::unique_lock<std::mutex> lock;  // the stream's trace.m, from begin to finish
  trace::record r;
  trace_slot* start = nullptr;
  trace_slot* end = nullptr;
  bool shared_end = false;  // an instant at the stream's last slot, or a join: nothing to record
  event_trace* mark = nullptr;  // an event this operation records (traced_op::marks)
};

namespace {

struct pending {
  trace::record r;
  trace_slot* start = nullptr;  // null for a trace_range marker (it takes no time)
  trace_slot* end = nullptr;
};

//! A calibration: an event on the device clock whose host time is known.
struct clock_point {
  api::event_t event{};
  std::int64_t host_ns = 0;  // middle of its record-to-return window
  double scale = 0;          // host ns per device ns up to the next point (0: not known yet)
};

struct device_clock {
  bool calibrated = false;          // has points in this trace
  std::int64_t tried_ns = 0;        // host time of the latest attempt at a point
  api::stream_t stream{};           // the tracer's own, idle stream on the device
  std::vector<clock_point> points;  // this trace's, in time order
  std::vector<api::event_t> spare;  // events of earlier traces' points, and attempts
};

class tracer {
 public:
  //! Under s.trace.m: the slot an operation on s starts at (shared with the
  //! stream's previous operation, or new; *record_it: the caller records it),
  //! and a new slot for its end, which becomes the stream's last.
  void begin_op(stream_state& s, std::int64_t now, bool needs_start, trace_slot** start,
                trace_slot** end, bool* record_start) {
    std::lock_guard<std::mutex> lock(m_);
    ensure_clock(s.device, now);
    trace_slot* last = chained_last_locked(s);
    const bool chain = last != nullptr;
    *start = nullptr;
    *record_start = false;
    if (end == nullptr) {
      // An instant (an event record): it completes when the stream's earlier
      // work has, so where the stream's last traced operation ended is its
      // time, and it needs no event of its own (*start: that slot, shared);
      // without such a slot, null: the caller times it as a marker.
      if (chain) {
        *start = last;
        ++last->refs;
      }
      return;
    }
    if (needs_start) {
      if (chain) {
        *start = last;
        ++last->refs;
      } else {
        *start = take_locked(s.device);
        *record_start = true;
      }
    }
    try {
      *end = take_locked(s.device);
    } catch (...) {
      if (*start != nullptr) unref_locked(*start);
      throw;
    }
  }

  enum class wait_plan { timed_by_slots, needs_event, ask_event };

  //! Under s.trace.m: a wait of s that needs no timing event of its own (see
  //! the file's comment): *start is the stream's last slot, *end a join of it
  //! and what the wait waits for, or, when it waits for nothing (`nothing`,
  //! or the join adds nothing), *start null and *end the last slot (an
  //! instant). needs_event: time it as any operation; ask_event: the event's
  //! last record is not in the trace, the caller may ask whether it completed.
  wait_plan begin_wait(stream_state& s, std::int64_t now, event_state* ev, stream_state* other,
                       bool nothing, trace_slot** start, trace_slot** end) {
    std::lock_guard<std::mutex> lock(m_);
    ensure_clock(s.device, now);
    trace_slot* last = chained_last_locked(s);
    if (last == nullptr) return wait_plan::needs_event;
    trace_slot* mark = nullptr;
    if (!nothing && ev != nullptr) {
      if (ev->trace.mark == &completed_ && ev->trace.mark_epoch == epoch_)
        return instant_locked(last, start, end);  // seen completed since its last record
      if (ev->trace.mark != nullptr && ev->trace.mark_epoch == epoch_)
        mark = ev->trace.mark;
      else if (ev->recorded.load(std::memory_order_acquire))
        return wait_plan::ask_event;
      else
        return instant_locked(last, start, end);  // never recorded: waits for nothing (EVT-3)
    } else if (!nothing && other != nullptr) {
      if (other == &s) return instant_locked(last, start, end);  // ordered after itself
      mark = chained_last_locked(*other);
      if (mark == nullptr) return wait_plan::needs_event;
    }
    if (nothing || mark == last || (last->join && (last->a == mark || last->b == mark)))
      return instant_locked(last, start, end);
    // Device times map onto the host clock through each device's base event:
    // a join across devices could end before the wait did (calibration error).
    if (mark->device != s.device) return wait_plan::needs_event;
    const int depth = 1 + std::max(last->depth, mark->depth);
    if (depth > max_join_depth) return wait_plan::needs_event;
    trace_slot* j = take_join_locked(s.device);
    j->depth = depth;
    j->a = last;
    j->b = mark;
    last->refs += 2;  // the join's a, and the wait's start
    ++mark->refs;
    *start = last;
    *end = j;
    return wait_plan::timed_by_slots;
  }

  //! Under s.trace.m, after the end event was recorded: `end` becomes the
  //! stream's last, and the operation waits for its end event to complete.
  //! With `mark`, the event that this operation recorded: its mark is `end`.
  void end_op(stream_state& s, pending&& p, event_trace* mark = nullptr) {
    std::lock_guard<std::mutex> lock(m_);
    if (mark != nullptr) {
      ++p.end->refs;
      set_mark_locked(*mark, p.end);
    }
    trace_slot* previous = s.trace.last;
    if (previous != nullptr && s.trace.epoch == epoch_ && previous->last) {
      unlink_last(previous);
      unref_locked(previous);
    }
    ++p.end->refs;
    link_last(p.end);
    s.trace.last = p.end;
    s.trace.epoch = epoch_;
    ops_.push_back(std::move(p));
    if (ops_.size() >= next_harvest_) {
      harvest_locked(false);
      next_harvest_ = std::max<std::size_t>(harvest_step, 2 * ops_.size());
    }
  }

  //! Under s.trace.m: untraced device work follows (a host function's
  //! callback and gate): the next operation must not start where the last ended.
  void break_chain(stream_state& s) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    trace_slot* last = s.trace.last;
    if (last != nullptr && s.trace.epoch == epoch_ && last->last) {
      unlink_last(last);
      unref_locked(last);
    }
    s.trace.last = nullptr;
  }

  //! An operation that threw before it was enqueued: its slots go back.
  void abandon(trace_slot* start, trace_slot* end) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    if (start != nullptr) unref_locked(start);
    if (end != nullptr) unref_locked(end);
  }

  //! ~event: the event's mark goes back.
  void forget_event(event_trace& e) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    set_mark_locked(e, nullptr);
  }

  //! A wait found e's last record (made before this trace) completed: later
  //! waits on it in this trace are instants without asking again (a record
  //! in the trace replaces the mark; one outside it is in another trace).
  void mark_completed(event_trace& e) {
    std::lock_guard<std::mutex> lock(m_);
    set_mark_locked(e, &completed_);
  }

  //! trace_end(): every completed record to the collection; the rest left out.
  void collect() {
    std::lock_guard<std::mutex> lock(m_);
    const std::size_t left_out = harvest_locked(true);
    if (left_out != 0)
      std::fprintf(stderr,
                   "sluice: trace: %zu operations had not completed at trace_end() and are left "
                   "out (synchronize before trace_end to include them)\n",
                   left_out);
    // No stream starts where it ended in this trace: the next trace is new.
    ++epoch_;
    while (lasts_ != nullptr) {
      trace_slot* l = lasts_;
      unlink_last(l);
      unref_locked(l);
    }
    next_harvest_ = harvest_step;
    if (ops_.capacity() > 4 * harvest_step) ops_.shrink_to_fit();  // after an unusually deep queue
    for (auto& c : clocks_) {  // the next trace calibrates afresh
      for (const clock_point& p : c.points) c.spare.push_back(p.event);  // reserved: no throw
      c.points.clear();
      c.calibrated = false;
    }
  }

 private:
  static constexpr std::size_t harvest_step = 16384;
  // Joins of joins, as a run of waits with no timed operation between makes:
  // beyond this the wait takes a timing event (bounds the walks below).
  static constexpr int max_join_depth = 8;

  //! Under m_: e's mark becomes `slot` (a reference it holds, or &completed_).
  void set_mark_locked(event_trace& e, trace_slot* slot) noexcept {
    trace_slot* old = e.mark;
    if (old != nullptr && old != &completed_) unref_locked(old);
    e.mark = slot;
    e.mark_epoch = epoch_;
  }

  //! Under m_: the slot s's next operation may start at (its last in this
  //! trace, with no untraced work after it), or null.
  trace_slot* chained_last_locked(const stream_state& s) const noexcept {
    trace_slot* last = s.trace.last;
    const bool chain = last != nullptr && s.trace.epoch == epoch_ &&
                       !s.native_escaped.load(std::memory_order_relaxed);
    return chain ? last : nullptr;
  }

  //! Under m_: an instant at `last`.
  static wait_plan instant_locked(trace_slot* last, trace_slot** start, trace_slot** end) noexcept {
    ++last->refs;
    *start = nullptr;
    *end = last;
    return wait_plan::timed_by_slots;
  }

  trace_slot* take_join_locked(int d) {
    trace_slot* slot = nullptr;
    if (!joins_.empty()) {
      slot = joins_.back();
      joins_.pop_back();
    } else {
      slot = new trace_slot();
    }
    slot->join = true;
    slot->device = d;
    slot->refs = 1;
    slot->last = false;
    slot->prev_last = slot->next_last = nullptr;
    slot->timed = false;
    return slot;
  }

  //! Under m_: slot becomes a stream's last (it is in no list yet).
  void link_last(trace_slot* slot) noexcept {
    slot->last = true;
    slot->prev_last = nullptr;
    slot->next_last = lasts_;
    if (lasts_ != nullptr) lasts_->prev_last = slot;
    lasts_ = slot;
  }
  //! Under m_: slot is no longer a stream's last.
  void unlink_last(trace_slot* slot) noexcept {
    if (slot->prev_last != nullptr)
      slot->prev_last->next_last = slot->next_last;
    else
      lasts_ = slot->next_last;
    if (slot->next_last != nullptr) slot->next_last->prev_last = slot->prev_last;
    slot->prev_last = slot->next_last = nullptr;
    slot->last = false;
  }
  static constexpr std::size_t pool_limit = 4096;  // slots kept per device

  void grow(int d) {
    if (static_cast<std::size_t>(d) >= pools_.size()) {
      pools_.resize(static_cast<std::size_t>(d) + 1);
      clocks_.resize(static_cast<std::size_t>(d) + 1);
    }
  }

  trace_slot* take_locked(int d) {
    grow(d);
    auto& pool = pools_[static_cast<std::size_t>(d)];
    trace_slot* slot = nullptr;
    if (!pool.empty()) {
      slot = pool.back();
      pool.pop_back();
    } else {
      auto fresh = std::make_unique<trace_slot>();
      const scoped_device guard(d);
      check(api::event_create(&fresh->event, true, false),
            "sluice tracing: creating a timing event on device ", d);
      fresh->device = d;
      slot = fresh.release();
    }
    slot->refs = 1;
    slot->last = false;
    slot->prev_last = slot->next_last = nullptr;
    slot->timed = false;
    // ensure_clock(d) came first: the point was waited for before this slot's
    // event is recorded, so the slot's time is at or after it.
    slot->point = clocks_[static_cast<std::size_t>(d)].points.size() - 1;
    return slot;
  }

  void unref_locked(trace_slot* slot) noexcept {
    if (--slot->refs > 0) return;
    if (slot->join) {
      trace_slot* a = slot->a;
      trace_slot* b = slot->b;
      slot->a = slot->b = nullptr;
      try {
        joins_.push_back(slot);
      } catch (...) {
        delete slot;
      }
      unref_locked(a);  // depth at most max_join_depth
      unref_locked(b);
      return;
    }
    auto& pool = pools_[static_cast<std::size_t>(slot->device)];
    if (pool.size() < pool_limit) {
      try {
        pool.push_back(slot);
        return;
      } catch (...) {
      }
    }
    (void)api::event_destroy(slot->event);
    delete slot;
  }

  static constexpr std::int64_t point_interval_ns = 1000000000;  // see the file's comment

  //! Under m_: device d has a calibration point in this trace, and one taken
  //! within a second before `now` (a host time).
  void ensure_clock(int d, std::int64_t now) {
    grow(d);
    device_clock& c = clocks_[static_cast<std::size_t>(d)];
    if (!c.calibrated) {
      c.tried_ns = now;
      calibrate(d);  // the trace's first point on d: the operation cannot be timed without it
      return;
    }
    if (now - c.tried_ns < point_interval_ns) return;
    c.tried_ns = now;
    try_calibrate(d);  // tried again a second later if it fails
  }

  //! Under m_: a further point of device d that fails no operation: if it
  //! cannot be taken, d's times are extrapolated from its latest point, and
  //! stderr says so.
  void try_calibrate(int d) noexcept {
    try {
      calibrate(d);
    } catch (const std::exception& e) {
      api::clear_last_error();
      std::fprintf(stderr, "sluice: trace: %s (device times extrapolated)\n", e.what());
    }
  }

  //! Under m_: a new calibration point of device d (see the file's comment).
  void calibrate(int d) {
    device_clock& c = clocks_[static_cast<std::size_t>(d)];
    const scoped_device guard(d);
    if (c.stream == api::stream_t{}) {
      // From the pool: no stream is created while the device may be busy (IND-4).
      auto& dev = engine().dev(d, "sluice tracing");
      c.stream =
          dev.natives.take(dev, dev.range.least, "sluice tracing: the tracer's stream").stream;
    }
    // Two events: the best window so far and the next attempt.
    while (c.spare.size() < 2) {
      api::event_t e{};
      check(api::event_create(&e, true, false),
            "sluice tracing: creating a calibration event on device ", d);
      try {
        c.spare.push_back(e);
      } catch (...) {
        (void)api::event_destroy(e);
        throw;
      }
    }
    // Room for every event of the device in spare, and for one more point:
    // the two below and collect() give events back without allocating.
    c.points.reserve(c.points.size() + 1);
    c.spare.reserve(c.spare.size() + c.points.size());
    api::event_t best = c.spare.back();
    c.spare.pop_back();
    api::event_t attempt = c.spare.back();
    c.spare.pop_back();
    struct give_back {  // the two events return to the spares unless kept
      std::vector<api::event_t>& spare;
      api::event_t* a;
      api::event_t* b;
      ~give_back() {
        if (*a != api::event_t{}) spare.push_back(*a);
        if (*b != api::event_t{}) spare.push_back(*b);
      }
    } back{c.spare, &best, &attempt};
    // The narrowest window is kept: stop at the first under 20 us (a few us on
    // an idle machine), else after 8 attempts (a descheduled host thread
    // widens a window by milliseconds).
    std::int64_t narrowest = INT64_MAX;
    std::int64_t host_ns = 0;
    for (int i = 0; i < 8 && narrowest >= 20000; ++i) {
      const std::int64_t before = trace::now_ns();
      check(api::event_record(attempt, c.stream),
            "sluice tracing: recording a calibration event on device ", d);
      check(api::event_synchronize(attempt),
            "sluice tracing: waiting for a calibration event on device ", d);
      const std::int64_t after = trace::now_ns();
      if (after - before < narrowest) {
        narrowest = after - before;
        host_ns = before + narrowest / 2;
        std::swap(best, attempt);
      }
    }
    if (!c.points.empty() && host_ns <= c.points.back().host_ns) return;  // not later: not kept
    c.points.push_back(clock_point{best, host_ns, 0});
    best = api::event_t{};
    trace::note_clock_error(d, (narrowest + 1) / 2);
    c.calibrated = true;
  }

  //! Under m_: before completed operations are read, a point after them on
  //! every device in this trace whose latest is 10 ms old or more, so that
  //! their times are interpolated, not extrapolated (a failure leaves the
  //! times extrapolated from the latest point).
  void calibrate_for_harvest() noexcept {
    const std::int64_t now = trace::now_ns();
    for (std::size_t d = 0; d < clocks_.size(); ++d) {
      device_clock& c = clocks_[d];
      if (!c.calibrated || now - c.points.back().host_ns < 10000000) continue;
      try_calibrate(static_cast<int>(d));
    }
  }

  //! Under m_: host ns per device ns between points i and i+1 of c (1 when
  //! the vendor cannot tell).
  static double scale_of(device_clock& c, std::size_t i) noexcept {
    clock_point& p = c.points[i];
    if (p.scale != 0) return p.scale;
    const clock_point& q = c.points[i + 1];
    float ms = 0.0F;
    if (api::event_elapsed(&ms, p.event, q.event).ok() && ms > 0) {
      p.scale = static_cast<double>(q.host_ns - p.host_ns) / (static_cast<double>(ms) * 1e6);
    } else {
      api::clear_last_error();
      p.scale = 1.0;
    }
    return p.scale;
  }

  enum class slot_state { timed, not_ready, failed };

  //! Under m_: the host-clock time of a slot (slot->ns) once it completed.
  slot_state resolve(trace_slot* slot) noexcept {
    if (slot->timed) return slot_state::timed;
    if (slot->join) {
      const slot_state a = resolve(slot->a);  // depth at most max_join_depth
      if (a != slot_state::timed) return a;
      const slot_state b = resolve(slot->b);
      if (b != slot_state::timed) return b;
      slot->ns = std::max(slot->a->ns, slot->b->ns);
      slot->timed = true;
      return slot_state::timed;
    }
    const auto q = api::event_query(slot->event);
    if (q.code == api::not_ready) return slot_state::not_ready;
    device_clock& c = clocks_[static_cast<std::size_t>(slot->device)];
    std::size_t i = slot->point;
    float ms = 0.0F;
    if (!q.ok() || i >= c.points.size() ||
        !api::event_elapsed(&ms, c.points[i].event, slot->event).ok()) {
      api::clear_last_error();
      return slot_state::failed;
    }
    // The last point at or before the slot (its event may have completed
    // after later points were taken): then between that one and the next,
    // from whichever of the two is nearer (the float's step grows with the
    // time from the point: 2-4 us a minute or two away).
    float next_ms = 0.0F;
    bool next_known = false;  // next_ms: the next point's time from the slot, negative
    while (i + 1 < c.points.size()) {
      next_known = api::event_elapsed(&next_ms, c.points[i + 1].event, slot->event).ok();
      if (!next_known || next_ms < 0) break;
      ++i;
      ms = next_ms;
      next_known = false;
    }
    api::clear_last_error();
    if (i + 1 < c.points.size()) {
      const double scale = scale_of(c, i);
      if (next_known && -next_ms < ms)
        slot->ns =
            c.points[i + 1].host_ns + std::llround(static_cast<double>(next_ms) * 1e6 * scale);
      else
        slot->ns = c.points[i].host_ns + std::llround(static_cast<double>(ms) * 1e6 * scale);
    } else {
      slot->ns = c.points[i].host_ns + std::llround(static_cast<double>(ms) * 1e6);
    }
    slot->timed = true;
    return slot_state::timed;
  }

  //! Moves completed records to the collection and unreferences their slots.
  //! With `all`, the incomplete ones are dropped too; returns how many those were.
  std::size_t harvest_locked(bool all) {
    calibrate_for_harvest();
    std::size_t dropped = 0;
    // Compacted in place: ops_ keeps its capacity from trace to trace (a new
    // vector per trace cost page faults on every growth, in the enqueueing thread).
    std::size_t kept = 0;
    for (pending& p : ops_) {
      const slot_state q = resolve(p.end);
      if (q == slot_state::not_ready && !all) {
        if (&ops_[kept] != &p) ops_[kept] = std::move(p);
        ++kept;
        continue;
      }
      bool timed = q == slot_state::timed;
      if (timed) {
        p.r.end_ns = p.end->ns;
        if (p.start == nullptr) {
          p.r.start_ns = p.r.end_ns;  // a marker or an instant
        } else {
          timed = resolve(p.start) == slot_state::timed;
          p.r.start_ns = p.start->ns;
        }
      }
      if (timed) {
        // Nothing starts on the device before the host enqueued it: a stream
        // idle since its previous operation ended (the slot this one starts
        // at) shows the gap. Device times are mapped onto the host clock
        // within half the calibration window (the trace's clock_error_us).
        p.r.start_ns = std::max(p.r.start_ns, p.r.enqueue_ns);
        p.r.end_ns = std::max(p.r.end_ns, p.r.start_ns);
        trace::submit(std::move(p.r));
      } else {
        ++dropped;
      }
      if (p.start != nullptr) unref_locked(p.start);
      unref_locked(p.end);
    }
    ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(kept), ops_.end());
    return dropped;
  }

  std::mutex m_;
  std::vector<std::vector<trace_slot*>> pools_;  // per device
  std::vector<device_clock> clocks_;             // per device
  std::vector<pending> ops_;
  std::vector<trace_slot*> joins_;  // pooled joins
  trace_slot completed_;            // an event's mark: its last record has completed
  trace_slot* lasts_ = nullptr;     // every stream's last slot, linked through the slots
  std::uint64_t epoch_ = 1;
  std::size_t next_harvest_ = harvest_step;
};

tracer& the_tracer() {
  static auto* t = new tracer();  // never destroyed: traces may be written at exit
  return *t;
}

//! The record every traced operation starts from.
trace::record new_record(stream_state& s, const char* kind, std::size_t bytes) {
  trace::record r;
  r.kind = kind;
  r.bytes = bytes;
  r.device = s.device;
  r.stream = s.trace.id;
  r.priority = s.native_priority;
  r.seq = s.trace.seq.fetch_add(1, std::memory_order_relaxed) + 1;
  r.host_thread = trace::thread_id();
  r.enqueue_ns = trace::now_ns();
  return r;
}

//! Records a slot's event on the stream; on failure gives back both slots and throws.
void record_slot(stream_state& s, trace_slot* slot, trace_slot* start, trace_slot* end) {
  const auto recorded = api::event_record(slot->event, s.native);
  if (!recorded.ok()) {
    the_tracer().abandon(start, end);
    check(recorded, "sluice tracing: recording a timing event on a stream of device ", s.device);
  }
}

}  // namespace

void traced_op::begin(stream_state& s, const char* kind, std::size_t bytes, bool instant) {
  auto st = std::make_unique<traced_op_state>();
  st->stream = &s;
  st->lock = std::unique_lock<std::mutex>(s.trace.m);
  st->r = new_record(s, kind, bytes);
  const std::int64_t now = st->r.enqueue_ns;
  bool record_start = false;
  if (instant) the_tracer().begin_op(s, now, false, &st->end, nullptr, &record_start);
  if (st->end != nullptr)
    st->shared_end = true;  // an instant where the stream's last operation ended
  else
    // One event before it and one after (or, for an instant on a stream with
    // no last slot, one event: a marker).
    the_tracer().begin_op(s, now, !instant, &st->start, &st->end, &record_start);
  if (record_start) record_slot(s, st->start, st->start, st->end);
  state_ = st.release();
}

void traced_op::begin_wait(stream_state& s, event_state* waited_event,
                           stream_state* waited_stream) {
  auto st = std::make_unique<traced_op_state>();
  st->stream = &s;
  st->lock = std::unique_lock<std::mutex>(s.trace.m);
  auto& t = the_tracer();
  st->r = new_record(s, "wait", 0);
  const std::int64_t now = st->r.enqueue_ns;
  auto plan = t.begin_wait(s, now, waited_event, waited_stream, false, &st->start, &st->end);
  if (plan == tracer::wait_plan::ask_event) {
    // Recorded before this trace (or untraced): if it has completed, the
    // wait waits for nothing; a failed query is left to the wait to report.
    const auto q = api::event_query(waited_event->native);
    if (q.ok()) {
      t.mark_completed(waited_event->trace);
      plan = t.begin_wait(s, now, nullptr, nullptr, true, &st->start, &st->end);
    } else if (q.code != api::not_ready)
      api::clear_last_error();
  }
  if (plan == tracer::wait_plan::timed_by_slots) {
    st->shared_end = true;
  } else {
    bool record_start = false;
    t.begin_op(s, now, true, &st->start, &st->end, &record_start);
    if (record_start) record_slot(s, st->start, st->start, st->end);
  }
  state_ = st.release();
}

void traced_op::marks(event_trace& e) noexcept {
  if (state_ == nullptr) {
    e.stream.store(0, std::memory_order_relaxed);
    e.seq.store(0, std::memory_order_relaxed);
    return;
  }
  e.stream.store(state_->stream->trace.id, std::memory_order_relaxed);
  e.seq.store(state_->r.seq, std::memory_order_relaxed);
  state_->mark = &e;
}

void trace_forget_event(event_trace& e) noexcept { the_tracer().forget_event(e); }

void traced_op::path(const char* p) noexcept {
  if (state_ != nullptr) state_->r.path = p;
}

void traced_op::waits_for(const stream_trace& other) noexcept {
  if (state_ != nullptr) waits_for(other.id, other.seq.load(std::memory_order_relaxed));
}

void traced_op::waits_for(const event_trace& e) noexcept {
  if (state_ != nullptr)
    waits_for(e.stream.load(std::memory_order_relaxed), e.seq.load(std::memory_order_relaxed));
}

void traced_op::waits_for(std::uint64_t stream, std::uint64_t seq) noexcept {
  if (stream != 0) {
    state_->r.from_stream = stream;
    state_->r.from_seq = seq;
  }
}

void traced_op::finish() {
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  stream_state& s = *st->stream;
  if (st->shared_end) {
    the_tracer().end_op(s, pending{std::move(st->r), st->start, st->end}, st->mark);
    return;
  }
  // The operation is enqueued: a failure here must not make its call throw.
  const auto recorded = api::event_record(st->end->event, s.native);
  if (!recorded.ok()) {
    api::clear_last_error();
    std::fprintf(stderr,
                 "sluice: trace: a %s on a stream of device %d is left out of the trace: "
                 "recording its timing event failed (%s)\n",
                 st->r.kind, s.device, recorded.api);
    the_tracer().abandon(st->start, st->end);
    return;
  }
  the_tracer().end_op(s, pending{std::move(st->r), st->start, st->end}, st->mark);
}

void traced_op::abandon() noexcept {
  // The operation threw before it was enqueued: its slots go back (a start
  // event already recorded completes on its own).
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  the_tracer().abandon(st->start, st->end);
}

namespace {

struct traced_task final : host_task {
  traced_task(std::unique_ptr<host_task> t, trace::record rec)
      : inner(std::move(t)), r(std::move(rec)) {}
  void run() override {
    r.start_ns = trace::now_ns();
    struct stamp_end {
      trace::record& r;
      ~stamp_end() {
        r.end_ns = trace::now_ns();
        trace::submit(std::move(r));
      }
    } end{r};
    inner->run();  // what it throws is reported by the batch (HOST-4)
  }
  std::unique_ptr<host_task> inner;
  trace::record r;
};

}  // namespace

std::unique_ptr<host_task> traced_host_task(stream_state& s, std::unique_ptr<host_task> task,
                                            const char* kind, std::size_t bytes, const char* path) {
  {
    // Its callback and gate wait lie between the operations before and after it.
    const std::lock_guard<std::mutex> lock(s.trace.m);
    the_tracer().break_chain(s);
  }
  trace::record r = new_record(s, kind, bytes);
  r.path = path;
  return std::make_unique<traced_task>(std::move(task), std::move(r));
}

bool trace_supported() noexcept { return true; }

void trace_backend_collect() { the_tracer().collect(); }

void enqueue_trace_marker(stream_ref s, const std::string& name, bool begin) {
  auto& st = checked(s, begin ? "sluice::trace_range" : "sluice::trace_range::~trace_range");
  if (!trace::enabled()) return;
  // One event: a marker takes no time; the next operation starts there.
  std::unique_lock<std::mutex> lock(st.trace.m);
  trace_slot* start = nullptr;
  trace_slot* end = nullptr;
  bool unused = false;
  trace::record r = new_record(st, begin ? "range_begin" : "range_end", 0);
  the_tracer().begin_op(st, r.enqueue_ns, false, &start, &end, &unused);
  record_slot(st, end, nullptr, end);
  r.label = name;
  the_tracer().end_op(st, pending{std::move(r), nullptr, end});
}

}  // namespace sluice::detail
