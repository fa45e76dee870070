// The host-function gate kernel (host_gate.hpp): one source for nvcc and
// hipcc -x hip, like sm_copy.cu (the build names the vendor's last-error call,
// SLUICE_GPU_LAST_ERROR, and includes HIP's runtime header for hipcc).
#include "host_gate.hpp"

#include <cstdint>

namespace {

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#define SLUICE_GATE_PAUSE() __builtin_amdgcn_s_sleep(8)
#else
#define SLUICE_GATE_PAUSE() __nanosleep(500)
#endif

//! Stores the signal once the stream's earlier work is done (a kernel starts
//! after it), then spins until the host opens the gate. The fences: the
//! signal leaves after the work it reports, and what the host wrote before
//! opening the gate is seen by the stream's later work.
__global__ void sluice_host_gate(volatile unsigned long long* signal_word,
                                 unsigned long long signal_value,
                                 const volatile unsigned long long* gate_word,
                                 unsigned long long gate_value) {
  __threadfence_system();
  *signal_word = signal_value;
  __threadfence_system();
  while (*gate_word < gate_value) SLUICE_GATE_PAUSE();
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

}  // namespace sluice::detail::host_gate
