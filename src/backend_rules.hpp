// Rules both backends implement alike, written once (docs/design.md, "What the
// backends share"). Templates over a backend's own types where the state
// differs. Internal.
#pragma once

#include "checks.hpp"
#include "diagnose.hpp"
#include "host_functions.hpp"
#include "stream_names.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::detail {

//! The reference count of a stream's state: the owning handle, pending work
//! that needs the state (host functions, records, buffers) and frees that wait
//! on the stream each hold one. The last release returns the state to its pool.
class ref_count {
 public:
  void add() noexcept { n_.fetch_add(1, std::memory_order_relaxed); }
  //! add() unless the count already reached zero (the state is on its way to
  //! the pool): for code that finds streams through a device's list, which may
  //! still hold a dying state; reviving it would recycle it twice.
  bool try_add() noexcept {
    int r = n_.load(std::memory_order_relaxed);
    while (r > 0)
      if (n_.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) return true;
    return false;
  }
  //! True for the release that dropped the last reference.
  bool drop() noexcept { return n_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  //! The owning handle's reference, when a pooled state is handed out again.
  void reset_to_one() noexcept { n_.store(1); }

 private:
  std::atomic<int> n_{0};
};

//! elapsed(start, stop)'s checks of its arguments (EVT-6): both timing events,
//! of one device, both recorded. errc::invalid_argument.
inline void check_elapsed_arguments(bool start_timing, bool stop_timing, int start_device,
                                    int stop_device, bool start_recorded, bool stop_recorded) {
  constexpr const char* api = "sluice::elapsed";
  if (!start_timing || !stop_timing)
    fail(errc::invalid_argument, api,
         "both events need event_options::timing (start: ", start_timing ? "yes" : "no",
         ", stop: ", stop_timing ? "yes" : "no", ")");
  if (start_device != stop_device)
    fail(errc::invalid_argument, api, "the events belong to different devices (", start_device,
         " and ", stop_device, ")");
  if (!start_recorded || !stop_recorded)
    fail(errc::invalid_argument, api, "the ", !start_recorded ? "start" : "stop",
         " event was never recorded");
}

//! ~stream(): what is reported when a stream is destroyed: work still pending
//! (`busy`: the caller asks only with SLUICE_DIAGNOSE on), and always the
//! host-function failures nobody asked about (HOST-4: nothing is lost; the
//! state may outlive the process). `failures` are the stream's; `where` is the caller's SLUICE_CALL_SITE(). The
//! stream's name (its trace id: `stream_id`) is dropped here, and named in the warning.
inline void report_stream_destroyed(int device, bool busy, stream_failures& failures,
                                    const void* where, std::uint64_t stream_id) {
  const std::string name = stream_names::forget(stream_id);
  if (busy)
    diagnose::warn(diagnose::kind::stream_destroyed_busy, where,
                   stream_names::phrase(name, "device " + std::to_string(device)) +
                       " was destroyed with work pending",
                   "the work still runs (LIFE-1), but nothing can wait for it any more "
                   "through this stream: record an event or synchronize first if later "
                   "work depends on it");
  failures.print_unreported(device);
}

//! A wait that a host function makes for work queued behind itself would never
//! end: refused before anything blocks (errc::invalid_argument), with the same
//! words on every backend. stream::synchronize() from a host function of that
//! stream:
inline void refuse_stream_self_wait(bool from_own_host_function, const char* api) {
  if (from_own_host_function)
    fail(errc::invalid_argument, api,
         "called from a host function of this stream: it would wait for itself");
}

//! device::synchronize() from a host function of a stream on that device:
inline void refuse_device_self_wait(bool from_own_host_function, int device) {
  if (from_own_host_function)
    fail(errc::invalid_argument, "sluice::device::synchronize",
         "called from a host function of a stream on device ", device,
         ": it would wait for itself");
}

//! A wait for a position of the stream whose host function is running, at or
//! past that host function (an event, a flag, a buffer's free):
inline void refuse_position_self_wait(bool behind_own_host_function, const char* api) {
  if (behind_own_host_function)
    fail(errc::invalid_argument, api,
         "called from a host function of the stream it waits for: it would wait for itself");
}

//! device_buffer::record_stream's bookkeeping (MEM-5): `s` is added once to
//! the streams the buffer's free waits for, unless it is the buffer's own
//! stream, and holds a reference while listed. The reference is taken only
//! once the list has room: a failed push_back leaks nothing.
template <class Stream, class List>
void add_recorded_stream(std::mutex& m, const Stream* own, List& recorded, Stream& s) {
  std::lock_guard<std::mutex> lock(m);
  if (&s == own) return;
  for (const Stream* r : recorded)
    if (r == &s) return;
  recorded.push_back(&s);
  s.add_ref();
}

}  // namespace sluice::detail
