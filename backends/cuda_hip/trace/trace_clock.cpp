// Device clocks of a trace (trace_clock.hpp). Device times become host-clock times
// through calibration points per device: an event recorded on an idle stream
// of the tracer and waited for, whose host time is the middle of the
// record-to-return window (under 20 us when the device and the host are
// idle); the narrowest of up to 8 windows is kept, and the widest half-window
// of the trace is the device's clock error, written into the trace (a busy
// host widens it). A point is taken when a device is first traced, again
// before an operation enqueued a second or more after the latest, and before
// the completed operations are read. A slot's time is interpolated between
// the two points around it: the device clock runs a few ppm off the host's
// (+3.45 ppm on an H200: 0.4 ms in two minutes through one point), and
// cudaEventElapsedTime's float loses microseconds a minute or more from its
// base; a second between points keeps both under a microsecond.
#include "trace/trace_clock.hpp"

#include "engine.hpp"
#include "trace.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

namespace sluice::detail {

void trace_clocks::ensure(int d, std::int64_t now) {
  if (static_cast<std::size_t>(d) >= clocks_.size())
    clocks_.resize(static_cast<std::size_t>(d) + 1);
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

std::size_t trace_clocks::latest(int d) const noexcept {
  return clocks_[static_cast<std::size_t>(d)].points.size() - 1;
}

//! A further point of device d that fails no operation: if it cannot be
//! taken, d's times are extrapolated from its latest point, and stderr says so.
void trace_clocks::try_calibrate(int d) noexcept {
  try {
    calibrate(d);
  } catch (const std::exception& e) {
    api::clear_last_error();
    std::fprintf(stderr, "sluice: trace: %s (device times extrapolated)\n", e.what());
  }
}

//! A new calibration point of device d (see the file's comment).
void trace_clocks::calibrate(int d) {
  device_clock& c = clocks_[static_cast<std::size_t>(d)];
  const scoped_device guard(d);
  if (c.stream == api::stream_t{}) {
    // From the pool: no stream is created while the device may be busy (IND-4).
    auto& dev = engine().dev(d, "sluice tracing");
    c.stream =
        dev.natives.take_for_life(dev, dev.range.least, "sluice tracing: the tracer's stream");
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
  // the two below and restart() give events back without allocating.
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

//! Before completed operations are read, a point after them on every device
//! in this trace whose latest is 10 ms old or more, so that their times are
//! interpolated, not extrapolated (a failure leaves the times extrapolated
//! from the latest point).
void trace_clocks::calibrate_for_harvest() noexcept {
  const std::int64_t now = trace::now_ns();
  for (std::size_t d = 0; d < clocks_.size(); ++d) {
    device_clock& c = clocks_[d];
    if (!c.calibrated || now - c.points.back().host_ns < 10000000) continue;
    try_calibrate(static_cast<int>(d));
  }
}

//! Host ns per device ns between points i and i+1 of c (1 when the vendor
//! cannot tell).
double trace_clocks::scale_of(device_clock& c, std::size_t i) noexcept {
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

bool trace_clocks::host_time(int d, std::size_t point, api::event_t event,
                             std::int64_t* ns) noexcept {
  device_clock& c = clocks_[static_cast<std::size_t>(d)];
  std::size_t i = point;
  float ms = 0.0F;
  if (i >= c.points.size() || !api::event_elapsed(&ms, c.points[i].event, event).ok()) {
    api::clear_last_error();
    return false;
  }
  // The last point at or before the event (it may have completed after later
  // points were taken): then between that one and the next, from whichever of
  // the two is nearer (the float's step grows with the time from the point:
  // 2-4 us a minute or two away).
  float next_ms = 0.0F;
  bool next_known = false;  // next_ms: the next point's time from the event, negative
  while (i + 1 < c.points.size()) {
    next_known = api::event_elapsed(&next_ms, c.points[i + 1].event, event).ok();
    if (!next_known || next_ms < 0) break;
    ++i;
    ms = next_ms;
    next_known = false;
  }
  api::clear_last_error();
  if (i + 1 < c.points.size()) {
    const double scale = scale_of(c, i);
    if (next_known && -next_ms < ms)
      *ns = c.points[i + 1].host_ns + std::llround(static_cast<double>(next_ms) * 1e6 * scale);
    else
      *ns = c.points[i].host_ns + std::llround(static_cast<double>(ms) * 1e6 * scale);
  } else {
    *ns = c.points[i].host_ns + std::llround(static_cast<double>(ms) * 1e6);
  }
  return true;
}

void trace_clocks::restart() noexcept {
  for (auto& c : clocks_) {
    for (const clock_point& p : c.points) c.spare.push_back(p.event);  // reserved: no throw
    c.points.clear();
    c.calibrated = false;
  }
}

}  // namespace sluice::detail
