// sluice's SM copy kernel (backends/cuda_hip/sm_copy.cu) on one device: the
// kernel only dereferences the two pointers, so what it copies between two
// buffers of one GPU it copies over a peer link too. Every size class (empty,
// under one vector, vectors plus a tail, many grid strides), few and many
// blocks, single copies and batches of up to 64 pieces; each destination has
// guard bytes after it that must stay untouched. Needs a device that runs
// kernels: without one the run exits 77 (gpu_unit_main.cpp); the simulated
// runtime (tests/fake_cudart) launches none, and there the tests skip.
#include "sm_copy.hpp"

#include "../pattern.hpp"

#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace kernel = sluice::detail::sm_copy;
using sluice::test_data::pattern_byte;

constexpr unsigned char guard = 0xA5;
constexpr std::size_t guard_bytes = 64;

//! Source filled with the pattern, destination with the guard byte.
struct buffers {
  sluice::device_buffer<unsigned char> src, dst;
  std::vector<unsigned char> expected;
  buffers(sluice::stream& s, std::size_t bytes, unsigned seed)
      : src{sluice::device{0}, bytes + guard_bytes},
        dst{sluice::device{0}, bytes + guard_bytes},
        expected(bytes + guard_bytes, guard) {
    sluice::pinned_buffer<unsigned char> host{bytes + guard_bytes};
    for (std::size_t i = 0; i < bytes + guard_bytes; ++i) host[i] = pattern_byte(i, seed);
    sluice::copy(s, src.data(), host.data(), bytes + guard_bytes);
    sluice::fill(s, dst.data(), guard, bytes + guard_bytes);
    s.synchronize();
    for (std::size_t i = 0; i < bytes; ++i) expected[i] = pattern_byte(i, seed);
  }
  //! The first byte that differs from what is expected, or -1.
  long long first_wrong(sluice::stream& s, std::size_t from, std::size_t length) {
    sluice::pinned_buffer<unsigned char> back{length};
    sluice::copy(s, back.data(), dst.data() + from, length);
    s.synchronize();
    for (std::size_t i = 0; i < length; ++i)
      if (back[i] != expected[from + i]) return static_cast<long long>(from + i);
    return -1;
  }
};

//! Skips the test where the runtime launches no kernels (the simulated one).
bool kernels_run(sluice::stream& s) {
  return kernel::launch(nullptr, nullptr, 0, sluice::native_handle(s), 1) == 0;
}

TEST(SmCopyKernel, CopiesEverySizeExactlyAndNothingPastIt) {
  sluice::stream s{sluice::device{0}};
  if (!kernels_run(s))
    GTEST_SKIP() << "this runtime launches no kernels (simulated): not tested here";
  const std::size_t sizes[] = {
      0, 1, 15, 16, 17, 255, 4099, 65536, 65536 + 9, (1U << 20) + 7, (16U << 20) + 5};
  const unsigned block_counts[] = {1, 4, 528};
  unsigned seed = 1;
  for (const std::size_t bytes : sizes) {
    for (const unsigned blocks : block_counts) {
      buffers b{s, bytes, seed++};
      ASSERT_EQ(kernel::launch(b.dst.data(), b.src.data(), bytes, sluice::native_handle(s), blocks),
                0);
      EXPECT_EQ(b.first_wrong(s, 0, bytes + guard_bytes), -1)
          << bytes << " bytes with " << blocks << " blocks";
    }
  }
}

TEST(SmCopyKernel, BatchesCopyEveryPieceExactly) {
  sluice::stream s{sluice::device{0}};
  if (!kernels_run(s))
    GTEST_SKIP() << "this runtime launches no kernels (simulated): not tested here";
  // Pieces of varied sizes (tails of 0..15 bytes, some empty) at 16-byte
  // aligned offsets of one buffer, each followed by its own guard bytes.
  for (const unsigned count : {1U, 7U, kernel::batch_pieces}) {
    for (const unsigned blocks_per_piece : {1U, 8U}) {
      std::vector<std::size_t> offset(count), length(count);
      std::size_t total = 0;
      for (unsigned i = 0; i < count; ++i) {
        length[i] = (i % 9 == 4) ? 0 : 16384 + 4096 * (i % 5) + (i % 16);
        offset[i] = total;
        total += (length[i] + guard_bytes + 15) / 16 * 16;
      }
      buffers b{s, total, count * 10 + blocks_per_piece};
      // Only the pieces are copied: everything else of dst keeps the guard byte.
      std::fill(b.expected.begin(), b.expected.end(), guard);
      std::vector<kernel::piece> pieces(count);
      for (unsigned i = 0; i < count; ++i) {
        pieces[i] = {b.dst.data() + offset[i], b.src.data() + offset[i], length[i]};
        for (std::size_t k = 0; k < length[i]; ++k)
          b.expected[offset[i] + k] = pattern_byte(offset[i] + k, count * 10 + blocks_per_piece);
      }
      ASSERT_EQ(
          kernel::launch_batch(pieces.data(), count, sluice::native_handle(s), blocks_per_piece),
          0);
      EXPECT_EQ(b.first_wrong(s, 0, total + guard_bytes), -1)
          << count << " pieces, " << blocks_per_piece << " blocks each";
    }
  }
}

// copy_peer's default path between two GPUs with peer access, per side
// (backends/cuda_hip/tuning/cuda.hpp and hip.hpp, peer_sm_*_default_kib;
// docs/api.md): on CUDA a copy on the destination's stream (pull) of at most
// 16 MiB, 16-byte aligned at both ends, runs as the SM kernel (direct_sm); a
// larger or misaligned one, and every copy on the source's stream (push), on
// the copy engine (direct). HIP: direct everywhere (not measured on AMD GPUs).
// Each copy's data is checked, with guard bytes after it.
TEST(SmCopyKernel, PeerCopiesTakeTheDefaultPathOfTheirSide) {
  if (sluice::device_count() < 2) GTEST_SKIP() << "needs two devices: not tested here";
  sluice::stream s{sluice::device{0}};
  if (!kernels_run(s))
    GTEST_SKIP() << "this runtime launches no kernels (simulated): not tested here";
  for (const char* v :
       {"SLUICE_PEER_SM_MAX_KIB", "SLUICE_PEER_SM_PUSH_MAX_KIB", "SLUICE_PEER_SM_PULL_MAX_KIB"})
    if (std::getenv(v) != nullptr) GTEST_SKIP() << v << " is set: the defaults are not in use";
  const sluice::device d0{0}, d1{1};
  if (!sluice::link(d0, d1).peer_access_possible)
    GTEST_SKIP() << "devices 0 and 1 have no peer access: not tested here";
  sluice::enable_peer_access(d0, d1);
  sluice::enable_peer_access(d1, d0);
  const std::size_t pull_limit = sluice::backend() == sluice::backend_kind::cuda ? 16U << 20 : 0;
  constexpr std::size_t most = (64U << 20) + 64;
  sluice::device_buffer<unsigned char> src{d0, most}, dst{d1, most + guard_bytes};
  {
    sluice::pinned_buffer<unsigned char> host{most};
    for (std::size_t i = 0; i < most; ++i) host[i] = pattern_byte(i, 7);
    sluice::copy(s, src.data(), host.data(), most);
    s.synchronize();
  }
  sluice::stream s1{d1};
  sluice::pinned_buffer<unsigned char> back{most + guard_bytes};
  struct copy_case {
    std::size_t bytes, offset;
    bool pull;
  };
  const copy_case cases[] = {
      {4096, 0, true},       {65536, 0, true}, {16U << 20, 0, true}, {(16U << 20) + 16, 0, true},
      {64U << 20, 0, true},  {65536, 8, true}, {4096, 0, false},     {65536, 0, false},
      {16U << 20, 0, false},
  };
  for (const copy_case& c : cases) {
    sluice::fill(s1, dst.data(), guard, most + guard_bytes);
    s1.synchronize();
    sluice::stream& on = c.pull ? s1 : s;
    const sluice::copy_path path =
        sluice::copy_peer(on, dst.data() + c.offset, d1, src.data() + c.offset, d0, c.bytes);
    const bool sm = c.pull && c.offset % 16 == 0 && c.bytes <= pull_limit;
    EXPECT_EQ(path, sm ? sluice::copy_path::direct_sm : sluice::copy_path::direct)
        << (c.pull ? "pull" : "push") << " of " << c.bytes << " bytes at offset " << c.offset
        << ": " << sluice::to_string(path);
    on.synchronize();
    sluice::copy(s1, back.data(), dst.data(), c.offset + c.bytes + guard_bytes);
    s1.synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = c.offset; i < c.offset + c.bytes; ++i)
      wrong += back[i] != pattern_byte(i, 7) ? 1 : 0;
    for (std::size_t i = c.offset + c.bytes; i < c.offset + c.bytes + guard_bytes; ++i)
      wrong += back[i] != guard ? 1 : 0;
    EXPECT_EQ(wrong, 0U) << (c.pull ? "pull" : "push") << " of " << c.bytes << " bytes at offset "
                         << c.offset;
  }
}

}  // namespace
