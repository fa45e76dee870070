// The SM copy kernel of the GPU backends (sm_copy.cu): device code, compiled by
// nvcc into sluice::cuda and by hipcc into sluice::hip, called through the
// traits (api::sm_copy). Small peer copies over NVLink finish sooner as a
// kernel's stores than as a copy-engine transfer (64 KiB on 2x H200: 25 GB/s
// against 18.9, docs/results/runs/2026-11-22-raw-cuda-reference-2xh200.md).
#pragma once

#include <sluice/native.hpp>

#include <cstddef>
#include <cstdint>

namespace sluice::detail::sm_copy {

//! Copies n bytes from src to dst on stream s with `blocks` blocks of
//! `threads` threads, 16 bytes per thread and step; dst and src are 16-byte
//! aligned. Returns the vendor's error code of the launch (0: launched).
int launch(void* dst, const void* src, std::size_t n, native_stream_t s, unsigned blocks) noexcept;

constexpr unsigned threads = 256;
constexpr std::size_t alignment = 16;

//! A vendor graph's fill and copy of n bytes within one device's memory, as
//! kernels (any alignment; graph_ops.cpp says when). The vendor's error code
//! of the launch (0: launched).
int launch_graph_fill(void* dst, unsigned char value, std::size_t n, native_stream_t s) noexcept;
int launch_graph_copy(void* dst, const void* src, std::size_t n, native_stream_t s) noexcept;
//! The largest fill or copy that a vendor graph makes as a kernel.
constexpr std::size_t graph_kernel_max_bytes = std::size_t{1} << 20;

//! One piece of a batch: dst and src 16-byte aligned.
struct piece {
  void* dst;
  const void* src;
  std::size_t bytes;
};
//! Pieces per launch: they travel by value as the kernel's parameter (1.5 KiB,
//! well within the 4 KiB every vendor allows).
constexpr unsigned batch_pieces = 64;

//! Copies count <= batch_pieces pieces in one launch: blocks_per_piece blocks
//! for each piece (grid y: the piece). The vendor's error code of the launch.
int launch_batch(const piece* pieces, unsigned count, native_stream_t s,
                 unsigned blocks_per_piece) noexcept;

//! One piece of a strided copy: `height` rows of `width` bytes in each of
//! `depth` planes; the row y of plane z starts at dst + z * dst_plane + y *
//! dst_pitch (and so for src). Moved in units of `unit` bytes (16, 8, 4 or 1),
//! which divides both pointers, both pitches and planes, and the width. The
//! bytes between rows and planes are not touched (no pack buffer).
struct strided_piece {
  void* dst;
  const void* src;
  std::size_t dst_pitch, src_pitch;
  std::size_t dst_plane, src_plane;
  std::uint32_t width, height, depth, unit;
};
//! Strided pieces per launch, by value as the kernel's parameter (48 x 64
//! bytes: 3 KiB, within the 4 KiB every vendor allows).
constexpr unsigned strided_pieces = 48;
//! The largest unit count (width / unit x height x depth) of a strided piece:
//! the kernel indexes units with 32 bits.
constexpr std::uint64_t strided_units_max = UINT32_MAX;
//! The unit of a strided piece: the largest of 16, 8, 4 and 1 dividing every
//! address, pitch, plane and the width.
unsigned strided_unit(const strided_piece& p) noexcept;

//! Copies count <= strided_pieces strided pieces in one launch, blocks_per_piece
//! blocks for each (grid y: the piece). The vendor's error code of the launch.
int launch_strided(const strided_piece* pieces, unsigned count, native_stream_t s,
                   unsigned blocks_per_piece) noexcept;

}  // namespace sluice::detail::sm_copy
