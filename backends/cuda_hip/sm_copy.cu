// The SM copy kernel (sm_copy.hpp): one source for nvcc and hipcc -x hip; the
// build names the vendor's last-error call (SLUICE_GPU_LAST_ERROR:
// cudaGetLastError / hipGetLastError) and, for hipcc, includes the runtime
// header that declares blockIdx and friends (nvcc does that by itself), so no
// vendor appears here.
#include "sm_copy.hpp"

#include <cstdint>

namespace {

//! 16 bytes, copied as one vector load and store.
struct alignas(16) vec16 {
  unsigned long long lo, hi;
};

__global__ void copy_kernel(vec16* __restrict__ dst, const vec16* __restrict__ src,
                            std::size_t vectors, unsigned char* __restrict__ dst_tail,
                            const unsigned char* __restrict__ src_tail, unsigned tail) {
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = first; i < vectors; i += stride) dst[i] = src[i];
  if (first < tail) dst_tail[first] = src_tail[first];
}

struct batch {
  sluice::detail::sm_copy::piece p[sluice::detail::sm_copy::batch_pieces];
};

//! Piece blockIdx.y, by the blocks of that row of the grid.
__global__ void batch_kernel(const batch b) {
  const sluice::detail::sm_copy::piece& p = b.p[blockIdx.y];
  const std::size_t vectors = p.bytes / sizeof(vec16);
  auto* dst = static_cast<vec16*>(p.dst);
  const auto* src = static_cast<const vec16*>(p.src);
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = first; i < vectors; i += stride) dst[i] = src[i];
  const std::size_t tail = p.bytes % sizeof(vec16);
  if (first < tail)
    reinterpret_cast<unsigned char*>(dst + vectors)[first] =
        reinterpret_cast<const unsigned char*>(src + vectors)[first];
}

}  // namespace

namespace sluice::detail::sm_copy {

int launch_batch(const piece* pieces, unsigned count, native_stream_t s,
                 unsigned blocks_per_piece) noexcept {
  batch b{};
  for (unsigned i = 0; i < count; ++i) b.p[i] = pieces[i];
  (void)SLUICE_GPU_LAST_ERROR();  // an error left by an earlier call is not this launch's
  batch_kernel<<<dim3(blocks_per_piece, count), threads, 0, s>>>(b);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

int launch(void* dst, const void* src, std::size_t n, native_stream_t s, unsigned blocks) noexcept {
  const std::size_t vectors = n / alignment;
  const auto tail = static_cast<unsigned>(n % alignment);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
  (void)SLUICE_GPU_LAST_ERROR();  // an error left by an earlier call is not this launch's
  copy_kernel<<<blocks, threads, 0, s>>>(static_cast<vec16*>(dst), static_cast<const vec16*>(src),
                                         vectors, d + vectors * alignment,
                                         from + vectors * alignment, tail);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

}  // namespace sluice::detail::sm_copy
