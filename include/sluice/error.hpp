// sluice/error.hpp: the one exception type of sluice.
//
// Synopsis
//   enum class errc { invalid_argument, invalid_device, invalid_handle, not_ready,
//                     not_supported, peer_access_unavailable, out_of_memory,
//                     device_fault, host_function_failed, backend_failure, comm_failure,
//                     capture_violation };
//   const char* to_string(errc) noexcept;
//   class error : public std::runtime_error {
//     errc code(); int native_code(); const char* api(); bool sticky();
//   };
#pragma once

#include <stdexcept>
#include <string>

namespace sluice {

//! What went wrong, independent of the backend.
enum class errc {
  invalid_argument,         //!< bad input, rejected before anything was enqueued
  invalid_device,           //!< a device id out of range
  invalid_handle,           //!< a moved-from or destroyed stream, event or buffer
  not_ready,                //!< the work asked about has not completed yet
  not_supported,            //!< the backend or device cannot do this
  peer_access_unavailable,  //!< the two devices cannot access each other
  out_of_memory,            //!< an allocation failed
  device_fault,             //!< an asynchronous fault on the device (sticky)
  host_function_failed,     //!< a host function threw; carries its message
  backend_failure,          //!< any other vendor or backend failure
  comm_failure,             //!< (sluice::comm) a peer failed, left or did not answer in time
  capture_violation  //!< (graphs) a call that a capture does not allow; the capture stays valid
};

//! The enumerator's name, e.g. "invalid_argument".
const char* to_string(errc code) noexcept;

//! Every failure of a sluice call throws this type.
//! The message names the operation, the device(s) and, where a vendor call
//! failed, the vendor's error string.
class error : public std::runtime_error {
 public:
  error(errc code, const std::string& message, int native_code = 0, const char* api = "",
        bool sticky = false);

  //! The portable error code.
  errc code() const noexcept { return code_; }
  //! The vendor error code (cudaError_t, hipError_t); 0 on the host backend
  //! and for errors sluice detected itself.
  int native_code() const noexcept { return native_code_; }
  //! The failing vendor call ("cudaStreamWaitEvent"), or the sluice operation
  //! ("sluice::event::record") when sluice itself rejected the call. Never null.
  const char* api() const noexcept { return api_; }
  //! True when the device context is unusable afterwards (a device fault).
  bool sticky() const noexcept { return sticky_; }

 private:
  errc code_;
  int native_code_;
  const char* api_;  // always a string literal or static storage
  bool sticky_;
};

}  // namespace sluice
