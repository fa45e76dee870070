// A faulting kernel for ERR-2, the same source for CUDA (nvcc) and HIP (hipcc
// -x hip): both accept __global__ and the <<<grid, block, shared, stream>>> launch.
#include "fault.hpp"

#include <sluice/native.hpp>

#include <cstdint>

namespace {

__global__ void store_to_unmapped_address(int* target) { *target = 0x5106; }

}  // namespace

namespace sluice::conformance {

bool enqueue_device_fault(sluice::stream_ref s) {
  // Page 0 is never mapped in a process's GPU address space.
  auto* unmapped = reinterpret_cast<int*>(std::uintptr_t{0x10});
  store_to_unmapped_address<<<1, 1, 0, sluice::native_handle(s)>>>(unmapped);
  return true;
}

}  // namespace sluice::conformance
