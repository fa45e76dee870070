// The recording model of graphs, the same on every backend: which streams
// capture (the origin and the streams that joined it), what each later
// operation on them depends on (its stream's frontier), where an event was
// last recorded inside a capture, and the checks that reject calls with
// errc::capture_violation before anything is recorded. A backend asks
// capture_of() at each operation it enqueues and records a vertex instead of
// running it; the model builds the graph_program that end() returns.
//
// One mutex guards the whole model: captures are rare and short, and a
// stream that no capture involves costs one atomic load (any_capture()).
#pragma once

#include "graph/program.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::detail {

//! A stream as the model knows it: the backend's state pointer and the
//! handle generation at the time it joined (a destroyed stream is another key).
struct stream_key {
  const void* id = nullptr;
  std::uint32_t generation = 0;
  friend bool operator==(stream_key a, stream_key b) noexcept {
    return a.id == b.id && a.generation == b.generation;
  }
};

struct recording;

//! A point inside a capture: after vertex `vertex` of `capture`.
struct capture_point {
  std::shared_ptr<recording> capture;
  std::size_t vertex = 0;
};

//! The public capture's state: one recording, ended at most once.
struct capture_handle {
  std::shared_ptr<recording> rec;
  stream_key origin;
  std::atomic<bool> ended{false};
};

extern std::atomic<int> active_captures;

//! Whether any capture is open (the fast path of every enqueue).
inline bool any_capture() noexcept { return active_captures.load(std::memory_order_acquire) != 0; }

//! Starts a capture on origin. errc::capture_violation when origin captures.
std::shared_ptr<recording> begin_capture(stream_key origin, int device, const char* api);

//! The open capture that s belongs to, or null.
std::shared_ptr<recording> capture_of(stream_key s) noexcept;

//! Whether the calling thread is the one that began capture r.
bool began_on_this_thread(const recording& r) noexcept;

//! Whether a stream of `device` captures now (device::synchronize, reserve_streams).
bool device_captures(int device) noexcept;

//! The native handle of s was taken while s captures: end() of its capture
//! throws errc::capture_violation (a backend that replays graphs cannot
//! capture native work). Nothing when s does not capture.
void mark_native_work(stream_key s) noexcept;

//! The streams of r while its capture is open (the origin first); none after.
std::vector<stream_key> members_of(const recording& r);

//! The vendor failed to capture native work given to a member of r (a call
//! its capture refuses): end() of r throws errc::capture_violation, saying why.
void note_native_failure(recording& r, std::string why);

//! Records a vertex on member s: it depends on s's frontier, and becomes it.
//! Returns its index, or nothing when the capture has ended meanwhile (the
//! caller then runs the operation as usual; v is left as it was).
std::optional<std::size_t> record_vertex(recording& r, stream_key s, vertex&& v);

//! s.wait(other stream). Returns true when the wait was recorded (an edge, or
//! s joined the capture of other); false when no capture is involved (an
//! ordinary wait). errc::capture_violation when s captures and other is no
//! member of its capture.
bool record_stream_wait(stream_key s, int s_device, stream_key other, const char* api);

//! s.wait(event) where the event was last recorded at `p` inside an open
//! capture: s depends on p (joining that capture if s captured nothing).
//! errc::capture_violation when s belongs to another capture.
void record_event_wait(stream_key s, int s_device, const capture_point& p, const char* api);

//! s (capturing) waits on an event recorded outside any open capture (or in
//! one that is over): errc::capture_violation. A never-recorded event is a
//! no-op (EVT-3) and needs no check.
[[noreturn]] void reject_outside_event_wait(const char* api);

//! Throws errc::capture_violation naming `api` and `why`.
[[noreturn]] void reject_in_capture(const char* api, const char* why);

//! Memory that sluice allocated or registered, used by a vertex: each launch
//! checks that the range still belongs to `owner` (a buffer destroyed before
//! the graph_exec is errc::invalid_handle, never a use after free).
struct used_memory {
  const void* ptr = nullptr;
  std::size_t bytes = 0;
  const void* owner = nullptr;
  bool registered = false;  // a registered_host_memory range, not an allocation
};
//! errc::invalid_handle, naming `api` and the vertex's kind, when a range of
//! `memory` no longer belongs to its owner.
void check_memory_owned(const std::vector<used_memory>& memory, vertex_kind kind, const char* api);

// The checks and hooks every backend makes the same way (its streams and
// events as keys and addresses).
//! errc::capture_violation when the event was last recorded in an open capture.
void refuse_if_recorded_in_capture(const void* event, const char* api);
//! errc::capture_violation when a stream of the device captures.
void refuse_if_device_captures(int device, const char* api);
//! s.wait(event): true when the capture model took the wait (an edge, s
//! joined the capture, or a no-op in a capture for a never-recorded event);
//! errc::capture_violation for a capturing s and an event `recorded` outside.
bool record_event_wait_if_capturing(stream_key s, int s_device, const void* event, bool recorded,
                                    const char* api);

// Where an event was last recorded, when that was inside a capture.
void mark_event(const void* event, capture_point p);
//! The event was recorded outside a capture, or destroyed.
void clear_event_mark(const void* event) noexcept;
//! The event's mark while its capture is open; nothing otherwise.
std::optional<capture_point> live_event_mark(const void* event);

//! end(): checks that every member that recorded something is joined back to
//! the origin and that every member is alive (`alive(key)`), then returns the
//! program (edges reduced). Every member leaves the capture, also when it
//! throws errc::capture_violation.
std::shared_ptr<const graph_program> end_capture(recording& r, bool (*alive)(stream_key));

//! ~capture() without end(): every member leaves, nothing is kept.
void discard_capture(recording& r) noexcept;

}  // namespace sluice::detail
