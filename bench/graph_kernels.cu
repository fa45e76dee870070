// The graph bench's 64 tiny kernels (graph_kernels.hpp): one block each, one
// thread per byte of a slot, so that a launch costs what a launch costs.
#include "graph_kernels.hpp"

#include <cuda_runtime.h>

namespace {

__global__ void write_slot(unsigned char* slot, unsigned char value, unsigned n) {
  if (threadIdx.x < n) slot[threadIdx.x] = value;
}

__global__ void copy_slot(unsigned char* dst, const unsigned char* src, unsigned n) {
  if (threadIdx.x < n) dst[threadIdx.x] = src[threadIdx.x];
}

}  // namespace

namespace sluice_bench {

bool have_tiny_kernels() noexcept { return true; }

int tiny_kernels(sluice::native_stream_t s, unsigned char* a, unsigned char* b, std::size_t slots,
                 std::size_t slot_bytes) {
  const auto n = static_cast<unsigned>(slot_bytes);
  int failed = 0;
  for (std::size_t i = 0; i < slots; ++i) {
    write_slot<<<1, n, 0, s>>>(a + i * slot_bytes, static_cast<unsigned char>(i + 1), n);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) failed = e;
  }
  for (std::size_t i = 0; i < slots; ++i) {
    copy_slot<<<1, n, 0, s>>>(b + i * slot_bytes, a + i * slot_bytes, n);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) failed = e;
  }
  return failed;
}

}  // namespace sluice_bench
