// Events of the GPU backend: vendor events, plus what the vendor does not
// check (EVT-5 device match, EVT-8 argument rules, self-waits from host functions).
#include "backend_rules.hpp"
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "event_state.hpp"
#include "graph.hpp"
#include "stream_names.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"

#include <algorithm>

namespace sluice {

namespace detail {
namespace {

event_state& checked_event(const event& e, const char* api_name) {
  auto* s = access::state(e);
  if (s == nullptr) [[unlikely]]
    fail(errc::invalid_handle, api_name, "the event is empty (moved from)");
  return *s;
}

}  // namespace
}  // namespace detail

using detail::checked_event;

event::event(sluice::device d, event_options o) {
  auto& dev = detail::engine().dev(d.id(), "sluice::event");
  auto state = std::make_unique<detail::event_state>();
  state->device = dev.id;
  state->options = o;
  const detail::scoped_device guard(dev.id);
  detail::check(gpu::api::event_create(&state->native, o.timing, o.blocking_sync),
                "sluice::event: creating an event on device ", dev.id);
  state_ = state.release();
}

event::~event() {
  if (state_ == nullptr) return;
  state_->usage.destroyed(state_->device);
  detail::forget_event(state_);  // graphs that record it keep what they need
  if (state_->trace.mark != nullptr) detail::trace_forget_event(state_->trace);
  // Returns at once with a record pending; waits already issued keep waiting (EVT-7).
  (void)gpu::api::event_destroy(state_->native);
  delete state_;
}

device event::device() const {
  return sluice::device(checked_event(*this, "sluice::event::device").device);
}

event_options event::options() const {
  return checked_event(*this, "sluice::event::options").options;
}

void event::record(stream_ref s) {
  constexpr const char* api = "sluice::event::record";
  auto& e = checked_event(*this, api);
  auto& st = detail::checked(s, api);
  if (st.device != e.device) [[unlikely]]
    detail::fail(errc::invalid_argument, api, "the event belongs to device ", e.device,
                 " but the stream to device ", st.device);
  st.failures.rethrow_comm(st.device);  // a failed communication surfaces here too (COMM-7)
  if (detail::any_capture() && detail::record_event_if_capturing(st, e)) [[unlikely]]
    return;
  detail::enqueue_record(e, st, api);
  e.usage.recorded(SLUICE_CALL_SITE());
}

void detail::enqueue_record(event_state& e, stream_state& st, const char* api_name) {
  clear_event_mark(&e);  // recorded outside every capture now
  enqueue_scope<keep_device> scope(st, "record", 0, /*instant=*/true);
  check(gpu::api::event_record(e.native, st.native), api_name, ": event of device ", e.device);
  scope.marks(e.trace);
  scope.done();
  e.record_stream.store(&st, std::memory_order_relaxed);
  e.record_tickets.store(st.host_functions_published.load(std::memory_order_acquire),
                         std::memory_order_relaxed);
  e.recorded.store(true, std::memory_order_release);
}

bool event::ready() const {
  auto& e = checked_event(*this, "sluice::event::ready");
  detail::refuse_if_recorded_in_capture(&e, "sluice::event::ready");
  e.usage.use();
  const auto q = gpu::api::event_query(e.native);
  if (q.code == gpu::api::not_ready) return false;
  detail::check(q, "sluice::event::ready: event of device ", e.device);
  return true;
}

void event::synchronize() const {
  constexpr const char* api = "sluice::event::synchronize";
  auto& e = checked_event(*this, api);
  detail::refuse_if_recorded_in_capture(&e, api);
  e.usage.use();
  if (auto* self = detail::current_host_function_stream();
      self != nullptr && self == e.record_stream.load(std::memory_order_relaxed))
    detail::check_not_self_wait(*self, e.record_tickets.load(std::memory_order_relaxed), api);
  detail::check(gpu::api::event_synchronize(e.native), api, ": event of device ", e.device);
}

void stream_ref::wait(const event& e) const {
  constexpr const char* api = "sluice::stream_ref::wait";
  auto& s = detail::checked(*this, api);
  auto& ev = checked_event(e, api);
  ev.usage.use();
  if (detail::record_event_wait_if_capturing(s, &ev, ev.recorded.load(std::memory_order_acquire),
                                             api)) [[unlikely]]
    return;
  if (detail::diagnose::enabled() && !ev.recorded.load(std::memory_order_acquire))
    detail::diagnose::warn(detail::diagnose::kind::unrecorded_event_wait, SLUICE_CALL_SITE(),
                           detail::stream_names::phrase(s.trace.id, s.device) +
                               " waited on an event that was never recorded: the wait does "
                               "nothing",
                           "record the event before waiting on it, on the stream whose work "
                           "should be waited for");
  // A never-recorded event is a no-op for the vendor too (EVT-3).
  detail::enqueue_scope<detail::keep_device> scope(s, &ev, nullptr);
  scope.waits_for(ev.trace);
  detail::check(gpu::api::stream_wait_event(s.native, ev.native), api, ": stream on device ",
                s.device, " waiting for an event of device ", ev.device);
  scope.done();
}

std::chrono::duration<double, std::milli> elapsed(const event& start, const event& stop) {
  constexpr const char* api = "sluice::elapsed";
  auto& a = checked_event(start, api);
  auto& b = checked_event(stop, api);
  detail::refuse_if_recorded_in_capture(&a, api);
  detail::refuse_if_recorded_in_capture(&b, api);
  a.usage.use();
  b.usage.use();
  detail::check_elapsed_arguments(a.options.timing, b.options.timing, a.device, b.device,
                                  a.recorded.load(std::memory_order_acquire),
                                  b.recorded.load(std::memory_order_acquire));
  for (const auto* ev : {&a, &b}) {
    const auto q = gpu::api::event_query(ev->native);
    if (q.code == gpu::api::not_ready)
      throw error(errc::not_ready, std::string(api) + ": a record has not completed yet", 0, api);
    detail::check(q, api, ": event of device ", ev->device);
  }
  float ms = 0.0F;
  detail::check(gpu::api::event_elapsed(&ms, a.native, b.native), api, ": events of device ",
                a.device);
  // Stop recorded before start gives a negative time on CUDA; HIP can return tiny
  // negatives for back-to-back records (semantics.md EVT-8): never negative.
  return std::chrono::duration<double, std::milli>(std::max(0.0, static_cast<double>(ms)));
}

native_event_t native_handle(const event& e) {
  return checked_event(e, "sluice::native_handle").native;
}

}  // namespace sluice
