// Graphs on the host backend: the hooks that the backend's operations call
// while a capture may be open (graph_capture.cpp), and the work a recorded
// vertex keeps for its launches (graph_exec.cpp runs it). The recording
// model itself is the shared one (src/graph/recording.hpp).
#pragma once

#include "graph/recording.hpp"
#include "host.hpp"

#include <memory>
#include <mutex>

namespace sluice::detail {

inline stream_key key_of(const stream_state& s) noexcept {
  return {&s, s.generation.load(std::memory_order_relaxed)};
}

//! The event that a recorded record vertex records again at each launch;
//! `target` is null once the event is destroyed (EVT-7: the graph needs
//! nothing alive).
struct event_link {
  std::mutex m;
  event_state* target = nullptr;  // under m
  bool timing = false;
};

//! What a vertex runs on each launch (used_memory: graph/recording.hpp).
struct host_work final : vertex_work {
  std::vector<used_memory> memory;
  std::unique_ptr<op> action;         //!< copies, fills, flag operations: run again and again
  std::unique_ptr<host_task> task;    //!< host functions (each launch runs it in place)
  std::shared_ptr<event_link> event;  //!< event records
};

//! enqueue()'s hook: when s captures, records o as a vertex (taking it) and
//! returns true; false when s does not capture, and `o` is then the op to
//! enqueue (the same one, or an equal one when a capture ended meanwhile).
bool record_if_capturing(stream_state& s, op*& o);

//! Makes the calling host-function thread count as running an op of s at
//! seq (HOST-3's self-wait checks); returns what it counted as before.
std::pair<stream_state*, seq_t> exchange_host_function_stream(stream_state* s, seq_t seq) noexcept;

//! The task of a host-function op (scheduler.cpp), taken out of it; null for
//! other ops.
std::unique_ptr<host_task> take_host_task(op& o);

//! event::record's hook: when s captures, records a record vertex for e and
//! returns true (e keeps its state); false otherwise.
bool record_event_if_capturing(stream_state& s, event_state& e);

//! ~event's hook: launches no longer record e.
void forget_event(event_state* e) noexcept;

//! errc::invalid_handle, naming `api`, when memory a vertex of p uses was freed.
void check_memory_alive(const graph_program& p, const char* api);

//! errc::capture_violation when s captures (ready(), synchronize(), launch()...).
void refuse_if_capturing(const stream_state& s, const char* api, const char* why);

// refuse_if_recorded_in_capture, refuse_if_device_captures: graph/recording.hpp.

//! stream_ref::wait(stream): true when the capture model took the wait.
bool record_stream_wait_if_capturing(stream_state& s, stream_state& other, const char* api);

//! stream_ref::wait(event): true when the capture model took the wait (the
//! event was recorded in an open capture, or s captures).
bool record_event_wait_if_capturing(stream_state& s, const event_state* e, bool recorded,
                                    const char* api);

}  // namespace sluice::detail
