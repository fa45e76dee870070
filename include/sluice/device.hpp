// sluice/device.hpp: devices.
//
// Synopsis
//   int device_count();
//   class device {                       // small value type, == comparable, hashable
//     explicit device(int id);           // errc::invalid_device when out of range
//     static device current();           // the calling thread's current device
//     void make_current() const;         // (extension) set the calling thread's current device
//     int id() const noexcept;
//     std::string name() const;
//     void synchronize() const;          // all work of this process on the device
//   };
//
// sluice never changes the caller's current device (XDEV-2): every call that
// needs a device sets it for its own duration and restores it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace sluice {

//! Number of devices of the linked backend (host: SLUICE_HOST_DEVICES, default 2).
//! Throws sluice::error when the backend cannot start.
int device_count();

class device {
 public:
  //! Throws errc::invalid_device unless 0 <= id < device_count().
  explicit device(int id);

  //! The calling thread's current device (cudaGetDevice / hipGetDevice; host: a
  //! thread-local id, 0 unless make_current() changed it).
  static device current();

  //! Extension: makes this the calling thread's current device (cudaSetDevice).
  //! The only sluice call that changes the current device; it exists so that
  //! portable code and tests can set up the state XDEV-2 talks about.
  void make_current() const;

  int id() const noexcept { return id_; }

  //! A human-readable name ("NVIDIA H200", "host device 1").
  std::string name() const;

  //! Blocks until all work enqueued by this process on this device so far has
  //! completed (XDEV-3: this device only). Throws errc::invalid_argument when
  //! called from a host function whose own stream is on this device (it would
  //! wait for itself).
  void synchronize() const;

  friend bool operator==(device a, device b) noexcept { return a.id_ == b.id_; }
  friend bool operator!=(device a, device b) noexcept { return a.id_ != b.id_; }

 private:
  int id_;
};

}  // namespace sluice

template <>
struct std::hash<sluice::device> {
  std::size_t operator()(sluice::device d) const noexcept { return std::hash<int>{}(d.id()); }
};
