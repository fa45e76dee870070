// The one piece of the conformance suite that needs device code: a kernel that
// faults. One file per kind of backend: fault_host.cpp (no device code) and
// fault_gpu.cu (compiled by nvcc for sluice::cuda and by hipcc for sluice::hip).
#pragma once

#include <sluice/stream.hpp>

namespace sluice::conformance {

//! Enqueues on s a kernel that stores to an address no allocation holds, so
//! that the device faults asynchronously (ERR-2). Returns false when the
//! backend has no device code that could fault (host).
bool enqueue_device_fault(sluice::stream_ref s);

}  // namespace sluice::conformance
