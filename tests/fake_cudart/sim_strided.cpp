// The simulated runtime's strided copies and host registration (README.md, sim.cpp):
// cudaMemcpy2DAsync, cudaMemcpy3DAsync and cudaMemcpy3DPeerAsync on linear memory, with the
// checks CUDA's runtime API documents for them, run with the rules of the model's other copies
// (sim::copy: stream order, pageable memory, host to host, pool memory out of reach), and
// cudaHostRegister / cudaHostUnregister. No CUDA arrays: a copy naming one is refused.
//
// The checks, per end of a copy (CUDA runtime API, cudaMemcpy2DAsync and cudaMemcpy3D): a null
// pointer with a non-zero extent, cudaErrorInvalidValue; a width greater than the pitch, or a
// pitch greater than the maximum (cudaDevAttrMaxPitch, sim::max_pitch), cudaErrorInvalidPitchValue;
// a 3-D copy (depth > 1) whose pitched pointer has fewer rows per plane (ysize) than the extent's
// height, cudaErrorInvalidValue (the source and destination "must entirely contain the region").
// A zero width, height or depth copies nothing and succeeds.
#include "sim_cupti.hpp"
#include "sim_memory.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <functional>

namespace {

constexpr int cbid_memcpy_2d_async = 44;        // CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020
constexpr int cbid_memcpy_3d_async = 145;       // CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020
constexpr int cbid_memcpy_3d_peer_async = 163;  // ..._cudaMemcpy3DPeerAsync_v4000

//! One end of a copy of linear memory: the byte at (x, y, z) of the region is at
//! base + z * plane + y * pitch + x.
struct end {
  unsigned char* base;
  std::size_t pitch;
  std::size_t plane;
};

cudaError_t check_end(const void* ptr, std::size_t pitch, std::size_t ysize, const cudaExtent& e) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  if (e.width > pitch || pitch > sim::max_pitch()) return cudaErrorInvalidPitchValue;
  if (e.depth > 1 && ysize < e.height) return cudaErrorInvalidValue;
  return cudaSuccess;
}

//! A pitched pointer and a position in bytes, rows and planes, as one end.
end end_of(const cudaPitchedPtr& p, const cudaPos& at) {
  auto* base =
      static_cast<unsigned char*>(p.ptr) + at.z * p.pitch * p.ysize + at.y * p.pitch + at.x;
  return {base, p.pitch, p.pitch * p.ysize};
}

//! Moves the region row by row: the bytes between rows and planes stay as they are.
std::function<void()> rows(end d, end s, cudaExtent e) {
  return [d, s, e] {
    for (std::size_t z = 0; z < e.depth; ++z)
      for (std::size_t y = 0; y < e.height; ++y)
        std::memmove(d.base + z * d.plane + y * d.pitch, s.base + z * s.plane + y * s.pitch,
                     e.width);
  };
}

//! Bytes from an end's first byte to one past the last byte the region touches (e non-empty).
std::size_t footprint(const end& x, const cudaExtent& e) {
  return (e.depth - 1) * x.plane + (e.height - 1) * x.pitch + e.width;
}

cudaError_t strided(end d, end s, cudaExtent e, cudaStream_t h, int cbid, bool peer) {
  // A footprint that starts in pinned host memory and runs past its end (sim.cpp).
  if (sim::host_overrun(d.base, footprint(d, e)) || sim::host_overrun(s.base, footprint(s, e)))
    return sim::fail(cudaErrorInvalidValue);
  return sim::copy(d.base, s.base, e.width * e.height * e.depth, rows(d, s, e), h, cbid, peer);
}

bool empty(const cudaExtent& e) { return e.width == 0 || e.height == 0 || e.depth == 0; }

}  // namespace

extern "C" {

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind, cudaStream_t h) {
  const cudaExtent e{width, height, 1};
  if (empty(e)) return cudaSuccess;
  cudaError_t r = check_end(dst, dpitch, height, e);
  if (r == cudaSuccess) r = check_end(src, spitch, height, e);
  if (r != cudaSuccess) return sim::fail(r);
  end d{static_cast<unsigned char*>(dst), dpitch, 0};
  end s{static_cast<unsigned char*>(const_cast<void*>(src)), spitch, 0};
  return strided(d, s, e, h, cbid_memcpy_2d_async, false);
}

cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t h) {
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr)
    return sim::fail(cudaErrorInvalidValue);
  if (empty(p->extent)) return cudaSuccess;
  cudaError_t r = check_end(p->dstPtr.ptr, p->dstPtr.pitch, p->dstPtr.ysize, p->extent);
  if (r == cudaSuccess) r = check_end(p->srcPtr.ptr, p->srcPtr.pitch, p->srcPtr.ysize, p->extent);
  if (r != cudaSuccess) return sim::fail(r);
  return strided(end_of(p->dstPtr, p->dstPos), end_of(p->srcPtr, p->srcPos), p->extent, h,
                 cbid_memcpy_3d_async, false);
}

cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t h) {
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr)
    return sim::fail(cudaErrorInvalidValue);
  if (!sim::valid_device(p->srcDevice) || !sim::valid_device(p->dstDevice))
    return sim::fail(cudaErrorInvalidDevice);
  if (empty(p->extent)) return cudaSuccess;
  cudaError_t r = check_end(p->dstPtr.ptr, p->dstPtr.pitch, p->dstPtr.ysize, p->extent);
  if (r == cudaSuccess) r = check_end(p->srcPtr.ptr, p->srcPtr.pitch, p->srcPtr.ysize, p->extent);
  if (r != cudaSuccess) return sim::fail(r);
  // As cudaMemcpyPeerAsync: no pool access check (sim.cpp).
  return strided(end_of(p->dstPtr, p->dstPos), end_of(p->srcPtr, p->srcPos), p->extent, h,
                 cbid_memcpy_3d_peer_async, true);
}

cudaError_t cudaHostRegister(void* p, size_t n, unsigned int flags) {
  constexpr unsigned known = cudaHostRegisterPortable | cudaHostRegisterMapped |
                             cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
  if ((flags & ~known) != 0) return sim::fail(cudaErrorInvalidValue);
  return sim::register_host(p, n);
}

cudaError_t cudaHostUnregister(void* p) { return sim::unregister_host(p); }

}  // extern "C"
