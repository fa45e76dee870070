// What the rest of the GPU backend uses of the tracer (tracer.hpp;
// include/sluice/trace.hpp): the data a stream and an event keep for it, a
// traced device operation, traced host tasks.
#pragma once

#include "trace.hpp"

#include <sluice/stream.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace sluice::detail {

struct stream_state;
struct event_state;
struct trace_slot;  // a timing event of the trace, or a join of two (tracer.hpp)
struct traced_op_state;

//! What a stream keeps for the tracer (stream_state::trace): its id in traces
//! (new per stream), the last position given to a traced operation, and the
//! lock that keeps a traced operation's timing events next to it.
struct stream_trace {
  std::uint64_t id = 0;
  std::atomic<std::uint64_t> seq{0};
  std::mutex m;
  // Under m: the slot that ended the stream's last traced operation (the next
  // one starts there) and the trace it belongs to.
  trace_slot* last = nullptr;
  std::uint64_t epoch = 0;
  // The activity tracer's trace (activity_tracer.hpp) that knows this
  // stream's vendor id (activities the user enqueues directly land on its track).
  std::atomic<std::uint64_t> activity_epoch{0};

  //! A pooled state starts a new stream: a new id, and no last slot (it does
  //! not start where the state's previous stream ended).
  void restart() noexcept {
    id = trace::new_stream_id();
    seq.store(0, std::memory_order_relaxed);
    last = nullptr;
  }
};

//! What an event keeps for the tracer (event_state::trace): the stream and
//! position of its last traced record (for wait arrows), and, under the
//! tracer's lock, the slot whose time is that record's (a wait on the event
//! ends no earlier), in the trace `mark_epoch`.
struct event_trace {
  std::atomic<std::uint64_t> stream{0};
  std::atomic<std::uint64_t> seq{0};
  trace_slot* mark = nullptr;
  std::uint64_t mark_epoch = 0;
};

//! Gives back the event's trace slot (from ~event, when it holds one).
void trace_forget_event(event_trace& e) noexcept;

//! Times one device-side operation while a trace is collected, with a timing
//! event after it on its stream; it starts where the stream's previous traced
//! operation ended, or, for the first one and on streams whose native handle
//! was taken (the user's own work may lie between), at a timing event recorded
//! before it. Everything happens under the stream's trace.m, so that no other
//! thread's work lands in between. Construct it after the argument checks and
//! before the vendor call; call done() after the vendor call. While no trace
//! is collected it costs one relaxed load.
class traced_op {
 public:
  //! instant: the operation takes no device time of its own (an event
  //! record): it is timed where the stream's previous traced operation ended,
  //! or when it was enqueued if later, without a timing event of its own.
  traced_op(stream_state& s, const char* kind, std::size_t bytes = 0, bool instant = false) {
    if (trace::enabled()) [[unlikely]]
      begin(s, kind, bytes, instant);
  }
  //! A wait of s for an event's last record or for another stream's work so
  //! far (one of the two): on one device, where the trace knows when that
  //! completes, it ends at the later of that and the stream's last traced
  //! operation, without a timing event of its own.
  traced_op(stream_state& s, event_state* waited_event, stream_state* waited_stream) {
    if (trace::enabled()) [[unlikely]]
      begin_wait(s, waited_event, waited_stream);
  }
  ~traced_op() {
    if (state_ != nullptr) [[unlikely]]
      abandon();
  }
  traced_op(const traced_op&) = delete;
  traced_op& operator=(const traced_op&) = delete;

  //! Arguments of the record: a copy's path; the position a wait waits for:
  //! another stream's work so far, or an event's last traced record.
  void path(const char* p) noexcept;
  //! The record's label (a foreign operation's name: sluice::kokkos kernels).
  void label(const char* text);
  void waits_for(const stream_trace& other) noexcept;
  void waits_for(const event_trace& e) noexcept;
  //! This operation records the event whose trace is e: waits on it point
  //! back to this operation and end no earlier (see above). Untraced, it
  //! clears what an earlier traced record left there.
  void marks(event_trace& e) noexcept;
  //! The operation was enqueued: time its end.
  void done() {
    if (state_ != nullptr) [[unlikely]]
      finish();
  }

 private:
  void begin(stream_state& s, const char* kind, std::size_t bytes, bool instant);
  void begin_wait(stream_state& s, event_state* waited_event, stream_state* waited_stream);
  void finish();
  void abandon() noexcept;
  void waits_for(std::uint64_t stream, std::uint64_t seq) noexcept;
  traced_op_state* state_ = nullptr;
};

//! native_handle() while tracing with an activity source: work the user
//! enqueues on the handle is shown on the stream's track.
void trace_native_taken(stream_state& s);

//! host_func while tracing: the task, wrapped to stamp its start and end with
//! the host clock where it runs (host functions run on sluice threads). Also
//! a copy run on the host (kind "copy", path "host").
std::unique_ptr<host_task> traced_host_task(stream_state& s, std::unique_ptr<host_task> task,
                                            const char* kind = "host_func", std::size_t bytes = 0,
                                            const char* path = nullptr);

}  // namespace sluice::detail
