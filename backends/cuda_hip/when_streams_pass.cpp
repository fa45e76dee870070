// Deferred work that waits for streams to pass a moment (when_streams_pass.hpp).
#include "when_streams_pass.hpp"

#include "engine.hpp"
#include "stream_state.hpp"

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sluice::detail {

void when_streams_pass(const std::vector<stream_state*>& streams,
                       std::function<void(const std::string& failure)> then) noexcept {
  auto& e = engine();
  // Each stream's mark is made here, at the moment it must pass, where that
  // can be done safely: a stream idle now gets none (no work it did not ask
  // for: its ready() stays true), a busy one gets an event recorded now under
  // its enqueue lock (a mark between a host function's signal and its gate
  // wait would pass before the function returned). So a caller that frees
  // and then synchronizes the stream waits for the mark too, and ready()
  // after that synchronize is true: a mark recorded later, on the reaper
  // thread, could land after the user's synchronize and leave ready() false
  // with none of the user's work pending (found by the conformance suite
  // against the simulated runtime, ERR-4's test, about 1 run in 100). Where
  // the lock is taken (the caller may be a host function whose own stream's
  // lock is held by an enqueue that waits for it) or no event can be had, the
  // stream is left to the reaper thread as before: a later mark waits for
  // more work, never less.
  struct item {
    stream_state* s = nullptr;
    api::event_t mark{};
    bool marked = false;  // a mark was recorded here (or the stream was idle: no mark)
  };
  std::vector<item> held;
  try {
    held.reserve(streams.size());
  } catch (...) {
    return;  // no memory: what `then` would release stays allocated
  }
  for (auto* s : streams) {
    s->add_ref();
    held.push_back(item{s});
  }
  for (auto& it : held) {
    stream_state* s = it.s;
    if (!s->enqueue_m.try_lock()) continue;
    try {
      const api::status q = api::stream_query(s->native);
      if (q.ok()) {
        it.marked = true;  // idle: nothing enqueued before this moment is left
      } else if (q.code == api::not_ready) {
        auto& d = e.devices[static_cast<std::size_t>(s->device)];
        const api::event_t ev = e.take_event(d);
        const api::status r = api::event_record(ev, s->native);
        if (r.ok()) {
          it.mark = ev;
          it.marked = true;
        } else {
          e.give_event(d, ev);  // left to the reaper, which reports what fails there
        }
      }
    } catch (...) {
      // No event to be had here: left to the reaper.
    }
    s->enqueue_m.unlock();
  }
  try {
    e.reaper.submit([held, then = std::move(then)] {
      auto& eng = engine();
      std::vector<std::pair<int, api::event_t>> marks;  // (device of the event, event)
      std::string failure;  // the first failure: what failed, on which device, the vendor's words
      bool unloading = false;  // the vendor runtime is unloading (process exit)
      const auto failed = [&failure](const char* what, int device, api::error_t code) {
        if (!failure.empty()) return;
        failure = concat(what, " on device ", device, ": ", api::error_name(code), " (",
                         api::error_string(code), ")");
      };
      for (const auto& it : held) {
        stream_state* s = it.s;
        if (it.marked) continue;  // marked at the call (waited for below), or idle then
        try {
          // Idle now: everything enqueued before the free has run. No mark, so an
          // idle stream gets no work it did not ask for (its ready() stays true).
          const api::status q = api::stream_query(s->native);
          if (q.ok()) continue;
          if (api::means_shutdown(q.code)) {
            unloading = true;  // the process is ending: nothing to free or report
            continue;
          }
          if (q.code != api::not_ready) {
            failed(q.api, s->device, q.code);
            continue;
          }
          auto& d = eng.devices[static_cast<std::size_t>(s->device)];
          const api::event_t ev = eng.take_event(d);
          try {
            marks.emplace_back(s->device, ev);
          } catch (...) {
            eng.give_event(d, ev);
            throw;
          }
          std::lock_guard<spin_mutex> lock(s->enqueue_m);
          const api::status r = api::event_record(ev, s->native);
          if (api::means_shutdown(r.code))
            unloading = true;
          else if (!r.ok())
            failed(r.api, s->device, r.code);
        } catch (const error& x) {
          if (failure.empty()) failure = x.what();
        } catch (...) {
          if (failure.empty()) failure = "out of host memory";
        }
      }
      // Waits for one mark (made at the call or here) and gives its event back.
      const auto wait_mark = [&](int device, api::event_t ev) {
        const api::status st = api::event_synchronize(ev);
        if (api::means_shutdown(st.code))
          unloading = true;
        else if (!st.ok())
          failed(st.api, device, st.code);
        eng.give_event(eng.devices[static_cast<std::size_t>(device)], ev);
      };
      for (const auto& it : held)
        if (it.mark != api::event_t{}) wait_mark(it.s->device, it.mark);
      for (const auto& it : held) it.s->release();
      for (const auto& [device, ev] : marks) wait_mark(device, ev);
      if (!unloading) then(failure);
    });
  } catch (...) {
    // No memory to hand the wait over: what `then` would release stays allocated.
    for (const auto& it : held) {
      if (it.mark != api::event_t{})
        e.give_event(e.devices[static_cast<std::size_t>(it.s->device)], it.mark);
      it.s->release();
    }
  }
}

}  // namespace sluice::detail
