// Graphs on the GPU backends, as sluice's own replay. While a stream
// captures, each sluice operation that would enqueue records a vertex of the
// shared recording model (src/graph/recording.hpp) instead; the vertex keeps
// a call that enqueues the same operation again on another stream. A launch
// makes those calls in recording order on the exec's lanes (streams it owns,
// per device), each lane after the launch stream's earlier work, an edge
// between two lanes as an event, and the launch stream waits for every lane.
// docs/vendor-differences.md says why (what the vendors' captures lack).
// Where the vendor captures native work (CUDA), work given to a capturing
// stream's native handle is captured by the vendor between two of sluice's
// operations and recorded as a native vertex. Defined in graph_capture.cpp
// (recording, native work, the hooks), graph_exec.cpp (instantiate, launch,
// update) and graph_native.cpp (an exec as one vendor graph).
#pragma once

#include "event_state.hpp"
#include "flag_state.hpp"
#include "graph/recording.hpp"
#include "peer_plan.hpp"
#include "stream_state.hpp"

#include <sluice/memory.hpp>
#include <sluice/peer.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::detail {

inline stream_key key_of(const stream_state& s) noexcept {
  return {&s, s.generation.load(std::memory_order_relaxed)};
}

//! Whether s captures now. One atomic load while no capture is open.
inline bool capturing(const stream_state& s) noexcept {
  return any_capture() && capture_of(key_of(s)) != nullptr;
}

//! Where a launch makes a vertex's call: its lane, and the launch's stream.
//! native_build: the calls are being captured into a vendor graph
//! (graph_native.hpp), once; there is no launch stream then.
struct replay_site {
  stream_ref lane;
  stream_state* launch = nullptr;
  bool native_build = false;
};

using replay_call = std::function<void(const replay_site&)>;

// used_memory: graph/recording.hpp.

//! A flag that vertices write or wait on; `target` is null once destroyed.
struct flag_link {
  std::mutex m;
  flag_state* target = nullptr;  // under m
};

//! An event that a record vertex records at each launch; `target` is null
//! once the event is destroyed (EVT-7: the graph needs nothing alive).
struct event_link {
  std::mutex m;
  event_state* target = nullptr;  // under m
};

struct gpu_work final : vertex_work {
  replay_call call;
  std::vector<used_memory> memory;
  std::shared_ptr<flag_link> flag;
  std::shared_ptr<event_link> event;  // a record vertex's event
};

//! What an operation on a capturing stream records.
struct recorded_call {
  vertex_kind kind = vertex_kind::copy;
  std::size_t bytes = 0;
  const char* path = nullptr;  // peer copies: the path chosen now, reported by the call
  std::vector<std::pair<const void*, std::size_t>> memory;  // the ranges it touches
  flag_state* flag = nullptr;
  replay_call call;
};

//! A copy vertex whose two ends are pinned host memory (sluice's or
//! registered): sluice's host thread makes it, as a host task behind a gate
//! (memory.cpp's copy_on_host), not the vendor.
bool copies_on_host_thread(const vertex& v) noexcept;

//! When s captures: records c as a vertex and returns true. False when s does
//! not capture (or its capture ended meanwhile): the caller enqueues as usual.
bool record_if_capturing(stream_state& s, recorded_call&& c);

// The copies and fills of a capturing stream (graph_ops.cpp), after their
// checks: true when recorded. errc::capture_violation for host memory that
// sluice takes as pageable (MEM-8); `touches_pageable` says so for a strided copy.
bool record_copy_if_capturing(stream_state& st, void* dst, const void* src, std::size_t bytes);
bool record_fill_if_capturing(stream_state& st, void* dst, unsigned char value, std::size_t bytes);
bool record_strided_copy_if_capturing(stream_state& st, pitched_ptr dst, const_pitched_ptr src,
                                      extent e, const strided_plan& p, bool touches_pageable);
// The peer copies keep their plan: each launch copies by the path reported
// at capture (GRAPH-10), whatever peer access says by then.
bool record_copy_peer_if_capturing(stream_state& st, void* dst, device dst_dev, const void* src,
                                   device src_dev, std::size_t bytes, const copy_plan& plan);
bool record_copy_peer_if_capturing(stream_state& st, pitched_ptr dst, device dst_dev,
                                   const_pitched_ptr src, device src_dev, extent e,
                                   const strided_peer_plan& plan, const peer_limits& limits,
                                   const void* site);
bool record_peer_batch_if_capturing(stream_state& st, device dst_dev, device src_dev,
                                    const peer_piece* pieces, std::size_t count,
                                    const copy_plan& plan, const peer_limits& limits);
bool record_peer_batch_if_capturing(stream_state& st, device dst_dev, device src_dev,
                                    const strided_piece* pieces, std::size_t count,
                                    const strided_batch_plan& plan, const peer_limits& limits,
                                    const void* site);

//! host_func on a capturing stream: records the task (taking it) and returns
//! true; false (task untouched) when s does not capture.
bool record_host_task_if_capturing(stream_state& s, std::unique_ptr<host_task>& task);

//! event::record's hook: records a record vertex for e when s captures.
bool record_event_if_capturing(stream_state& s, event_state& e);

//! ~event's and ~flag's hooks: launches no longer use them.
void forget_event(event_state* e) noexcept;
void forget_flag(flag_state* f) noexcept;

//! native_handle(s) while s captures: on a backend whose vendor captures
//! native work (api::captures_native_work) the work given to the handle is
//! captured, each run of it between two of sluice's operations a native
//! vertex; elsewhere end() refuses the capture.
void open_native_capture(stream_state& s);

//! ~stream: a vendor capture of s's native work ends, recording nothing.
void end_native_capture(stream_state& s) noexcept;

//! errc::capture_violation when s captures (ready(), synchronize(), pageable memory...).
void refuse_if_capturing(const stream_state& s, const char* api_name, const char* why);

// refuse_if_recorded_in_capture, refuse_if_device_captures: graph/recording.hpp.

//! stream_ref::wait(stream): true when the capture model took the wait.
bool record_stream_wait_if_capturing(stream_state& s, stream_state& other, const char* api_name);

//! stream_ref::wait(event): true when the capture model took the wait.
bool record_event_wait_if_capturing(stream_state& s, const event_state* e, bool recorded,
                                    const char* api_name);

//! errc::invalid_handle, naming `api`, when memory or a flag that a vertex of
//! p uses is gone.
void check_program_alive(const graph_program& p, const char* api_name);

//! The enqueue parts of event::record, write_value and wait_value, after
//! their checks (event.cpp, stream.cpp): what a launch replays.
void enqueue_record(event_state& e, stream_state& s, const char* api_name);
void enqueue_write_value(stream_state& s, flag_state& f, std::uint32_t v, const char* api_name);
void enqueue_wait_value(stream_state& s, flag_state& f, std::uint32_t v, const char* api_name);

//! Makes the calling host-function thread count as running host function
//! `ticket` of s (self-wait checks, HOST-3); returns what it counted as before
//! (host_func/batch.cpp).
std::pair<stream_state*, std::uint32_t> exchange_host_function_stream(
    stream_state* s, std::uint32_t ticket) noexcept;

}  // namespace sluice::detail
