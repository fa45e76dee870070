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

struct strided_batch {
  sluice::detail::sm_copy::strided_piece p[sluice::detail::sm_copy::strided_pieces];
};

//! Units of type U of one strided piece, by the blocks of its row of the grid:
//! unit i is column i % row_units of row (i / row_units) % height of plane
//! i / (row_units * height), so consecutive threads touch consecutive bytes.
template <class U>
__device__ void strided_units(const sluice::detail::sm_copy::strided_piece& p) {
  const unsigned row_units = p.width / static_cast<unsigned>(sizeof(U));
  const unsigned plane_units = row_units * p.height;
  const unsigned units = plane_units * p.depth;
  auto* dst = static_cast<unsigned char*>(p.dst);
  const auto* src = static_cast<const unsigned char*>(p.src);
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < units; i += stride) {
    const unsigned z = i / plane_units;
    const unsigned in_plane = i - z * plane_units;
    const unsigned y = in_plane / row_units;
    const unsigned x = in_plane - y * row_units;
    const std::size_t at = static_cast<std::size_t>(x) * sizeof(U);
    *reinterpret_cast<U*>(dst + z * p.dst_plane + y * p.dst_pitch + at) =
        *reinterpret_cast<const U*>(src + z * p.src_plane + y * p.src_pitch + at);
  }
}

__global__ void strided_kernel(const strided_batch b) {
  const sluice::detail::sm_copy::strided_piece& p = b.p[blockIdx.y];
  switch (p.unit) {
    case 16: strided_units<vec16>(p); break;
    case 8: strided_units<unsigned long long>(p); break;
    case 4: strided_units<unsigned>(p); break;
    default: strided_units<unsigned char>(p); break;
  }
}

// A vendor graph's small fill and copy within one device's memory
// (graph_ops.cpp): one byte per thread and step, any alignment. Named
// sluice_graph_* so that a simulated runtime can tell them (tests/fake_cudart).
__global__ void sluice_graph_fill(unsigned char* __restrict__ dst, unsigned char value,
                                  std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = value;
}

__global__ void sluice_graph_copy(unsigned char* __restrict__ dst,
                                  const unsigned char* __restrict__ src, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

//! Enough blocks of `threads` for n bytes, one byte each, at most 1024 (grid stride beyond).
unsigned node_blocks(std::size_t n) {
  const std::size_t wanted =
      (n + sluice::detail::sm_copy::threads - 1) / sluice::detail::sm_copy::threads;
  return static_cast<unsigned>(wanted < 1 ? 1 : wanted > 1024 ? 1024 : wanted);
}

}  // namespace

namespace sluice::detail::sm_copy {

int launch_graph_fill(void* dst, unsigned char value, std::size_t n, native_stream_t s) noexcept {
  (void)SLUICE_GPU_LAST_ERROR();  // an error left by an earlier call is not this launch's
  sluice_graph_fill<<<node_blocks(n), threads, 0, s>>>(static_cast<unsigned char*>(dst), value, n);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

int launch_graph_copy(void* dst, const void* src, std::size_t n, native_stream_t s) noexcept {
  (void)SLUICE_GPU_LAST_ERROR();
  sluice_graph_copy<<<node_blocks(n), threads, 0, s>>>(static_cast<unsigned char*>(dst),
                                                       static_cast<const unsigned char*>(src), n);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

unsigned strided_unit(const strided_piece& p) noexcept {
  const std::uint64_t all = reinterpret_cast<std::uintptr_t>(p.dst) |
                            reinterpret_cast<std::uintptr_t>(p.src) | p.dst_pitch | p.src_pitch |
                            p.dst_plane | p.src_plane | p.width;
  for (const unsigned u : {16U, 8U, 4U})
    if (all % u == 0) return u;
  return 1;
}

int launch_strided(const strided_piece* pieces, unsigned count, native_stream_t s,
                   unsigned blocks_per_piece) noexcept {
  strided_batch b{};
  for (unsigned i = 0; i < count; ++i) b.p[i] = pieces[i];
  (void)SLUICE_GPU_LAST_ERROR();  // an error left by an earlier call is not this launch's
  strided_kernel<<<dim3(blocks_per_piece, count), threads, 0, s>>>(b);
  return static_cast<int>(SLUICE_GPU_LAST_ERROR());
}

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
