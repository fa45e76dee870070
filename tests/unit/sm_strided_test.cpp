// sluice's strided SM copy kernel (backends/cuda_hip/sm_copy.cu, launch_strided) on one device:
// as the SM copy kernel, it only dereferences the pointers, so what it copies between two
// buffers of one GPU it copies over a peer link too. Shapes that take every unit (16, 8, 4 and
// 1 bytes: widths, pitches and offsets that 16 does not divide), one row, one plane, several
// planes, planes of one row, few and many blocks, and batches of up to strided_pieces pieces in
// one buffer; every byte of the destination outside the pieces keeps its guard value. Needs a
// device that runs kernels: without one the run exits 77 (gpu_unit_main.cpp); the simulated
// runtime (tests/fake_cudart) launches none, and there the tests skip.
#include "../pattern.hpp"
#include "sm_copy.hpp"

#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

namespace kernel = sluice::detail::sm_copy;
using sluice::test_data::pattern_byte;

constexpr unsigned char guard = 0x5A;

bool kernels_run(sluice::stream& s) {
  const kernel::strided_piece none{nullptr, nullptr, 0, 0, 0, 0, 0, 0, 0, 1};
  return kernel::launch_strided(&none, 1, sluice::native_handle(s), 1) == 0;
}

//! One strided shape at byte offsets of a source and a destination buffer.
struct shape {
  std::size_t src_at, dst_at, src_pitch, dst_pitch, src_rows, dst_rows;
  std::uint32_t width, height, depth;
};

std::size_t end_of(std::size_t at, std::size_t pitch, std::size_t rows, const shape& s) {
  return at + (s.depth - 1) * pitch * rows + (s.height - 1) * pitch + s.width;
}

//! Runs the pieces in one launch and checks every byte of the destination against a copy made
//! on the host; the failure names the first wrong byte.
void check_batch(sluice::stream& s, const std::vector<shape>& shapes, unsigned blocks,
                 unsigned seed) {
  std::size_t src_bytes = 0, dst_bytes = 0;
  for (const shape& p : shapes) {
    src_bytes = std::max(src_bytes, end_of(p.src_at, p.src_pitch, p.src_rows, p));
    dst_bytes = std::max(dst_bytes, end_of(p.dst_at, p.dst_pitch, p.dst_rows, p));
  }
  sluice::device_buffer<unsigned char> src{sluice::device{0}, src_bytes + 64};
  sluice::device_buffer<unsigned char> dst{sluice::device{0}, dst_bytes + 64};
  sluice::pinned_buffer<unsigned char> host{src_bytes + 64};
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = pattern_byte(i, seed);
  sluice::copy(s, src.data(), host.data(), host.size());
  sluice::fill(s, dst.data(), guard, dst.size());
  std::vector<unsigned char> expected(dst.size(), guard);
  std::vector<kernel::strided_piece> pieces;
  for (const shape& p : shapes) {
    kernel::strided_piece k{dst.data() + p.dst_at,
                            src.data() + p.src_at,
                            p.dst_pitch,
                            p.src_pitch,
                            p.dst_pitch * p.dst_rows,
                            p.src_pitch * p.src_rows,
                            p.width,
                            p.height,
                            p.depth,
                            1};
    k.unit = kernel::strided_unit(k);
    pieces.push_back(k);
    for (std::size_t z = 0; z < p.depth; ++z)
      for (std::size_t y = 0; y < p.height; ++y)
        for (std::size_t x = 0; x < p.width; ++x)
          expected[p.dst_at + z * p.dst_pitch * p.dst_rows + y * p.dst_pitch + x] =
              host[p.src_at + z * p.src_pitch * p.src_rows + y * p.src_pitch + x];
  }
  s.synchronize();
  ASSERT_EQ(kernel::launch_strided(pieces.data(), static_cast<unsigned>(pieces.size()),
                                   sluice::native_handle(s), blocks),
            0);
  sluice::pinned_buffer<unsigned char> back{dst.size()};
  sluice::copy(s, back.data(), dst.data(), dst.size());
  s.synchronize();
  for (std::size_t i = 0; i < back.size(); ++i)
    ASSERT_EQ(back[i], expected[i]) << "byte " << i << " of the destination, " << shapes.size()
                                    << " pieces, " << blocks << " blocks, unit " << pieces[0].unit;
}

TEST(SmStridedKernel, UnitsAreTheLargestThatDivideEveryAddressPitchAndTheWidth) {
  alignas(16) static unsigned char base[64];
  kernel::strided_piece p{base, base + 32, 64, 48, 64 * 4, 48 * 4, 32, 4, 2, 1};
  EXPECT_EQ(kernel::strided_unit(p), 16U);
  p.width = 24;
  EXPECT_EQ(kernel::strided_unit(p), 8U);
  p.src_pitch = 44;
  EXPECT_EQ(kernel::strided_unit(p), 4U);
  p.dst = base + 3;
  EXPECT_EQ(kernel::strided_unit(p), 1U);
}

TEST(SmStridedKernel, CopiesEveryShapeExactlyAndNothingBetweenRowsOrPlanes) {
  sluice::stream s{sluice::device{0}};
  if (!kernels_run(s)) GTEST_SKIP() << "this runtime launches no kernels (simulated)";
  const std::vector<shape> shapes = {
      {0, 0, 256, 512, 1, 1, 256, 1, 1},          // one row
      {0, 16, 256, 272, 8, 8, 160, 8, 1},         // one plane, unit 16
      {8, 24, 264, 136, 5, 7, 120, 5, 3},         // planes, unit 8
      {4, 12, 100, 68, 9, 11, 60, 9, 4},          // planes, unit 4
      {3, 7, 101, 67, 6, 6, 33, 6, 2},            // unit 1
      {0, 0, 4096, 1024, 1, 1, 64, 1, 200},       // planes of one row
      {0, 0, 8192, 8192, 130, 130, 4096, 130, 2}  // many grid strides
  };
  unsigned seed = 1;
  for (const shape& p : shapes)
    for (const unsigned blocks : {1U, 4U, 528U}) check_batch(s, {p}, blocks, seed++);
}

TEST(SmStridedKernel, BatchesCopyEveryPieceExactly) {
  sluice::stream s{sluice::device{0}};
  if (!kernels_run(s)) GTEST_SKIP() << "this runtime launches no kernels (simulated)";
  for (const unsigned count : {2U, 17U, kernel::strided_pieces}) {
    // The faces of one array at one pitch, columns apart, each piece its own shape.
    std::vector<shape> shapes;
    for (unsigned i = 0; i < count; ++i) {
      const std::size_t column = 40 * i;
      const std::uint32_t width = 8 + 8 * (i % 4) + (i % 3 == 0 ? 3 : 0);
      shapes.push_back({column, column, 40 * count + 16, 40 * count + 32, 12, 10, width,
                        static_cast<std::uint32_t>(1 + i % 10),
                        static_cast<std::uint32_t>(1 + i % 3)});
    }
    for (const unsigned blocks : {1U, 8U}) check_batch(s, shapes, blocks, count + blocks);
  }
}

}  // namespace
