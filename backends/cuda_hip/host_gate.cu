// The host-function gate kernel (host_gate.hpp): one source for nvcc and
// hipcc -x hip, like sm_copy.cu (the build names the vendor's last-error call,
// SLUICE_GPU_LAST_ERROR, and includes HIP's runtime header for hipcc).
#include "host_gate.hpp"

#include <cstdint>

namespace {

//! The gate word is host memory, read over the bus: each read costs the
//! device's copies to the host (2x H200, sluice-probe-gates, 64 gates held
//! during a 256 MiB device-to-host copy: 0.34 of its bandwidth with a read
//! every 0.5 us, 0.85 with the pauses growing to 32 us;
//! docs/results/runs/2026-11-27-gate-kernel-2xh200.md). So the first
//! fast_reads reads come fast_pause_ns apart (a host function that returns
//! within about 20 us has its gate seen within one pause), then the pause
//! doubles up to longest_pause_ns (a longer one's gate is seen at most that
//! late). docs/design.md, "The gate kernel".
constexpr unsigned fast_reads = 16;
constexpr unsigned fast_pause_ns = 250;
constexpr unsigned longest_pause_ns = 32768;

__device__ void gate_pause(unsigned ns) {
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
  for (unsigned t = 0; t < ns; t += 250) __builtin_amdgcn_s_sleep(8);  // 512 clocks each
#else
  __nanosleep(ns);
#endif
}

//! Stores the signal once the stream's earlier work is done (a kernel starts
//! after it), then spins until the host opens the gate. The fences: the
//! signal leaves after the work it reports, and what the host wrote before
//! opening the gate is seen by the stream's later work.
__global__ void sluice_host_gate(volatile unsigned long long* signal_word,
                                 unsigned long long signal_value,
                                 const volatile unsigned long long* gate_word,
                                 unsigned long long gate_value) {
  if (signal_word == nullptr) return;  // prepare(): a launch that loads the kernel, nothing more
  __threadfence_system();
  *signal_word = signal_value;
  __threadfence_system();
  unsigned reads = 0;
  unsigned pause = fast_pause_ns;
  while (*gate_word < gate_value) {
    gate_pause(pause);
    if (++reads >= fast_reads && pause < longest_pause_ns) pause *= 2;
  }
  __threadfence_system();
}

}  // namespace

namespace sluice::detail::host_gate {

int launch(native_stream_t s, void* signal_word, std::uint64_t signal_value, const void* gate_word,
           std::uint64_t gate_value) noexcept {
  (void)SLUICE_GPU_LAST_ERROR();  // an error left by an earlier call is not this launch's
  sluice_host_gate<<<1, 1, 0, s>>>(
      static_cast<volatile unsigned long long*>(signal_word), signal_value,
      static_cast<const volatile unsigned long long*>(gate_word), gate_value);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

int prepare(native_stream_t s) noexcept {
  (void)SLUICE_GPU_LAST_ERROR();
  sluice_host_gate<<<1, 1, 0, s>>>(nullptr, 0, nullptr, 0);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

}  // namespace sluice::detail::host_gate
