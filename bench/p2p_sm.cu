// The raw SM copy kernel of sluice-bench-p2p-<backend> (nvbandwidth's *_sm
// tests): the baseline for the SM rows, written here on its own, not sluice's
// kernel. One source for nvcc and HIP's compiler; the build names the vendor's
// last-error call (SLUICE_GPU_LAST_ERROR: cudaGetLastError / hipGetLastError).
#include "p2p_sm.hpp"

#include <algorithm>

namespace {

struct alignas(16) block16 {
  unsigned long long lo, hi;
};

__global__ void raw_copy(block16* __restrict__ dst, const block16* __restrict__ src,
                         std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

}  // namespace

int raw_sm_copy(void* dst, const void* src, std::size_t bytes, sluice::native_stream_t s,
                int multiprocessors) {
  constexpr unsigned threads = 256;
  const std::size_t vectors = bytes / sizeof(block16);
  const std::size_t wanted = (vectors + threads - 1) / threads;
  const auto blocks = static_cast<unsigned>(std::max<std::size_t>(
      1, std::min<std::size_t>(wanted, 4U * static_cast<unsigned>(multiprocessors))));
  (void)SLUICE_GPU_LAST_ERROR();
  raw_copy<<<blocks, threads, 0, s>>>(static_cast<block16*>(dst), static_cast<const block16*>(src),
                                      vectors);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}
