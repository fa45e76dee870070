// sluice-probe-held-calls: the cases that make, destroy, record and wait on
// events while one stream is held (cases.hpp).
#include "cases.hpp"

namespace held_calls {
namespace {

results event_create_with(probe_env& env, const char* name, unsigned flags, const char* calls) {
  std::vector<cudaEvent_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, name, calls, env.opt.count, [&](int, vendor& v) {
      cudaEvent_t e{};
      if (v.call("cudaEventCreateWithFlags", [&] { return cudaEventCreateWithFlags(&e, flags); }))
        made.push_back(e);
    });
  }
  destroy(made);
  return {r};
}


}  // namespace

results event_create(probe_env& env) {
  return event_create_with(env, "event_create", cudaEventDisableTiming,
                           "cudaEventCreateWithFlags(DisableTiming)");
}

results event_create_timing(probe_env& env) {
  return event_create_with(env, "event_create_timing", cudaEventDefault,
                           "cudaEventCreateWithFlags(Default)");
}

results event_destroy(probe_env& env) {
  std::vector<cudaEvent_t> events = make_events(env.opt.count, cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "event_destroy", "cudaEventDestroy(made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaEventDestroy", [&] { return cudaEventDestroy(events[i]); }))
                      events[i] = nullptr;
                  });
  }
  destroy(events);
  return {r};
}

//! sluice's original scenario: an event recorded on the held stream and
//! waited for by another stream (made before the hold), one pair per call.
results event_record_wait(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  std::vector<cudaEvent_t> events = make_events(env.opt.count, cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "event_record_wait",
        "cudaEventRecord(held)+cudaStreamWaitEvent(stream_made_before_the_hold)", env.opt.count,
        [&](int i, vendor& v) {
          if (v.call("cudaEventRecord", [&] { return cudaEventRecord(events[i], h.stream()); }))
            v.call("cudaStreamWaitEvent",
                   [&] { return cudaStreamWaitEvent(streams[i], events[i], 0); });
        });
  }
  destroy(streams);
  destroy(events);
  return {r};
}

}  // namespace held_calls
