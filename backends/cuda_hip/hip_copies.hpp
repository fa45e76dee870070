// The HIP traits' strided copies and host registration (hip_api inherits them; the shared code
// calls them as api::<name>), as cuda_copies.hpp for CUDA, with what HIP 5.2 lacks: it has
// hipMemcpy2DAsync and hipMemcpy3DAsync but no 3-D peer copy (no hipMemcpy3DPeerAsync in
// /usr/include/hip of ROCm 5.2.3, either platform), so has_3d_peer_copy is false and a strided
// peer copy with peer access takes sluice's strided SM kernel or one hipMemcpyPeerAsync per row
// (docs/vendor-differences.md). Header lines refer to ROCm 5.2.3's hip_runtime_api.h and
// driver_types.h (Debian libamdhip64-dev 5.2.3).
#pragma once

#include "sm_copy.hpp"

#include <hip/hip_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>

namespace sluice::gpu {

//! A vendor call's result: its code and the call's name.
struct hip_status {
  hipError_t code;
  const char* api;
  bool ok() const noexcept { return code == hipSuccess; }
};

struct hip_copies {
  // ROCm's 3-D copy runs on HIP_MEMCPY3D (rocclr hip_memory.cpp, ihipMemcpyParam3D), whose
  // pitches, heights and widths are unsigned int (driver_types.h:379-403); 2-D copies are held
  // to the same limit. A larger pitch, rows per plane or extent goes row by row.
  static constexpr std::size_t strided_field_max = UINT_MAX;
  static constexpr bool has_3d_peer_copy = false;
  //! The largest pitch the vendor's strided copies take on device d (hipDeviceAttributeMaxPitch).
  static hip_status max_pitch(std::size_t* out, int d) noexcept {
    int v = 0;
    const hip_status s{hipDeviceGetAttribute(&v, hipDeviceAttributeMaxPitch, d),
                       "hipDeviceGetAttribute"};
    *out = s.ok() && v > 0 ? static_cast<std::size_t>(v) : 0;
    return s;
  }
  //! height rows of width bytes, any direction (hipMemcpyDefault: the kind from the pointers).
  static hip_status memcpy_2d_async(void* dst, std::size_t dst_pitch, const void* src,
                                    std::size_t src_pitch, std::size_t width, std::size_t height,
                                    hipStream_t s) noexcept {
    return {hipMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, hipMemcpyDefault, s),
            "hipMemcpy2DAsync"};
  }
  //! depth planes of height rows of width bytes; rows_per_plane: hipPitchedPtr's ysize.
  static hip_status memcpy_3d_async(void* dst, std::size_t dst_pitch, std::size_t dst_rows,
                                    const void* src, std::size_t src_pitch, std::size_t src_rows,
                                    std::size_t width, std::size_t height, std::size_t depth,
                                    hipStream_t s) noexcept {
    hipMemcpy3DParms p{};
    p.dstPtr = hipPitchedPtr{dst, dst_pitch, width, dst_rows};
    p.srcPtr = hipPitchedPtr{const_cast<void*>(src), src_pitch, width, src_rows};
    p.extent = hipExtent{width, height, depth};
    p.kind = hipMemcpyDefault;
    return {hipMemcpy3DAsync(&p, s), "hipMemcpy3DAsync"};
  }
  //! Not in HIP 5.2 (has_3d_peer_copy): never called; fails without enqueuing anything.
  static hip_status memcpy_3d_peer_async(void*, int, std::size_t, std::size_t, const void*, int,
                                         std::size_t, std::size_t, std::size_t, std::size_t,
                                         std::size_t, hipStream_t) noexcept {
    return {hipErrorNotSupported, "hipMemcpy3DPeerAsync (not in HIP 5.2)"};
  }
  //! sluice's strided SM kernel (sm_copy.cu): count <= sm_copy::strided_pieces pieces.
  static hip_status sm_copy_strided(const ::sluice::detail::sm_copy::strided_piece* pieces,
                                    unsigned count, hipStream_t s,
                                    unsigned blocks_per_piece) noexcept {
    return {static_cast<hipError_t>(
                ::sluice::detail::sm_copy::launch_strided(pieces, count, s, blocks_per_piece)),
            "the strided SM copy kernel's launch"};
  }

  //! Pins [p, p + n) of the program's memory for every device, mapped. hipHostRegisterPortable
  //! is "always assumed true" (one context, hip_runtime_api.h:3117); passed as on CUDA.
  static hip_status host_register(void* p, std::size_t n) noexcept {
    return {hipHostRegister(p, n, hipHostRegisterPortable | hipHostRegisterMapped),
            "hipHostRegister"};
  }
  // May wait for the device's work, as hipHostFree does: sluice calls it on its reaper thread.
  static hip_status host_unregister(void* p) noexcept {
    return {hipHostUnregister(p), "hipHostUnregister"};
  }
};

}  // namespace sluice::gpu
