// The device clocks of a trace (trace_clock.cpp), part of the GPU backend's
// tracer (tracer.hpp): calibration points per device that map device times
// onto the host clock.
#pragma once

#include "vendor.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::detail {

//! The clock of each device in the trace. All under the tracer's lock.
class trace_clocks {
 public:
  //! Device d has a calibration point in this trace, and one taken within a
  //! second before `now` (a host time). Throws only when the trace's first
  //! point on d cannot be taken.
  void ensure(int d, std::int64_t now);
  //! The index of device d's latest point (ensure(d) came first).
  std::size_t latest(int d) const noexcept;
  //! Before completed operations are read: a point after them on every
  //! device whose latest is 10 ms old or more.
  void calibrate_for_harvest() noexcept;
  //! The host-clock time of `event`, completed on device d after its point
  //! `point`; false when the vendor cannot tell.
  bool host_time(int d, std::size_t point, api::event_t event, std::int64_t* ns) noexcept;
  //! trace_end(): the next trace calibrates afresh.
  void restart() noexcept;

 private:
  //! A calibration: an event on the device clock whose host time is known.
  struct clock_point {
    api::event_t event{};
    std::int64_t host_ns = 0;  // middle of its record-to-return window
    double scale = 0;          // host ns per device ns up to the next point (0: not known yet)
  };
  struct device_clock {
    bool calibrated = false;          // has points in this trace
    std::int64_t tried_ns = 0;        // host time of the latest attempt at a point
    api::stream_t stream{};           // the tracer's own, idle stream on the device
    std::vector<clock_point> points;  // this trace's, in time order
    std::vector<api::event_t> spare;  // events of earlier traces' points, and attempts
  };
  static constexpr std::int64_t point_interval_ns = 1000000000;  // see trace_clock.cpp

  void try_calibrate(int d) noexcept;
  void calibrate(int d);
  static double scale_of(device_clock& c, std::size_t i) noexcept;

  std::vector<device_clock> clocks_;  // per device
};

}  // namespace sluice::detail
