// sluice/event.hpp: events (markers in a stream that other streams and the host can wait for).
//
// Synopsis
//   struct event_options { bool timing = false; bool blocking_sync = false; };
//   class event {                        // owning, move-only
//     explicit event(device = device::current(), event_options = {});
//     device device(); void record(stream_ref); bool ready(); void synchronize();
//   };
//   std::chrono::duration<double, std::milli> elapsed(const event& start, const event& stop);
#pragma once

#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <chrono>
#include <utility>

namespace sluice {

namespace detail {
struct event_state;  // defined by the backend
}

struct event_options {
  bool timing = false;         //!< record device timestamps for elapsed()
  bool blocking_sync = false;  //!< synchronize() yields the CPU instead of spinning (EVT-10)
};

//! Owning, move-only. Destroying an event whose record is pending returns at
//! once; streams already waiting on it still wait for the captured work (EVT-7).
//! A moved-from event is empty: using it throws errc::invalid_handle.
class event {
 public:
  explicit event(sluice::device d = sluice::device::current(), event_options o = {});
  ~event();
  event(event&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      event old(std::move(*this));  // the current event is destroyed at scope end
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  sluice::device device() const;
  event_options options() const;

  //! Captures the work enqueued on s so far. s must be on the event's device,
  //! else errc::invalid_argument and nothing is enqueued (EVT-5). Re-recording
  //! replaces the captured work (EVT-4) but not waits already issued (EVT-2).
  void record(stream_ref s);
  //! True once the last record completed; true if never recorded (EVT-3).
  bool ready() const;
  //! Blocks until ready(); returns at once if never recorded. Throws
  //! errc::invalid_argument when called from a host function that precedes
  //! the record on the same stream (it would wait for itself).
  void synchronize() const;

 private:
  friend struct detail::access;
  detail::event_state* state_ = nullptr;
};

//! Time between two completed timing records of the same device, never negative.
//! errc::invalid_argument: not timing events, not recorded, different devices;
//! errc::not_ready: a record has not completed yet (EVT-8).
std::chrono::duration<double, std::milli> elapsed(const event& start, const event& stop);

}  // namespace sluice
