// The one piece of the conformance suite that needs device code: a kernel that
// faults. One file per kind of backend: fault_host.cpp (no device code) and
// fault_gpu.cu (compiled by nvcc for sluice::cuda and by hipcc for sluice::hip).
#pragma once

#include <sluice/stream.hpp>

namespace sluice::conformance {

//! Enqueues on s a kernel that stores to an address no allocation holds (and
//! traps), so that the device faults asynchronously (ERR-2). Returns 0 when
//! the kernel was launched, the vendor's launch error otherwise, and
//! no_device_code when the backend has no device code that could fault (host).
inline constexpr int no_device_code = -1;
int enqueue_device_fault(sluice::stream_ref s);

//! ERR-2's child process is this same program started again with
//! SLUICE_CONFORMANCE_FAULT_CHILD=1; every main() that links the suite starts
//! with: if (fault_child_requested()) return fault_child_main();
//! (From main, not a static initializer: the kernel must be registered first.)
bool fault_child_requested();
int fault_child_main();

}  // namespace sluice::conformance
