// sluice/native.hpp (opt-in): the backend's native handles.
//
// Synopsis
//   using native_stream_t = cudaStream_t | hipStream_t | sluice::host::queue*;
//   using native_event_t  = cudaEvent_t  | hipEvent_t  | sluice::host::marker*;
//   native_stream_t native_handle(stream_ref);
//   native_event_t  native_handle(const event&);
//   stream borrow(device, native_stream_t);   // a sluice stream on someone else's
//
// The backend target defines SLUICE_BACKEND_HOST, SLUICE_BACKEND_CUDA or
// SLUICE_BACKEND_HIP for its users; this header picks the types from it.
#pragma once

#include <sluice/event.hpp>
#include <sluice/stream.hpp>

#if defined(SLUICE_BACKEND_CUDA)
#include <cuda_runtime_api.h>
namespace sluice {
using native_stream_t = cudaStream_t;
using native_event_t = cudaEvent_t;
}  // namespace sluice
#elif defined(SLUICE_BACKEND_HIP)
#include <hip/hip_runtime_api.h>
namespace sluice {
using native_stream_t = hipStream_t;
using native_event_t = hipEvent_t;
}  // namespace sluice
#elif defined(SLUICE_BACKEND_HOST)
namespace sluice {
namespace host {
struct queue;   //!< the host backend's in-order queue (opaque)
struct marker;  //!< the host backend's event (opaque)
}  // namespace host
using native_stream_t = host::queue*;
using native_event_t = host::marker*;
}  // namespace sluice
#else
#error "sluice/native.hpp: link a sluice backend target (sluice::host, sluice::cuda, sluice::hip)"
#endif

namespace sluice {
//! The native handle; errc::invalid_handle for a moved-from or destroyed stream.
native_stream_t native_handle(stream_ref s);
//! The native handle; errc::invalid_handle for a moved-from event.
native_event_t native_handle(const event& e);

//! A sluice stream that runs on a native stream someone else created (a Kokkos
//! instance's, a library's). Everything sluice does on it follows the rules of
//! any sluice stream; it and the native stream's own work run in one order
//! (NAT-1). Destroying it destroys nothing native and waits for nothing
//! (NAT-2). `s` must belong to `d` (errc::invalid_argument where the vendor can
//! tell: CUDA, host) and outlive the borrowed stream. The null stream and the
//! default streams (CUDA's legacy and per-thread, HIP's) synchronize implicitly
//! with other streams (IND-1): errc::invalid_argument (NAT-3). The stream's
//! priority is the native stream's. On the host backend `s` is the
//! native_handle() of a live host stream; using the borrowed stream after that
//! stream was destroyed throws errc::invalid_handle.
stream borrow(sluice::device d, native_stream_t s);
}  // namespace sluice
