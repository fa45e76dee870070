// The raw side of sluice-bench-p2p-strided-<backend> (p2p_strided.cpp), so that
// p2p_strided.cpp names no vendor: the vendor's own strided copy
// (cudaMemcpy3DPeerAsync between two devices, cudaMemcpy3DAsync on one) and a
// pack kernel + one contiguous peer copy + an unpack kernel per face, in
// p2p_strided_raw.cu; p2p_strided_raw_none.cpp where no raw side is built (the
// host backend: both methods are reported as not available).
#pragma once

#include <sluice/native.hpp>

#include <cstddef>

namespace strided_raw {

//! One face: `depth` planes of `height` rows of `width` bytes (a multiple of
//! 8), from src (pitch, rows per plane) to dst.
struct face {
  void* dst;
  const void* src;
  std::size_t dst_pitch, dst_rows, src_pitch, src_rows;
  std::size_t width, height, depth;
};

//! nullptr where the raw side is built, else why it is not (printed).
const char* unavailable() noexcept;
//! Whether the runtime runs kernels (the pack method needs them; the
//! simulated CUDA runtime runs none).
bool kernels_run() noexcept;
//! The vendor's 3-D copy of each face on s (a stream of src_dev); the vendor's
//! error code (0: enqueued).
int copy_3d(const face* faces, std::size_t count, int dst_dev, int src_dev,
            sluice::native_stream_t s) noexcept;

//! What the pack method keeps between calls: its two events.
struct pack_context;
pack_context* make_pack_context(int dst_dev, int src_dev) noexcept;
void free_pack_context(pack_context* c) noexcept;
//! A pack kernel per face on src_stream into src_scratch (the faces one after
//! another, contiguous), one contiguous peer copy of them all into dst_scratch
//! on src_stream, an unpack kernel per face on dst_stream after it (an event);
//! the next call's peer copy waits for this call's unpacks. The vendor's error
//! code.
int pack_copy_unpack(pack_context* c, const face* faces, std::size_t count, void* src_scratch,
                     void* dst_scratch, sluice::native_stream_t src_stream,
                     sluice::native_stream_t dst_stream) noexcept;

}  // namespace strided_raw
