// Which source times a trace on the GPU backend, and the backend's part of
// trace_begin and trace_end (src/trace.hpp): SLUICE_TRACE_SOURCE, the
// activity source's start (CUPTI, activity_tracer.hpp) or the timing events
// of the event tracer (tracer.hpp), and what each hands over at the end.
#include "engine.hpp"
#include "settings.hpp"
#include "trace.hpp"
#include "trace/activity_tracer.hpp"
#include "trace/tracer.hpp"
#include "vendor.hpp"

#include <atomic>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::detail {

bool trace_supported() noexcept { return true; }

namespace {

//! CUPTI sets up a context's device buffers for activity records at the
//! first device activity after it starts recording, on the thread that
//! enqueues it: 0.58 ms on an H200 (bench/trace_cost fill_64B_first_call,
//! against 4.6 us for a first event record;
//! docs/results/runs/2026-11-27-cupti-trace-source.md). Done
//! here instead, in trace_begin, on each device sluice has set up: a fill,
//! a copy and the SM copy kernel on the device's internal allocation
//! stream, whose activities the source drops. Failures are ignored: the
//! first traced operation then pays it. Not while the engine is being made
//! (a trace started by SLUICE_TRACE from its constructor; engine() there
//! waited for itself: the process hung before main's first call returned):
//! no device is set up yet then, so the first traced operation of each
//! device pays it.
void warm_activity_source(activity_source& src) {
  engine_t* started = engine_if_started();
  if (started == nullptr) return;
  engine_t& e = *started;
  for (int i = 0; i < e.count; ++i) {
    device_state& d = e.devices[static_cast<std::size_t>(i)];
    if (!d.initialized.load(std::memory_order_acquire)) continue;
    src.ignore_stream(static_cast<void*>(d.alloc_stream));
    const scoped_device guard(d.id);
    void* p = nullptr;
    if (api::malloc_from_pool(&p, 256, d.pool, d.alloc_stream).ok()) {
      (void)api::memset_async(p, 0, 128, d.alloc_stream);
      (void)api::memcpy_async(static_cast<char*>(p) + 128, p, 128, d.alloc_stream);
      if (d.sm_blocks != 0)
        (void)api::sm_copy(static_cast<char*>(p) + 128, p, 128, d.alloc_stream, 1);
      (void)api::free_async(p, d.alloc_stream);
    }
    (void)api::stream_synchronize(d.alloc_stream);
    api::clear_last_error();
  }
}

}  // namespace

bool trace_backend_begin() {
  // SLUICE_TRACE_SOURCE: cupti (also when unset: the activity source where
  // it loads and starts, else events with a note saying why), or events.
  // Another value throws errc::invalid_argument from sluice::trace_begin.
  const settings::trace_source_choice asked = settings::trace_source();
  if (asked == settings::trace_source_choice::events) {
    trace::note_source("\"trace_source\": \"events\"");
    return false;
  }
  std::string why;
  activity_source* src = vendor_activity_source(&why);
  if (src != nullptr && the_activity_tracer().begin(src, &why)) {
    warm_activity_source(*src);
    trace::note_source("\"trace_source\": \"cupti\"");
    static std::atomic<bool> started_before{false};
    return !started_before.exchange(true);
  }
  std::string escaped;
  for (const char c : why) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c == '\n' ? ' ' : c;
  }
  trace::note_source(
      "\"trace_source\": \"events\", \"trace_source_note\": \"CUPTI not used: " + escaped + "\"");
  if (asked == settings::trace_source_choice::cupti)
    std::fprintf(stderr,
                 "sluice: trace: SLUICE_TRACE_SOURCE=cupti, but CUPTI cannot be used (%s): "
                 "device operations are timed with timing events\n",
                 why.c_str());
  return false;
}

void trace_backend_collect() {
  auto& at = the_activity_tracer();
  if (at.active()) {
    std::vector<trace::record> records;
    const activity_summary sum = at.end(&records);
    std::set<int> devices;
    for (auto& r : records) {
      devices.insert(r.device);
      trace::submit(std::move(r));
    }
    for (const int d : devices) trace::note_clock_error(d, sum.clock_error_ns);
    trace::note_source(
        "\"trace_source\": \"cupti\", \"cupti_dropped_records\": " + std::to_string(sum.dropped) +
        ", \"operations_left_out\": " + std::to_string(sum.left_out) +
        ", \"user_activities\": " + std::to_string(sum.user_activities) +
        ", \"activities_off_sluice_streams\": " + std::to_string(sum.foreign) +
        ", \"cupti_activities\": " + std::to_string(sum.activities) +
        ", \"cupti_correlations\": " + std::to_string(sum.correlations) +
        ", \"clock_error_ns\": " + std::to_string(sum.clock_error_ns) + ", \"enqueue_stamps\": \"" +
        (at.counter() ? "cpu_counter" : "host_clock") + "\"" +
        (sum.settings.empty() ? std::string() : ", " + sum.settings));
    if (sum.dropped != 0 || sum.left_out != 0)
      std::fprintf(stderr,
                   "sluice: trace: CUPTI dropped %llu activity records; %llu device operations "
                   "are left out of the trace (dropped, or not complete at trace_end)\n",
                   static_cast<unsigned long long>(sum.dropped),
                   static_cast<unsigned long long>(sum.left_out));
  }
  the_tracer().collect();
}

}  // namespace sluice::detail
