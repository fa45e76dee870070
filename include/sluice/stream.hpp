// sluice/stream.hpp: streams (in-order queues of work on one device).
//
// Synopsis
//   enum class priority { low, normal, high };
//   struct stream_options { priority priority; std::optional<int> native_priority;
//                           std::string name; };
//   class stream_ref {                   // non-owning, trivially copyable
//     device device(); priority priority(); int native_priority();
//     std::string name(); void set_name(std::string);
//     bool ready(); void synchronize();
//     void wait(const event&); void wait(stream_ref);
//     template <class F> void host_func(F&&);
//     void write_value(flag&, uint32_t); void wait_value(const flag&, uint32_t);
//   };
//   class stream : public stream_ref {   // owning, move-only; ~stream() does not block
//     explicit stream(device = device::current(), stream_options = {});
//   };
//   struct priority_range { int least; int greatest; };
//   priority_range stream_priority_range(device);
//   int independent_stream_limit(device);
//
// Streams never synchronize implicitly with any other stream.
#pragma once

#include <sluice/detail/host_task.hpp>
#include <sluice/device.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace sluice {

class event;
class flag;
class stream;

namespace detail {
struct stream_state;  // defined by the backend
struct access;        // backend-side constructor of handles
}  // namespace detail

enum class priority { low, normal, high };

struct stream_options {
  sluice::priority priority = priority::normal;
  //! Raw vendor value; when set it wins over `priority` and is clamped to the
  //! device's range (PRIO-3).
  std::optional<int> native_priority;
  //! (extension) The stream's name, shown in traces (its track), in `sluice
  //! trace report` and in SLUICE_DIAGNOSE warnings; empty: unnamed. Kept apart
  //! from the stream's state: naming a stream costs its enqueues nothing.
  //! (`= {}`: `stream_options{p, std::nullopt}` stays free of
  //! -Wmissing-field-initializers.)
  std::string name = {};
};

//! Non-owning reference to a stream. Trivially copyable; cannot be built from
//! 0 or nullptr (LIFE-3). Using a reference to a moved-from or destroyed
//! stream throws errc::invalid_handle.
class stream_ref {
 public:
  stream_ref(int) = delete;
  stream_ref(std::nullptr_t) = delete;

  //! The stream's device.
  sluice::device device() const;
  //! The effective portable level (derived from the effective native value).
  sluice::priority priority() const;
  //! The effective vendor priority value.
  int native_priority() const;
  //! (extension) The stream's name: stream_options::name or the last
  //! set_name(); empty when unnamed. A trace shows the name a stream had when
  //! the trace was written, or when the stream was destroyed if earlier.
  //! Either may be called from any thread while others use the stream; neither
  //! touches its work. set_name("") makes the stream unnamed.
  std::string name() const;
  void set_name(std::string name) const;

  //! Snapshot: true once all work enqueued so far has completed (ORD-2).
  //! Throws errc::host_function_failed, once, if a host function of this stream threw (HOST-4).
  bool ready() const;
  //! Blocks until ready(). Throws errc::host_function_failed like ready(), and
  //! errc::invalid_argument when called from a host function of this stream.
  void synchronize() const;

  //! Later work on this stream waits for the work captured by e's last record
  //! (EVT-1, EVT-2); a never-recorded event is a no-op (EVT-3). Returns at once.
  void wait(const event& e) const;
  //! Later work on this stream waits for the work enqueued on `other` so far (IND-3).
  void wait(stream_ref other) const;

  //! f() runs once on a sluice host thread after all preceding work; later work
  //! waits until it returns (HOST-1..4). f may call sluice, except synchronizing
  //! its own stream. An exception escaping f is reported by the next ready() or
  //! synchronize() on this stream.
  template <class F>
  void host_func(F&& f) const {
    enqueue_host_task(detail::make_host_task(std::forward<F>(f)));
  }

  //! After preceding work completes, stores v to f (release) (MEM-5).
  void write_value(flag& f, std::uint32_t v) const;
  //! Later work waits until f >= v (unsigned compare; no wrap-around) (MEM-5).
  void wait_value(const flag& f, std::uint32_t v) const;

  friend bool operator==(stream_ref a, stream_ref b) noexcept {
    return a.state_ == b.state_ && a.generation_ == b.generation_;
  }
  friend bool operator!=(stream_ref a, stream_ref b) noexcept { return !(a == b); }

 protected:
  stream_ref(detail::stream_state* state, std::uint32_t generation) noexcept
      : state_(state), generation_(generation) {}

  detail::stream_state* state_;
  std::uint32_t generation_;  // detects references that outlived their stream

 private:
  friend struct detail::access;
  void enqueue_host_task(std::unique_ptr<detail::host_task> task) const;
};

//! Owning stream: move-only. The destructor does not block and never throws;
//! work already enqueued still runs to completion (LIFE-1). A moved-from
//! stream is empty: destroying it is safe, using it throws errc::invalid_handle.
class stream : public stream_ref {
 public:
  //! Throws errc::invalid_device for a bad device, errc::invalid_argument never
  //! (out-of-range native priorities are clamped). Never waits for work on the
  //! device (IND-4); on the GPU backends, errc::not_ready when no stream of this
  //! priority is ready and the device has pending work (see reserve_streams).
  explicit stream(sluice::device d = sluice::device::current(), stream_options o = {});
  ~stream();
  stream(stream&& other) noexcept : stream_ref(other.state_, other.generation_) {
    other.state_ = nullptr;
    other.generation_ = 0;
  }
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      stream old(std::move(*this));  // the current stream is destroyed at scope end
      state_ = std::exchange(other.state_, nullptr);
      generation_ = std::exchange(other.generation_, 0U);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

 private:
  friend struct detail::access;  // sluice::borrow (native.hpp)
  stream(detail::stream_state* state, std::uint32_t generation) noexcept
      : stream_ref(state, generation) {}
};

//! Vendor priority values: `greatest` is the highest priority. Numerically
//! greatest <= least on every backend (CUDA on Hopper: 0 / -5; HIP: 1 / -1;
//! host: 1 / -1).
struct priority_range {
  int least;
  int greatest;
};
priority_range stream_priority_range(sluice::device d);

//! Live streams per device guaranteed not to serialize falsely (IND-1).
int independent_stream_limit(sluice::device d);

//! Makes sure that `count` streams with the priority of `o` can be created on d
//! later without waiting for the device's work, even while it is busy (IND-4).
//! The GPU backends keep SLUICE_STREAM_RESERVE (default 64) ready per priority
//! level and refill while the device is idle; call this where a code will
//! create more while streams are held (before the hold). It may itself wait for
//! the device's pending work. errc::invalid_argument unless 0 <= count <= 4096.
void reserve_streams(sluice::device d, int count, stream_options o = {});

}  // namespace sluice
