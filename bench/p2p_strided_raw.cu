// The raw side of sluice-bench-p2p-strided-cuda (p2p_strided_raw.hpp): CUDA's
// own 3-D copies and a pack/unpack kernel of this file's own, not sluice's.
#include "p2p_strided_raw.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace strided_raw {

namespace {

// Element i (8 bytes) of a face, x fastest: its offset in a pitched end.
__device__ std::size_t offset_of(std::size_t i, std::size_t words, std::size_t height,
                                 std::size_t pitch, std::size_t rows) {
  const std::size_t x = i % words;
  const std::size_t y = (i / words) % height;
  const std::size_t z = i / (words * height);
  return z * pitch * rows + y * pitch + x * 8;
}

__global__ void pack(std::uint64_t* out, const unsigned char* src, std::size_t words,
                     std::size_t height, std::size_t depth, std::size_t pitch, std::size_t rows) {
  const std::size_t n = words * height * depth;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = *reinterpret_cast<const std::uint64_t*>(src + offset_of(i, words, height, pitch, rows));
}

__global__ void unpack(unsigned char* dst, const std::uint64_t* in, std::size_t words,
                       std::size_t height, std::size_t depth, std::size_t pitch, std::size_t rows) {
  const std::size_t n = words * height * depth;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    *reinterpret_cast<std::uint64_t*>(dst + offset_of(i, words, height, pitch, rows)) = in[i];
}

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024));
}

}  // namespace

struct pack_context {
  int dst_dev = 0, src_dev = 0;
  cudaEvent_t copied = nullptr;   // src device: the peer copy of this call
  cudaEvent_t unpacked = nullptr; // dst device: the unpack of the previous call
  bool any = false;
};

const char* unavailable() noexcept { return nullptr; }

bool kernels_run() noexcept {
  (void)cudaGetLastError();
  pack<<<1, 1>>>(nullptr, nullptr, 0, 1, 1, 8, 1);
  const bool ok = cudaGetLastError() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  (void)cudaGetLastError();
  return ok;
}

int copy_3d(const face* faces, std::size_t count, int dst_dev, int src_dev,
            cudaStream_t s) noexcept {
  for (std::size_t k = 0; k < count; ++k) {
    const face& f = faces[k];
    const cudaExtent e = make_cudaExtent(f.width, f.height, f.depth);
    const cudaPitchedPtr dst = make_cudaPitchedPtr(f.dst, f.dst_pitch, f.width, f.dst_rows);
    const cudaPitchedPtr src =
        make_cudaPitchedPtr(const_cast<void*>(f.src), f.src_pitch, f.width, f.src_rows);
    cudaError_t r = cudaSuccess;
    if (dst_dev == src_dev) {
      cudaMemcpy3DParms p{};
      p.dstPtr = dst;
      p.srcPtr = src;
      p.extent = e;
      p.kind = cudaMemcpyDeviceToDevice;
      r = cudaMemcpy3DAsync(&p, s);
    } else {
      cudaMemcpy3DPeerParms p{};
      p.dstPtr = dst;
      p.dstDevice = dst_dev;
      p.srcPtr = src;
      p.srcDevice = src_dev;
      p.extent = e;
      r = cudaMemcpy3DPeerAsync(&p, s);
    }
    if (r != cudaSuccess) return static_cast<int>(r);
  }
  return 0;
}

pack_context* make_pack_context(int dst_dev, int src_dev) noexcept {
  auto* c = new pack_context;
  c->dst_dev = dst_dev;
  c->src_dev = src_dev;
  int previous = 0;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(src_dev);
  (void)cudaEventCreateWithFlags(&c->copied, cudaEventDisableTiming);
  (void)cudaSetDevice(dst_dev);
  (void)cudaEventCreateWithFlags(&c->unpacked, cudaEventDisableTiming);
  (void)cudaSetDevice(previous);
  return c;
}

void free_pack_context(pack_context* c) noexcept {
  if (c == nullptr) return;
  (void)cudaEventDestroy(c->copied);
  (void)cudaEventDestroy(c->unpacked);
  delete c;
}

int pack_copy_unpack(pack_context* c, const face* faces, std::size_t count, void* src_scratch,
                     void* dst_scratch, cudaStream_t src_stream,
                     cudaStream_t dst_stream) noexcept {
  int previous = 0;
  (void)cudaGetDevice(&previous);
  (void)cudaGetLastError();
  cudaError_t r = cudaSetDevice(c->src_dev);
  std::size_t at = 0;
  for (std::size_t k = 0; k < count && r == cudaSuccess; ++k) {
    const face& f = faces[k];
    const std::size_t words = f.width / 8, n = words * f.height * f.depth;
    pack<<<blocks_for(n), 256, 0, src_stream>>>(static_cast<std::uint64_t*>(src_scratch) + at,
                                                static_cast<const unsigned char*>(f.src), words,
                                                f.height, f.depth, f.src_pitch, f.src_rows);
    at += n;
  }
  if (r == cudaSuccess) r = cudaGetLastError();
  if (r == cudaSuccess && c->any) r = cudaStreamWaitEvent(src_stream, c->unpacked, 0);
  if (r == cudaSuccess)
    r = cudaMemcpyPeerAsync(dst_scratch, c->dst_dev, src_scratch, c->src_dev, at * 8, src_stream);
  if (r == cudaSuccess) r = cudaEventRecord(c->copied, src_stream);
  if (r == cudaSuccess) r = cudaSetDevice(c->dst_dev);
  if (r == cudaSuccess) r = cudaStreamWaitEvent(dst_stream, c->copied, 0);
  at = 0;
  for (std::size_t k = 0; k < count && r == cudaSuccess; ++k) {
    const face& f = faces[k];
    const std::size_t words = f.width / 8, n = words * f.height * f.depth;
    unpack<<<blocks_for(n), 256, 0, dst_stream>>>(static_cast<unsigned char*>(f.dst),
                                                  static_cast<const std::uint64_t*>(dst_scratch) + at,
                                                  words, f.height, f.depth, f.dst_pitch, f.dst_rows);
    at += n;
  }
  if (r == cudaSuccess) r = cudaGetLastError();
  if (r == cudaSuccess) r = cudaEventRecord(c->unpacked, dst_stream);
  c->any = true;
  (void)cudaSetDevice(previous);
  return static_cast<int>(r);
}

}  // namespace strided_raw
