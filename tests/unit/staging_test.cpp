// sluice's staged peer-copy pipeline (backends/cuda_hip/staging.cpp) on one
// device: detail::staged_copy with source and destination on device 0 runs
// every step of the pipeline (device-to-host chunks into the pinned slots on
// the caller's stream, host-to-device chunks on the helper stream, the filled
// and drained events, the slot-reuse waits, the final wait and the pooled
// sets) through the vendor runtime, so that the pipeline runs on a GPU of a
// machine with one GPU, and against the simulated runtime in CI. The
// conformance suite's PEER_2 tests check the same through copy_peer on two
// devices. ctest runs this with the default 8 MiB slots and with 256 KiB
// slots (SLUICE_STAGING_CHUNK_KIB): many chunks per copy, every slot refilled
// many times.
#include "gpu.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include "../pattern.hpp"

#include <cstddef>
#include <vector>

namespace {

using sluice::test_data::pattern_byte;

constexpr const char* api_name = "staging_test";

//! Device memory of device 0 holding the pattern of `seed`.
sluice::device_buffer<unsigned char> patterned(sluice::stream& s, std::size_t bytes, unsigned seed) {
  sluice::device_buffer<unsigned char> d{sluice::device{0}, bytes};
  sluice::pinned_buffer<unsigned char> host{bytes};
  for (std::size_t i = 0; i < bytes; ++i) host[i] = pattern_byte(i, seed);
  sluice::copy(s, d.data(), host.data(), bytes);
  s.synchronize();
  return d;
}

//! The first byte of d (bytes long) that is not pattern `seed` from `from`, or -1.
long long first_wrong(sluice::stream& s, const unsigned char* d, std::size_t bytes, unsigned seed,
                      std::size_t from = 0) {
  sluice::pinned_buffer<unsigned char> back{bytes};
  sluice::copy(s, back.data(), d, bytes);
  s.synchronize();
  for (std::size_t i = 0; i < bytes; ++i)
    if (back[i] != pattern_byte(from + i, seed)) return static_cast<long long>(i);
  return -1;
}

void staged(sluice::stream& s, void* dst, const void* src, std::size_t bytes) {
  const sluice::peer_piece piece{dst, src, bytes};
  auto& st = sluice::detail::checked(s, api_name);
  sluice::detail::end_host_batch(st);
  sluice::detail::staged_copy(st, 0, 0, &piece, 1, api_name);
}

// Two 40 MiB copies back to back on one stream (the second refills every slot
// the first used), each source overwritten right after its copy was enqueued:
// both destinations hold the sources as they were when the copies were
// enqueued, bit for bit.
TEST(StagedPipeline, CopiesAreExactOrderedAndReuseTheSlots) {
  sluice::stream s{sluice::device{0}};
  const std::size_t bytes = (40U << 20) + 13;
  auto a = patterned(s, bytes, 1);
  auto b = patterned(s, bytes, 2);
  sluice::device_buffer<unsigned char> x{sluice::device{0}, bytes}, y{sluice::device{0}, bytes};
  sluice::fill(s, x.data(), 0, bytes);
  sluice::fill(s, y.data(), 0, bytes);
  staged(s, x.data(), a.data(), bytes);
  sluice::fill(s, a.data(), 0xEE, bytes);  // later work on the stream: after the copy
  staged(s, y.data(), b.data(), bytes);
  sluice::fill(s, b.data(), 0xEE, bytes);
  s.synchronize();
  EXPECT_EQ(first_wrong(s, x.data(), bytes, 1), -1);
  EXPECT_EQ(first_wrong(s, y.data(), bytes, 2), -1);
}

// A batch of pieces of many sizes (empty ones, pieces smaller than a slot,
// pieces spanning several slots) at offsets of one buffer.
TEST(StagedPipeline, BatchesCopyEveryPiece) {
  sluice::stream s{sluice::device{0}};
  std::vector<std::size_t> offset, length;
  std::size_t total = 0;
  for (unsigned i = 0; i < 40; ++i) {
    const std::size_t n = (i % 7 == 3) ? 0 : (i % 5 == 0 ? (9U << 20) + i : 4096U * (i + 1) + i);
    offset.push_back(total);
    length.push_back(n);
    total += n + 64;  // a gap the copy must leave alone
  }
  auto src = patterned(s, total, 3);
  sluice::device_buffer<unsigned char> dst{sluice::device{0}, total};
  sluice::fill(s, dst.data(), 0x5A, total);
  std::vector<sluice::peer_piece> pieces;
  for (std::size_t i = 0; i < offset.size(); ++i)
    pieces.push_back({dst.data() + offset[i], src.data() + offset[i], length[i]});
  auto& st = sluice::detail::checked(s, api_name);
  sluice::detail::end_host_batch(st);
  sluice::detail::staged_copy(st, 0, 0, pieces.data(), pieces.size(), api_name);
  s.synchronize();
  sluice::pinned_buffer<unsigned char> back{total};
  sluice::copy(s, back.data(), dst.data(), total);
  s.synchronize();
  for (std::size_t i = 0; i < offset.size(); ++i) {
    for (std::size_t k = 0; k < length[i]; ++k)
      ASSERT_EQ(back[offset[i] + k], pattern_byte(offset[i] + k, 3))
          << "piece " << i << " byte " << k;
    for (std::size_t k = 0; k < 64; ++k)
      ASSERT_EQ(back[offset[i] + length[i] + k], 0x5A) << "the gap after piece " << i;
  }
}

// A stream's staging set goes to the pool when the stream is destroyed; the
// next stream that stages a copy takes it once its last use has completed.
// Several streams one after another, each copy checked.
TEST(StagedPipeline, PooledSetsServeLaterStreams) {
  const std::size_t bytes = (20U << 20) + 7;
  sluice::stream check{sluice::device{0}};
  for (unsigned round = 0; round < 4; ++round) {
    auto src = patterned(check, bytes, 10 + round);
    sluice::device_buffer<unsigned char> dst{sluice::device{0}, bytes};
    {
      sluice::stream s{sluice::device{0}};
      staged(s, dst.data(), src.data(), bytes);
      s.synchronize();
    }  // its set goes to the pool
    EXPECT_EQ(first_wrong(check, dst.data(), bytes, 10 + round), -1) << "round " << round;
  }
}

}  // namespace
