// What every enqueue of device work on a stream does around its vendor call:
// the stream's host-function batch ends, the calling thread's current device
// is made right for the call, and the operation is traced while a trace is
// collected (gpu_trace.hpp).
#pragma once

#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"
#include "vendor.hpp"

#include <cstddef>
#include <optional>

namespace sluice::detail {

//! enqueue_scope's device policy for vendor calls that need no particular
//! current device (records, waits, fills, stream memory operations): the
//! calling thread's stays as it is. Costs nothing.
struct keep_device {
  explicit keep_device(const stream_state&) noexcept {}
};

//! enqueue_scope's device policy for copies: makes the stream's device current
//! for the scope when it is not. CUDA 13 refused cudaMemcpyAsync on pool
//! memory of device 1, on a stream of device 1, while device 0 was current
//! (cudaErrorInvalidValue; explicit kinds and cuMemcpyAsync too: 2x H200,
//! sluice-probe-xdev). When the device is current this costs one context
//! query (CUDA: cuCtxGetCurrent, 8 ns there).
class device_current {
 public:
  explicit device_current(const stream_state& s) {
    if (!api::device_is_current(s.device, s.context)) [[unlikely]]
      guard_.emplace(s.device);
  }

 private:
  std::optional<scoped_device> guard_;
};

//! One enqueue of device work on s, from after the argument checks to after
//! the vendor call:
//!
//!   enqueue_scope<keep_device> scope(s, "fill", bytes);
//!   check(api::memset_async(dst, value, bytes, s.native), ...);
//!   scope.done();
//!
//! Constructed, it ends s's host-function batch (end_host_batch: no later host
//! function may run before this work), applies the device policy `Device`
//! (keep_device or device_current) and starts the traced operation
//! (traced_op); done() times the operation's end. Left by an exception before
//! done(), the trace's slots go back and the previous device is current again.
//! While no trace is collected it costs end_host_batch's relaxed load, what the
//! policy costs, and one relaxed load.
template <class Device>
class enqueue_scope {
 public:
  //! An operation of `kind` moving `bytes`; `instant`: it takes no device
  //! time of its own (an event record; see traced_op).
  enqueue_scope(stream_state& s, const char* kind, std::size_t bytes = 0, bool instant = false)
      : device_(ended(s)), traced_(s, kind, bytes, instant) {}
  //! A wait of s for an event's last record or for another stream's work so
  //! far (one of the two; see traced_op).
  enqueue_scope(stream_state& s, event_state* waited_event, stream_state* waited_stream)
      : device_(ended(s)), traced_(s, waited_event, waited_stream) {}
  enqueue_scope(const enqueue_scope&) = delete;
  enqueue_scope& operator=(const enqueue_scope&) = delete;

  //! The trace record's arguments and marks (traced_op).
  void path(const char* p) noexcept { traced_.path(p); }
  void label(const char* text) { traced_.label(text); }
  void waits_for(const stream_trace& other) noexcept { traced_.waits_for(other); }
  void waits_for(const event_trace& e) noexcept { traced_.waits_for(e); }
  void marks(event_trace& e) noexcept { traced_.marks(e); }
  //! After the vendor call: the operation was enqueued.
  void done() { traced_.done(); }

 private:
  static stream_state& ended(stream_state& s) noexcept {
    end_host_batch(s);
    return s;
  }
  Device device_;
  traced_op traced_;
};

}  // namespace sluice::detail
