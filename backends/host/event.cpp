// Events of the host backend: a record is a position in a stream plus, for
// timing events, the time the record op ran.
#include "backend_rules.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "mutation.hpp"
#include "stream_names.hpp"

#include <sluice/native.hpp>

#include <algorithm>

namespace sluice {

namespace detail {
namespace {

//! Only timing records need to reach their record_state (to stamp it); a
//! plain record is a marker whose completion is the stream's position.
struct record_op final : op {
  explicit record_op(std::shared_ptr<record_state> r) : rec(std::move(r)) {}
  void describe(trace::record& r) const override { r.kind = "record"; }
  step run(stream_state&) override {
    if (rec) rec->timestamp_ns.store(now_ns(), std::memory_order_relaxed);
    return step::done;
  }
  std::shared_ptr<record_state> rec;  // null for non-timing events
};

event_state& checked_event(const event& e, const char* api) {
  auto* s = access::state(e);
  if (s == nullptr) fail(errc::invalid_handle, api, "the event is empty (moved from)");
  return *s;
}

}  // namespace

void enqueue_wait(stream_state& s, stream_state& other, seq_t target);

}  // namespace detail

using detail::checked_event;

event::event(sluice::device d, event_options o) {
  (void)detail::engine().dev(d.id());
  state_ = new detail::event_state();
  state_->device = d.id();
  state_->options = o;
}

event::~event() {  // records in flight keep their own record_state
  if (state_ == nullptr) return;
  state_->usage.destroyed(state_->device);
  detail::forget_event(state_);  // graphs that record it keep what they need
  delete state_;
}

device event::device() const {
  return sluice::device(checked_event(*this, "sluice::event::device").device);
}

event_options event::options() const {
  return checked_event(*this, "sluice::event::options").options;
}

void event::record(stream_ref s) {
  auto& e = checked_event(*this, "sluice::event::record");
  auto& st = detail::checked(s, "sluice::event::record");
  if (st.dev->id != e.device)
    detail::fail(errc::invalid_argument, "sluice::event::record", "the event belongs to device ",
                 e.device, " but the stream to device ", st.dev->id);
  // In a capture: a vertex of the graph; the event keeps its state until a launch.
  if (detail::any_capture() && detail::record_event_if_capturing(st, e)) return;
  detail::clear_event_mark(&e);
  st.failures.rethrow_comm(st.dev->id);  // a failed communication surfaces here too (COMM-7)
  auto rec = std::make_shared<detail::record_state>(&st);
  // Hold the lock across the enqueue so that concurrent records publish in enqueue order.
  std::lock_guard<std::mutex> lock(e.m);
  rec->seq = detail::enqueue(st, new detail::record_op(e.options.timing ? rec : nullptr));
  if (detail::mutation::is(detail::mutation::kind::complete_records_at_once)) rec->seq = 0;
  e.last = std::move(rec);
  e.usage.recorded(SLUICE_CALL_SITE());
}

bool event::ready() const {
  auto& e = checked_event(*this, "sluice::event::ready");
  detail::refuse_if_recorded_in_capture(&e, "sluice::event::ready");
  e.usage.use();
  auto rec = e.snapshot();
  return rec == nullptr || rec->done();
}

void event::synchronize() const {
  auto& e = checked_event(*this, "sluice::event::synchronize");
  detail::refuse_if_recorded_in_capture(&e, "sluice::event::synchronize");
  e.usage.use();
  auto rec = e.snapshot();
  if (rec == nullptr) return;
  detail::check_not_self_wait(*rec->stream, rec->seq, "sluice::event::synchronize");
  detail::wait_reached(*rec->stream, rec->seq, e.options.blocking_sync);
}

void stream_ref::wait(const event& e) const {
  auto& s = detail::checked(*this, "sluice::stream_ref::wait");
  auto& ev = checked_event(e, "sluice::stream_ref::wait");
  ev.usage.use();
  auto rec = ev.snapshot();
  if (detail::any_capture() &&
      detail::record_event_wait_if_capturing(s, &ev, rec != nullptr, "sluice::stream_ref::wait"))
    return;
  if (rec == nullptr) {  // never recorded: a no-op (EVT-3)
    if (detail::diagnose::enabled())
      detail::diagnose::warn(detail::diagnose::kind::unrecorded_event_wait, SLUICE_CALL_SITE(),
                             detail::stream_names::phrase(s.trace_id, s.dev->id) +
                                 " waited on an event that was never recorded: the wait does "
                                 "nothing",
                             "record the event before waiting on it, on the stream whose work "
                             "should be waited for");
    return;
  }
  detail::enqueue_wait(s, *rec->stream, rec->seq);
}

std::chrono::duration<double, std::milli> elapsed(const event& start, const event& stop) {
  constexpr const char* api = "sluice::elapsed";
  auto& a = checked_event(start, api);
  auto& b = checked_event(stop, api);
  detail::refuse_if_recorded_in_capture(&a, api);
  detail::refuse_if_recorded_in_capture(&b, api);
  a.usage.use();
  b.usage.use();
  auto ra = a.snapshot();
  auto rb = b.snapshot();
  detail::check_elapsed_arguments(a.options.timing, b.options.timing, a.device, b.device,
                                  ra != nullptr, rb != nullptr);
  if (!ra->done() || !rb->done())
    throw error(errc::not_ready, std::string(api) + ": a record has not completed yet", 0, api);
  const auto ns = std::max<std::int64_t>(0, rb->timestamp_ns.load(std::memory_order_relaxed) -
                                                ra->timestamp_ns.load(std::memory_order_relaxed));
  return std::chrono::duration<double, std::milli>(static_cast<double>(ns) / 1e6);
}

native_event_t native_handle(const event& e) {
  return reinterpret_cast<native_event_t>(&checked_event(e, "sluice::native_handle"));
}

}  // namespace sluice
