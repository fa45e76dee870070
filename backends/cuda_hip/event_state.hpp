// An event on the GPU backend: a vendor event, plus what the vendor does not
// check (EVT-5's device match, EVT-8's argument rules: never-recorded events
// are tracked; self-waits from a host function: the record's host-function
// count is kept). Defined in event.cpp.
#pragma once

#include "diagnose.hpp"
#include "trace/gpu_trace.hpp"
#include "vendor.hpp"

#include <sluice/event.hpp>

#include <atomic>
#include <cstdint>

namespace sluice::detail {

struct stream_state;

struct event_state {
  api::event_t native{};
  int device = 0;
  event_options options;
  std::atomic<bool> recorded{false};
  // The last record's stream and its host-function count then (self-wait check).
  std::atomic<stream_state*> record_stream{nullptr};
  std::atomic<std::uint32_t> record_tickets{0};
  diagnose::event_usage usage;  // SLUICE_DIAGNOSE: recorded and never used
  event_trace trace;            // the tracer's (gpu_trace.hpp)
};

}  // namespace sluice::detail
