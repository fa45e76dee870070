// Streams of the GPU backend: handles, synchronization, waits on other
// streams and flags' stream operations. Host functions: host_func/.
#include "backend_rules.hpp"
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "flag_state.hpp"
#include "graph.hpp"
#include "host_func/host_holds.hpp"
#include "priority.hpp"
#include "stream_names.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

namespace sluice {

namespace detail {

void rethrow_host_errors(stream_state& s) { s.failures.rethrow(s.device); }

void wait_for_stream(stream_state& s, stream_state& other, const char* api_name) {
  if (&s == &other) return;  // a stream is always ordered after its own work
  std::lock_guard<spin_mutex> lock(other.enqueue_m);
  end_host_batch(other);  // the position recorded on it
  check(api::event_record(other.position, other.native), api_name,
        ": recording the position of a stream on device ", other.device);
  enqueue_scope<keep_device> scope(s, nullptr, &other);
  scope.waits_for(other.trace);
  check(api::stream_wait_event(s.native, other.position), api_name, ": stream on device ", s.device,
        " waiting for a stream on device ", other.device);
  scope.done();
}

}  // namespace detail

using detail::checked;
using detail::checked_handle;

stream::stream(sluice::device d, stream_options o)
    : stream_ref(static_cast<detail::stream_state*>(nullptr), 0U) {
  auto& dev = detail::engine().dev(d.id(), "sluice::stream");
  const int native = detail::effective_native_priority(o, dev.range, gpu::api::default_priority);
  state_ = detail::engine().new_stream(dev, native);
  generation_ = state_->generation.load(std::memory_order_relaxed);
  detail::stream_names::adopt(state_->trace.id, std::move(o.name));
}

void reserve_streams(sluice::device d, int count, stream_options o) {
  constexpr const char* api = "sluice::reserve_streams";
  auto& dev = detail::engine().dev(d.id(), api);
  detail::refuse_if_device_captures(dev.id, api);
  if (count < 0 || count > 4096)
    detail::fail(errc::invalid_argument, api, "count ", count, " is outside [0, 4096]");
  const int native = detail::effective_native_priority(o, dev.range, gpu::api::default_priority);
  dev.natives.reserve(dev, native, count, api);
}

stream borrow(sluice::device d, native_stream_t s) {
  constexpr const char* api = "sluice::borrow";
  auto& dev = detail::engine().dev(d.id(), api);
  if (gpu::api::is_default_stream(s))
    detail::fail(errc::invalid_argument, api,
                 "the null stream and the default streams synchronize implicitly with other "
                 "streams (IND-1): borrow a stream created non-blocking");
  if constexpr (gpu::api::can_tell_stream_device) {
    int owner = -1;
    detail::check(gpu::api::stream_device(s, &owner), api, ": the device of the native stream");
    if (owner != d.id())
      detail::fail(errc::invalid_argument, api, "the native stream belongs to device ", owner,
                   ", not to device ", d.id());
  }
  int native_priority = 0;
  detail::check(gpu::api::stream_priority(s, &native_priority), api,
                ": the priority of the native stream");
  return detail::access::make_stream(detail::engine().new_borrowed_stream(dev, s, native_priority));
}

stream::~stream() {
  if (state_ == nullptr) return;
  // A capture of its native work ends with it (the vendor stream goes back to
  // the pool), before the query below, which a capturing stream refuses.
  detail::end_native_capture(*state_);
  // A borrowed stream's owner may well have work pending on it: not worth a warning.
  const bool busy = detail::diagnose::enabled() && !state_->borrowed &&
                    gpu::api::stream_query(state_->native).code == gpu::api::not_ready;
  // Invalidate every stream_ref; pending host functions and stream-ordered
  // buffers keep the state (and the vendor stream) alive until they are done.
  state_->generation.fetch_add(1, std::memory_order_relaxed);
  detail::report_stream_destroyed(state_->device, busy, state_->failures, SLUICE_CALL_SITE(),
                                  state_->trace.id);
  // Its queue counts it no more (stream_pool::retire), whoever keeps its state.
  if (!state_->borrowed) {
    detail::engine().devices[static_cast<std::size_t>(state_->device)].natives.retire(
        state_->queue);
    state_->pool_counted = false;
  }
  state_->release();
}

device stream_ref::device() const {
  return sluice::device(checked_handle(*this, "sluice::stream_ref::device").device);
}

priority stream_ref::priority() const {
  auto& s = checked_handle(*this, "sluice::stream_ref::priority");
  return detail::level_of(s.native_priority, detail::engine().dev(s.device).range,
                          gpu::api::default_priority);
}

int stream_ref::native_priority() const {
  return checked_handle(*this, "sluice::stream_ref::native_priority").native_priority;
}

std::string stream_ref::name() const {
  return detail::stream_names::of(checked_handle(*this, "sluice::stream_ref::name").trace.id);
}

void stream_ref::set_name(std::string new_name) const {
  detail::stream_names::set(checked_handle(*this, "sluice::stream_ref::set_name").trace.id,
                            std::move(new_name));
}

bool stream_ref::ready() const {
  auto& s = checked(*this, "sluice::stream_ref::ready");
  detail::refuse_if_capturing(s, "sluice::stream_ref::ready",
                              "ready() of a capturing stream (its recorded work never runs there)");
  // Query first: a host function's error is recorded before its gate opens,
  // so once the query sees the stream complete, every error is there to throw
  // (HOST-4). Checking the errors first let a stream that completed in between
  // answer true without reporting its host function's exception (found by the
  // conformance suite against the simulated runtime, tests/fake_cudart).
  const auto q = gpu::api::stream_query(s.native);
  detail::rethrow_host_errors(s);
  if (q.code == gpu::api::not_ready) return false;
  detail::check(q, "sluice::stream_ref::ready: stream on device ", s.device);
  return true;
}

void stream_ref::synchronize() const {
  auto& s = checked(*this, "sluice::stream_ref::synchronize");
  detail::refuse_if_capturing(s, "sluice::stream_ref::synchronize",
                              "synchronize() of a capturing stream (its recorded work never runs "
                              "there)");
  detail::refuse_stream_self_wait(detail::current_host_function_stream() == &s,
                                  "sluice::stream_ref::synchronize");
  const detail::diagnose::synchronize_scope diagnosed(SLUICE_CALL_SITE(), "stream::synchronize");
  detail::check(gpu::api::stream_synchronize(s.native),
                "sluice::stream_ref::synchronize: stream on device ", s.device);
  detail::rethrow_host_errors(s);
}

void stream_ref::wait(stream_ref other) const {
  auto& s = checked(*this, "sluice::stream_ref::wait");
  auto& o = checked(other, "sluice::stream_ref::wait");
  if (detail::record_stream_wait_if_capturing(s, o, "sluice::stream_ref::wait")) [[unlikely]]
    return;
  detail::wait_for_stream(s, o, "sluice::stream_ref::wait");
}

namespace detail {
namespace {

//! A flag operation on a capturing stream: recorded, replayed with its value.
bool record_flag_op(stream_state& s, flag_state& f, std::uint32_t v, bool write) {
  recorded_call c;
  c.kind = write ? vertex_kind::write_value : vertex_kind::wait_value;
  c.flag = &f;
  c.call = [&f, v, write](const replay_site& at) {
    auto& lane = *access::state(at.lane);
    if (write)
      enqueue_write_value(lane, f, v, "sluice::graph_exec::launch");
    else
      enqueue_wait_value(lane, f, v, "sluice::graph_exec::launch");
  };
  return record_if_capturing(s, std::move(c));
}

}  // namespace
}  // namespace detail

void stream_ref::write_value(flag& f, std::uint32_t v) const {
  constexpr const char* api = "sluice::stream_ref::write_value";
  auto& s = checked(*this, api);
  if (detail::any_capture() && detail::record_flag_op(s, *detail::access::state(f), v, true))
      [[unlikely]]
    return;
  detail::enqueue_write_value(s, *detail::access::state(f), v, api);
}

void stream_ref::wait_value(const flag& f, std::uint32_t v) const {
  constexpr const char* api = "sluice::stream_ref::wait_value";
  auto& s = checked(*this, api);
  if (detail::any_capture() && detail::record_flag_op(s, *detail::access::state(f), v, false))
      [[unlikely]]
    return;
  detail::enqueue_wait_value(s, *detail::access::state(f), v, api);
}

void detail::enqueue_write_value(stream_state& s, flag_state& f, std::uint32_t v,
                                 const char* api_name) {
  add_flag_user(f, s);
  enqueue_scope<keep_device> scope(s, "write_value");
  check(gpu::api::stream_write_value(s.native, f.w.device, v), api_name, ": stream on device ",
        s.device);
  scope.done();
}

void detail::enqueue_wait_value(stream_state& s, flag_state& f, std::uint32_t v,
                                const char* api_name) {
  add_flag_user(f, s);
  enqueue_scope<keep_device> scope(s, "wait_value");
  {
    // Holds the stream until the host stores the flag: no stream pool makes
    // vendor streams meanwhile (IND-4). Only around the vendor call: the tracer
    // above may take the tracer's stream from the pool.
    auto& dev = engine().devices[static_cast<std::size_t>(s.device)];
    // A hold for the host: no host function of another stream takes the signal
    // meanwhile (host_holds.hpp); counted until the flag reaches v. Before the
    // hold scope: waiting for a signal enqueue inside one could deadlock with
    // the pool's making of streams.
    // (A flag that has the value already holds nothing.)
    const word& w = f.w;
    if (w.host->load(std::memory_order_acquire) < v) {
      try {
        dev.holds.flag_wait(s.native, w.host, v);
      } catch (const std::bad_alloc&) {
        fail(errc::out_of_memory, api_name, "no memory to note the wait");
      }
      dev.holds.before_hold();
    }
    const stream_pool::hold_scope hold(dev.natives);
    check(gpu::api::stream_wait_value(s.native, f.w.device, v), api_name, ": stream on device ",
          s.device);
  }
  scope.done();
}

native_stream_t native_handle(stream_ref s) {
  auto& st = checked_handle(s, "sluice::native_handle");
  // Work enqueued through the handle is invisible to sluice: from now on no
  // host function joins a batch that could run before such work.
  if (!st.native_escaped.load(std::memory_order_relaxed)) {
    std::lock_guard<detail::spin_mutex> lock(st.enqueue_m);
    st.native_escaped.store(true, std::memory_order_relaxed);
    detail::end_host_batch(st);
  }
  // While st captures, the work given to the handle is captured too (or,
  // where the vendor's capture is not used, end() refuses the capture).
  if (detail::any_capture()) [[unlikely]]
    detail::open_native_capture(st);
  if (detail::trace::enabled()) [[unlikely]]
    detail::trace_native_taken(st);
  return st.native;
}

}  // namespace sluice
