// What the GPU backend's enqueues use of the tracer (trace.cpp;
// include/sluice/trace.hpp): a traced device operation, traced host tasks.
#pragma once

#include "trace.hpp"

#include <sluice/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sluice::detail {

struct stream_state;
struct event_state;
struct traced_op_state;

//! Gives back the event's trace slot (from ~event, when it holds one).
void trace_forget_event(event_state& e) noexcept;

//! Times one device-side operation while a trace is collected, with a timing
//! event after it on its stream; it starts where the stream's previous traced
//! operation ended, or, for the first one and on streams whose native handle
//! was taken (the user's own work may lie between), at a timing event recorded
//! before it. Everything happens under the stream's trace_m, so that no other
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

  //! Arguments of the record: a copy's path, the position a wait waits for.
  void path(const char* p) noexcept;
  void waits_for(std::uint64_t stream, std::uint64_t seq) noexcept;
  //! The position this operation got in its stream (0 when not traced).
  std::uint64_t seq() const noexcept;
  //! This operation records e: waits on e end no earlier than it (see above).
  void marks(event_state& e) noexcept;
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
  traced_op_state* state_ = nullptr;
};

//! host_func while tracing: the task, wrapped to stamp its start and end with
//! the host clock where it runs (host functions run on sluice threads). Also
//! a copy run on the host (kind "copy", path "host").
std::unique_ptr<host_task> traced_host_task(stream_state& s, std::unique_ptr<host_task> task,
                                            const char* kind = "host_func", std::size_t bytes = 0,
                                            const char* path = nullptr);

}  // namespace sluice::detail
