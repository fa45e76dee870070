// The traced operation (gpu_trace.hpp), traced host tasks and trace_range's
// markers: what an enqueue does while a trace is collected. The slots it
// starts and ends at are the tracer's (tracer.cpp); which source times the
// trace: trace_source.cpp.
#include "event_state.hpp"
#include "host_functions.hpp"
#include "stream_state.hpp"
#include "trace/activity_tracer.hpp"
#include "trace/gpu_trace.hpp"
#include "trace/tracer.hpp"
#include "vendor.hpp"

#include <sluice/trace.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace sluice::detail {

struct traced_op_state {
  stream_state* stream = nullptr;
  std::unique_lock<std::mutex> lock;  // the stream's trace.m, from begin to finish
  trace::record own;                  // the event tracer's record of the operation
  trace_slot* start = nullptr;
  trace_slot* end = nullptr;
  bool shared_end = false;  // an instant at the stream's last slot, or a join: nothing to record
  event_trace* mark = nullptr;  // an event this operation records (traced_op::marks)
  // Timed by the activity tracer (activity_tracer.hpp): its slot, and the
  // source its id was pushed to (popped there whatever happens to the trace).
  activity_tracer::slot* activity = nullptr;
  activity_source* pushed = nullptr;
  //! The operation's record: the activity tracer's slot's (filled there
  //! before the vendor call), else `own`.
  trace::record& r() noexcept { return activity != nullptr ? activity->r : own; }
};

namespace {

//! The record every traced operation starts from, enqueued at `enqueue`
//! (the host clock; the activity tracer's stamp() for its operations).
//! The activity tracer's is filled in place in its slot (no temporary moved
//! in). On 2x H200, skipping the record altogether took about 36 ns off a
//! traced event record with the CUPTI source
//! (docs/results/runs/2026-11-27-cupti-trace-source.md); what
//! filling in place saves there was not measured apart.
void fill_record(trace::record& r, stream_state& s, const char* kind, std::size_t bytes,
                 std::int64_t enqueue) {
  r.kind = kind;
  r.label.clear();
  r.path = nullptr;
  r.bytes = bytes;
  r.device = s.device;
  r.stream = s.trace.id;
  r.priority = s.native_priority;
  r.seq = s.trace.seq.fetch_add(1, std::memory_order_relaxed) + 1;
  r.host_thread = trace::thread_id();
  r.enqueue_ns = enqueue;
  r.start_ns = 0;
  r.end_ns = 0;
  r.from_stream = 0;
  r.from_seq = 0;
  r.range = 0;
  r.launch = 0;
  r.vertex = 0;
  r.graph_stream = 0;
  trace::fill_graph(r);  // made by a graph launch: its operation (graph_exec.cpp)
}

trace::record new_record(stream_state& s, const char* kind, std::size_t bytes,
                         std::int64_t enqueue) {
  trace::record r;
  fill_record(r, s, kind, bytes, enqueue);
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

//! The activity tracer's trace knows s's vendor stream id.
void add_activity_stream(activity_tracer& at, stream_state& s) {
  const std::uint64_t e = at.epoch();
  if (s.trace.activity_epoch.load(std::memory_order_relaxed) == e) return;
  at.add_stream(static_cast<void*>(s.native), s.trace.id, s.device, s.native_priority);
  s.trace.activity_epoch.store(e, std::memory_order_relaxed);
}

//! With an activity source: no timing events, no lock; the operation's id is
//! the calling thread's external correlation id until finish().
//! The calling thread's traced_op_state of its last finished activity-timed
//! operation, reused by its next (no allocation per operation).
thread_local std::unique_ptr<traced_op_state> spare_state;

traced_op_state* begin_activity(activity_tracer& at, stream_state& s, const char* kind,
                                std::size_t bytes) {
  std::unique_ptr<traced_op_state> st = std::move(spare_state);
  if (st == nullptr) st = std::make_unique<traced_op_state>();
  st->stream = &s;
  add_activity_stream(at, s);
  // An operation with no device work of its own (an event record, a wait, a
  // flag operation, a marker) needs no external id: it is placed from its
  // stream's other operations (activity_tracer.hpp).
  st->activity = at.open(&st->pushed, activity_device_kind(kind));
  fill_record(st->r(), s, kind, bytes, at.stamp());
  return st.release();
}

}  // namespace

void trace_native_taken(stream_state& s) {
  auto& at = the_activity_tracer();
  if (trace::enabled() && at.active()) add_activity_stream(at, s);
}

void traced_op::begin(stream_state& s, const char* kind, std::size_t bytes, bool instant) {
  if (auto& at = the_activity_tracer(); at.active()) {
    state_ = begin_activity(at, s, kind, bytes);
    return;
  }
  auto st = std::make_unique<traced_op_state>();
  st->stream = &s;
  st->lock = std::unique_lock<std::mutex>(s.trace.m);
  st->own = new_record(s, kind, bytes, trace::now_ns());
  const std::int64_t now = st->own.enqueue_ns;
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
  if (auto& at = the_activity_tracer(); at.active()) {
    state_ = begin_activity(at, s, "wait", 0);
    return;
  }
  auto st = std::make_unique<traced_op_state>();
  st->stream = &s;
  st->lock = std::unique_lock<std::mutex>(s.trace.m);
  auto& t = the_tracer();
  st->own = new_record(s, "wait", 0, trace::now_ns());
  const std::int64_t now = st->own.enqueue_ns;
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
  e.seq.store(state_->r().seq, std::memory_order_relaxed);
  state_->mark = &e;
}

void trace_forget_event(event_trace& e) noexcept { the_tracer().forget_event(e); }

void traced_op::path(const char* p) noexcept {
  if (state_ != nullptr) state_->r().path = p;
}

void traced_op::label(const char* text) {
  if (state_ != nullptr) state_->r().label = text;
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
    state_->r().from_stream = stream;
    state_->r().from_seq = seq;
  }
}

void traced_op::finish() {
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  stream_state& s = *st->stream;
  if (st->activity != nullptr) {
    activity_tracer::close(st->activity, st->pushed);
    st->activity = nullptr;
    st->mark = nullptr;
    spare_state = std::move(st);
    return;
  }
  if (st->shared_end) {
    the_tracer().end_op(s, pending{std::move(st->own), st->start, st->end}, st->mark);
    return;
  }
  // The operation is enqueued: a failure here must not make its call throw.
  const auto recorded = api::event_record(st->end->event, s.native);
  if (!recorded.ok()) {
    api::clear_last_error();
    std::fprintf(stderr,
                 "sluice: trace: a %s on a stream of device %d is left out of the trace: "
                 "recording its timing event failed (%s)\n",
                 st->own.kind, s.device, recorded.api);
    the_tracer().abandon(st->start, st->end);
    return;
  }
  the_tracer().end_op(s, pending{std::move(st->own), st->start, st->end}, st->mark);
}

void traced_op::abandon() noexcept {
  // The operation threw before it was enqueued: its slots go back (a start
  // event already recorded completes on its own).
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  if (st->activity != nullptr)
    activity_tracer::abandon(st->activity, st->pushed);
  else
    the_tracer().abandon(st->start, st->end);
}

namespace {

struct traced_task final : host_task {
  traced_task(std::unique_ptr<host_task> t, trace::record rec)
      : inner(std::move(t)), r(std::move(rec)) {}
  void run() override {
    r.start_ns = trace::now_ns();
    // A host function's span says which path brought it (signal or callback).
    if (r.path == nullptr) r.path = running_host_function_path();
    struct stamp_end {
      trace::record& r;
      ~stamp_end() {
        r.end_ns = trace::now_ns();
        // From CUPTI, the operations after it with no activity of their
        // own are placed after it (activity_tracer::host_ran).
        if (auto& at = the_activity_tracer(); at.active()) at.host_ran(r.stream, r.seq, r.end_ns);
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
    // Its signal and gate wait lie between the operations before and after it.
    const std::lock_guard<std::mutex> lock(s.trace.m);
    the_tracer().break_chain(s);
  }
  trace::record r = new_record(s, kind, bytes, trace::now_ns());
  r.path = path;
  return std::make_unique<traced_task>(std::move(task), std::move(r));
}

void enqueue_trace_marker(stream_ref s, const std::string& name, bool begin, std::uint64_t range) {
  auto& st = checked(s, begin ? "sluice::trace_range" : "sluice::trace_range::~trace_range");
  if (!trace::enabled()) return;
  if (auto& at = the_activity_tracer(); at.active()) {
    // Placed where the stream's previous operation ended (activity_tracer.cpp).
    std::unique_ptr<traced_op_state> op(
        begin_activity(at, st, begin ? "range_begin" : "range_end", 0));
    try {
      op->r().label = name;
    } catch (...) {
      // No slot stays open (it would keep the thread's slots from reuse).
      activity_tracer::abandon(op->activity, op->pushed);
      throw;
    }
    op->r().range = range;
    activity_tracer::close(op->activity, op->pushed);
    return;
  }
  // One event: a marker takes no time; the next operation starts there.
  std::unique_lock<std::mutex> lock(st.trace.m);
  trace_slot* start = nullptr;
  trace_slot* end = nullptr;
  bool unused = false;
  trace::record r = new_record(st, begin ? "range_begin" : "range_end", 0, trace::now_ns());
  the_tracer().begin_op(st, r.enqueue_ns, false, &start, &end, &unused);
  record_slot(st, end, nullptr, end);
  r.label = name;
  r.range = range;
  the_tracer().end_op(st, pending{std::move(r), nullptr, end});
}

}  // namespace sluice::detail
