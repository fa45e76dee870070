// The CUDA traits' strided copies and host registration (cuda_api inherits them; the shared
// code calls them as api::<name>): the vendor's 2-D and 3-D copies of linear memory, its 3-D
// peer copy, cudaHostRegister / cudaHostUnregister, and sluice's strided SM kernel. Kept apart
// from cuda_api.hpp so that each traits file stays readable; `cuda_status` is the traits'
// status (cuda_api::status).
#pragma once

#include "sm_copy.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sluice::gpu {

//! A vendor call's result: its code and the call's name.
struct cuda_status {
  cudaError_t code;
  const char* api;
  bool ok() const noexcept { return code == cudaSuccess; }
};

struct cuda_copies {
  // cudaExtent, cudaPitchedPtr and CUDA_MEMCPY3D hold size_t: no limit below the pitch's.
  static constexpr std::size_t strided_field_max = SIZE_MAX;
  static constexpr bool has_3d_peer_copy = true;  // cudaMemcpy3DPeerAsync
  //! The largest pitch the vendor's strided copies take on device d (cudaDevAttrMaxPitch;
  //! "returns an error if dpitch or spitch is greater than the maximum allowed").
  static cuda_status max_pitch(std::size_t* out, int d) noexcept {
    int v = 0;
    const cuda_status s{cudaDeviceGetAttribute(&v, cudaDevAttrMaxPitch, d),
                        "cudaDeviceGetAttribute"};
    *out = s.ok() && v > 0 ? static_cast<std::size_t>(v) : 0;
    return s;
  }
  //! height rows of width bytes, any direction (cudaMemcpyDefault: the kind from the pointers).
  static cuda_status memcpy_2d_async(void* dst, std::size_t dst_pitch, const void* src,
                                     std::size_t src_pitch, std::size_t width, std::size_t height,
                                     cudaStream_t s) noexcept {
    return {cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDefault, s),
            "cudaMemcpy2DAsync"};
  }
  //! depth planes of height rows of width bytes; rows_per_plane: cudaPitchedPtr's ysize.
  static cuda_status memcpy_3d_async(void* dst, std::size_t dst_pitch, std::size_t dst_rows,
                                     const void* src, std::size_t src_pitch, std::size_t src_rows,
                                     std::size_t width, std::size_t height, std::size_t depth,
                                     cudaStream_t s) noexcept {
    cudaMemcpy3DParms p{};
    p.dstPtr = cudaPitchedPtr{dst, dst_pitch, width, dst_rows};
    p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), src_pitch, width, src_rows};
    p.extent = cudaExtent{width, height, depth};
    p.kind = cudaMemcpyDefault;
    return {cudaMemcpy3DAsync(&p, s), "cudaMemcpy3DAsync"};
  }
  //! The same between memory of two devices (with or without peer access, as
  //! cudaMemcpyPeerAsync; sluice uses it with peer access).
  static cuda_status memcpy_3d_peer_async(void* dst, int dst_dev, std::size_t dst_pitch,
                                          std::size_t dst_rows, const void* src, int src_dev,
                                          std::size_t src_pitch, std::size_t src_rows,
                                          std::size_t width, std::size_t height, std::size_t depth,
                                          cudaStream_t s) noexcept {
    cudaMemcpy3DPeerParms p{};
    p.dstPtr = cudaPitchedPtr{dst, dst_pitch, width, dst_rows};
    p.dstDevice = dst_dev;
    p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), src_pitch, width, src_rows};
    p.srcDevice = src_dev;
    p.extent = cudaExtent{width, height, depth};
    return {cudaMemcpy3DPeerAsync(&p, s), "cudaMemcpy3DPeerAsync"};
  }
  //! sluice's strided SM kernel (sm_copy.cu): count <= sm_copy::strided_pieces pieces.
  static cuda_status sm_copy_strided(const ::sluice::detail::sm_copy::strided_piece* pieces,
                                     unsigned count, cudaStream_t s,
                                     unsigned blocks_per_piece) noexcept {
    return {static_cast<cudaError_t>(
                ::sluice::detail::sm_copy::launch_strided(pieces, count, s, blocks_per_piece)),
            "the strided SM copy kernel's launch"};
  }

  //! Pins [p, p + n) of the program's memory for every device (portable), mapped so that
  //! kernels may reach it.
  static cuda_status host_register(void* p, std::size_t n) noexcept {
    return {cudaHostRegister(p, n, cudaHostRegisterPortable | cudaHostRegisterMapped),
            "cudaHostRegister"};
  }
  // Like cudaFreeHost it may wait for the device's work in flight: sluice calls it on its
  // reaper thread, never on the caller's.
  static cuda_status host_unregister(void* p) noexcept {
    return {cudaHostUnregister(p), "cudaHostUnregister"};
  }
};

}  // namespace sluice::gpu
