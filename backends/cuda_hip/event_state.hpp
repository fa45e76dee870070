// An event on the GPU backend: a vendor event, plus what the vendor does not
// check (EVT-5's device match, EVT-8's argument rules: never-recorded events
// are tracked; self-waits from a host function: the record's host-function
// count is kept). Defined in event.cpp.
#pragma once

#include "diagnose.hpp"
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
  // Tracing: the stream and position of the last traced record (for wait arrows).
  std::atomic<std::uint64_t> trace_stream{0};
  std::atomic<std::uint64_t> trace_seq{0};
  // Tracing, under the tracer's lock: the slot whose time is the last traced
  // record's (a wait on the event ends no earlier), in the trace `trace_mark_epoch`.
  void* trace_mark = nullptr;
  std::uint64_t trace_mark_epoch = 0;
};

}  // namespace sluice::detail
