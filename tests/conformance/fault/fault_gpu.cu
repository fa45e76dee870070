// A faulting kernel for ERR-2, the same source for CUDA (nvcc) and HIP (hipcc
// -x hip): both accept __global__ and the <<<grid, block, shared, stream>>> launch.
// The build names the vendor's "last error" call: SLUICE_FAULT_LAST_ERROR
// (cudaGetLastError / hipGetLastError), so that a launch that failed is told
// apart from a kernel that did not fault, and its device trap: SLUICE_FAULT_TRAP
// (__trap / __builtin_trap).
#include "fault.hpp"

#include <sluice/native.hpp>

#include <cstdint>

namespace {

__global__ void store_to_unmapped_address(int* target) {
  *target = 0x5106;
  SLUICE_FAULT_TRAP();  // if the store did not fault (a mapping at that address), the trap does
}

}  // namespace

namespace sluice::conformance {

int enqueue_device_fault(sluice::stream_ref s) {
  // Page 0 is never mapped in a process's GPU address space.
  auto* unmapped = reinterpret_cast<int*>(std::uintptr_t{0x10});
  (void)SLUICE_FAULT_LAST_ERROR();  // clears an error left by an earlier call
  store_to_unmapped_address<<<1, 1, 0, sluice::native_handle(s)>>>(unmapped);
  return static_cast<int>(SLUICE_FAULT_LAST_ERROR());
}

}  // namespace sluice::conformance
