// The tracer's slots (tracer.hpp): the timing events and joins that
// operations start and end at, the chain of each stream's last slot, and the
// harvest. Records are read when their end slot has completed: in bulk as the
// pending list grows, and at trace_end(), which leaves out (and says so)
// operations whose end event has not completed.
#include "trace/tracer.hpp"

#include "event_state.hpp"
#include "stream_state.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>

namespace sluice::detail {

void tracer::begin_op(stream_state& s, std::int64_t now, bool needs_start, trace_slot** start,
                      trace_slot** end, bool* record_start) {
  std::lock_guard<std::mutex> lock(m_);
  clocks_.ensure(s.device, now);
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

tracer::wait_plan tracer::begin_wait(stream_state& s, std::int64_t now, event_state* ev,
                                     stream_state* other, bool nothing, trace_slot** start,
                                     trace_slot** end) {
  std::lock_guard<std::mutex> lock(m_);
  clocks_.ensure(s.device, now);
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

void tracer::end_op(stream_state& s, pending&& p, event_trace* mark) {
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

void tracer::break_chain(stream_state& s) noexcept {
  std::lock_guard<std::mutex> lock(m_);
  trace_slot* last = s.trace.last;
  if (last != nullptr && s.trace.epoch == epoch_ && last->last) {
    unlink_last(last);
    unref_locked(last);
  }
  s.trace.last = nullptr;
}

void tracer::abandon(trace_slot* start, trace_slot* end) noexcept {
  std::lock_guard<std::mutex> lock(m_);
  if (start != nullptr) unref_locked(start);
  if (end != nullptr) unref_locked(end);
}

void tracer::forget_event(event_trace& e) noexcept {
  std::lock_guard<std::mutex> lock(m_);
  set_mark_locked(e, nullptr);
}

void tracer::mark_completed(event_trace& e) {
  std::lock_guard<std::mutex> lock(m_);
  set_mark_locked(e, &completed_);
}

void tracer::collect() {
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
  clocks_.restart();                                             // the next trace calibrates afresh
}

//! Under m_: e's mark becomes `slot` (a reference it holds, or &completed_).
void tracer::set_mark_locked(event_trace& e, trace_slot* slot) noexcept {
  trace_slot* old = e.mark;
  if (old != nullptr && old != &completed_) unref_locked(old);
  e.mark = slot;
  e.mark_epoch = epoch_;
}

//! Under m_: the slot s's next operation may start at (its last in this
//! trace, with no untraced work after it), or null.
trace_slot* tracer::chained_last_locked(const stream_state& s) const noexcept {
  trace_slot* last = s.trace.last;
  const bool chain = last != nullptr && s.trace.epoch == epoch_ &&
                     !s.native_escaped.load(std::memory_order_relaxed);
  return chain ? last : nullptr;
}

//! Under m_: an instant at `last`.
tracer::wait_plan tracer::instant_locked(trace_slot* last, trace_slot** start,
                                         trace_slot** end) noexcept {
  ++last->refs;
  *start = nullptr;
  *end = last;
  return wait_plan::timed_by_slots;
}

//! Under m_: a join slot of device d, with one reference.
trace_slot* tracer::take_join_locked(int d) {
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
void tracer::link_last(trace_slot* slot) noexcept {
  slot->last = true;
  slot->prev_last = nullptr;
  slot->next_last = lasts_;
  if (lasts_ != nullptr) lasts_->prev_last = slot;
  lasts_ = slot;
}

//! Under m_: slot is no longer a stream's last.
void tracer::unlink_last(trace_slot* slot) noexcept {
  if (slot->prev_last != nullptr)
    slot->prev_last->next_last = slot->next_last;
  else
    lasts_ = slot->next_last;
  if (slot->next_last != nullptr) slot->next_last->prev_last = slot->prev_last;
  slot->prev_last = slot->next_last = nullptr;
  slot->last = false;
}

//! Under m_: a timing slot of device d (pooled, or with a new event), with one
//! reference.
trace_slot* tracer::take_locked(int d) {
  if (static_cast<std::size_t>(d) >= pools_.size()) pools_.resize(static_cast<std::size_t>(d) + 1);
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
  // clocks_.ensure(d) came first: the point was waited for before this slot's
  // event is recorded, so the slot's time is at or after it.
  slot->point = clocks_.latest(d);
  return slot;
}

//! Under m_: drops a reference; the last one returns the slot to its pool (a
//! join also drops its references to a and b).
void tracer::unref_locked(trace_slot* slot) noexcept {
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

//! Under m_: the host-clock time of a slot (slot->ns) once it completed.
tracer::slot_state tracer::resolve(trace_slot* slot) noexcept {
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
  if (!q.ok()) {
    api::clear_last_error();
    return slot_state::failed;
  }
  if (!clocks_.host_time(slot->device, slot->point, slot->event, &slot->ns))
    return slot_state::failed;
  slot->timed = true;
  return slot_state::timed;
}

//! Under m_: moves completed records to the collection and unreferences their
//! slots. With `all`, the incomplete ones are dropped too; returns how many
//! those were.
std::size_t tracer::harvest_locked(bool all) {
  clocks_.calibrate_for_harvest();
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

}  // namespace sluice::detail
