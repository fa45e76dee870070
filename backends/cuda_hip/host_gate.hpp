// The host-function gate kernel of the GPU backends (host_gate.cu): device
// code, compiled by nvcc into sluice::cuda and by HIP's compiler into
// sluice::hip, called through the traits (api::stream_gate_kernel).
//
// A host function's batch needs, on its stream, a signal (the work before it
// is done: sluice's word watcher runs the functions) and a gate (later work
// waits until they returned). As two stream memory operations (the signal
// path) the gate waits in the stream's hardware queue, and with more streams
// holding for the host than the device has queues, a queue-mate's signal
// behind it comes only once the gate opened (2x H100, sluice-probe-gates:
// 32 of 64 signals seen while 64 such gates were closed). As this kernel, one
// thread that stores the signal and spins on the gate word, the stream's later
// work waits behind a running kernel instead, which holds no queue: 64 of 64
// signals seen, and 64 gates opened 1 ms after their signals took 1.61x one
// (the memory waits 2.31x). docs/design.md, "The gate kernel".
#pragma once

#include <sluice/native.hpp>

#include <cstdint>

namespace sluice::detail::host_gate {

//! Enqueues on s, after its earlier work, one kernel of one thread that stores
//! signal_value to *signal_word, then waits until *gate_word >= gate_value
//! (both 64-bit words of host-mapped memory, device addresses). Returns the
//! vendor's error code of the launch (0: launched).
int launch(native_stream_t s, void* signal_word, std::uint64_t signal_value, const void* gate_word,
           std::uint64_t gate_value) noexcept;

//! Launches the kernel on s with nothing to do: a vendor that loads a kernel's
//! code at its first launch (CUDA's lazy loading) may wait for every stream of
//! the device there, so sluice launches it once while the device is idle, when
//! it sets the device up. The vendor's error code of the launch.
int prepare(native_stream_t s) noexcept;

}  // namespace sluice::detail::host_gate
