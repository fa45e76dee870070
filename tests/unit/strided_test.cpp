// The shared checks and plan of strided copies (src/strided.*, the strided
// forms of src/peer_plan.*) and the registry of registered host memory.
#include "strided.hpp"

#include "peer_plan.hpp"
#include "range_map.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using sluice::const_pitched_ptr;
using sluice::extent;
using sluice::pitched_ptr;
using sluice::detail::plan_strided_copy;
using sluice::detail::strided_plan;

constexpr const char* api = "sluice::copy";

//! Whether f throws errc::invalid_argument whose message holds `words`.
template <class F>
bool rejects(F&& f, const std::string& words) {
  try {
    f();
  } catch (const sluice::error& e) {
    if (e.code() != sluice::errc::invalid_argument) return false;
    if (std::string(e.what()).find(words) == std::string::npos) {
      ADD_FAILURE() << "message: " << e.what();
      return false;
    }
    return true;
  }
  return false;
}

TEST(StridedPlan, AZeroExtentIsEmptyWhateverThePointers) {
  for (const extent e : {extent{0, 5, 5}, extent{8, 0, 5}, extent{8, 5, 0}}) {
    const strided_plan p = plan_strided_copy({nullptr, 0, 0}, {nullptr, 0, 0}, e, api);
    EXPECT_TRUE(p.empty());
  }
}

TEST(StridedPlan, TheFootprintIsTheContractsRange) {
  std::vector<unsigned char> a(4096), b(4096);
  // 3 planes of 4 rows of 10 bytes, pitch 16, 5 rows per plane:
  // (3-1)*16*5 + (4-1)*16 + 10 = 218.
  const strided_plan p = plan_strided_copy({a.data(), 16, 5}, {b.data(), 32, 6}, {10, 4, 3}, api);
  EXPECT_EQ(p.dst.footprint, 218U);
  EXPECT_EQ(p.src.footprint, 2U * 32 * 6 + 3U * 32 + 10);
  EXPECT_EQ(p.bytes, 120U);
  EXPECT_EQ(p.width, 10U);
  EXPECT_EQ(p.rows, 4U);
  EXPECT_EQ(p.planes, 3U);
  EXPECT_EQ(p.dst.row_step, 16U);
  EXPECT_EQ(p.dst.plane_step, 80U);
  EXPECT_EQ(p.src.plane_step, 192U);
  EXPECT_EQ(p.dst_at(1, 2), a.data() + 2 * 80 + 16);
}

TEST(StridedPlan, WholeRowsBecomeOneRun) {
  std::vector<unsigned char> a(4096), b(4096);
  const strided_plan rows =
      plan_strided_copy({a.data(), 64, 0}, {b.data(), 64, 0}, {64, 8, 1}, api);
  EXPECT_TRUE(rows.contiguous());
  EXPECT_EQ(rows.width, 512U);
  // Whole planes of whole rows: one run too.
  const strided_plan planes =
      plan_strided_copy({a.data(), 16, 4}, {b.data(), 16, 4}, {16, 4, 8}, api);
  EXPECT_TRUE(planes.contiguous());
  EXPECT_EQ(planes.width, 512U);
  // Only one end whole: stays rows.
  const strided_plan one = plan_strided_copy({a.data(), 64, 0}, {b.data(), 80, 0}, {64, 8, 1}, api);
  EXPECT_FALSE(one.contiguous());
  EXPECT_EQ(one.rows, 8U);
}

TEST(StridedPlan, PlanesThatContinueTheRowsAreRows) {
  std::vector<unsigned char> a(8192), b(8192);
  // rows_per_plane == height on both ends: 3-D is 2-D with height * depth rows.
  const strided_plan p = plan_strided_copy({a.data(), 32, 4}, {b.data(), 48, 4}, {8, 4, 5}, api);
  EXPECT_EQ(p.rows, 20U);
  EXPECT_EQ(p.planes, 1U);
  EXPECT_EQ(p.dst.row_step, 32U);
  EXPECT_EQ(p.src.row_step, 48U);
  // A single row per plane: the planes are the rows, at the plane step.
  const strided_plan q = plan_strided_copy({a.data(), 32, 6}, {b.data(), 32, 6}, {8, 1, 5}, api);
  EXPECT_EQ(q.rows, 5U);
  EXPECT_EQ(q.planes, 1U);
  EXPECT_EQ(q.dst.row_step, 192U);
}

TEST(StridedPlan, BadShapesAreRejected) {
  std::vector<unsigned char> a(4096), b(4096);
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({nullptr, 16, 0}, {b.data(), 16, 0}, {8, 2, 1}, api);
      },
      "dst is null"));
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 16, 0}, {nullptr, 16, 0}, {8, 2, 1}, api);
      },
      "src is null"));
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 7, 0}, {b.data(), 16, 0}, {8, 2, 1}, api);
      },
      "dst's pitch 7 is below the width"));
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 16, 1}, {b.data(), 7, 1}, {8, 1, 2}, api);
      },
      "src's pitch 7"));
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 16, 1}, {b.data(), 16, 2}, {8, 2, 2}, api);
      },
      "dst's rows_per_plane 1 is below the height"));
  // One row, one plane: pitch and rows_per_plane do not count.
  EXPECT_FALSE(plan_strided_copy({a.data(), 0, 0}, {b.data(), 0, 0}, {8, 1, 1}, api).empty());
  // One plane: rows_per_plane does not count.
  EXPECT_FALSE(plan_strided_copy({a.data(), 16, 0}, {b.data(), 16, 0}, {8, 2, 1}, api).empty());
}

TEST(StridedPlan, AnOverflowingFootprintIsRejected) {
  std::vector<unsigned char> a(64), b(64);
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), SIZE_MAX / 2, 0}, {b.data(), 16, 0}, {8, 3, 1}, api);
      },
      "overflows std::size_t"));
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 1U << 20, SIZE_MAX / 1024}, {b.data(), 16, 4}, {8, 2, 2}, api);
      },
      "overflows std::size_t"));
  // Fits the size type but not the address space.
  auto* high = reinterpret_cast<void*>(UINTPTR_MAX - 100);
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({high, 64, 0}, {b.data(), 64, 0}, {8, 3, 1}, api);
      },
      "overflows the address space"));
}

TEST(StridedPlan, OverlappingFootprintsAreRejectedUnlessTheColumnsAreDisjoint) {
  std::vector<unsigned char> a(4096);
  // The same rows, other columns of one array (a ghost column): allowed.
  const strided_plan ghost =
      plan_strided_copy({a.data(), 64, 0}, {a.data() + 56, 64, 0}, {8, 16, 1}, api);
  EXPECT_EQ(ghost.bytes, 128U);
  // Columns that wrap around the pitch, still disjoint: [60, 68) and [4, 12) mod 64.
  EXPECT_FALSE(
      plan_strided_copy({a.data() + 60, 64, 0}, {a.data() + 68, 64, 0}, {8, 16, 1}, api).empty());
  // Columns that meet.
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 64, 0}, {a.data() + 4, 64, 0}, {8, 16, 1}, api);
      },
      "overlap"));
  // Other pitches.
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 64, 0}, {a.data() + 32, 96, 0}, {8, 16, 1}, api);
      },
      "overlap"));
  // 3-D: other rows_per_plane.
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 64, 4}, {a.data() + 32, 64, 5}, {8, 4, 2}, api);
      },
      "overlap"));
  EXPECT_FALSE(
      plan_strided_copy({a.data(), 64, 5}, {a.data() + 32, 64, 5}, {8, 4, 2}, api).empty());
  // A single row that meets: bytes in common.
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 64, 0}, {a.data() + 4, 64, 0}, {8, 1, 1}, api);
      },
      "overlap"));
  // Footprints that do not meet need no exception.
  EXPECT_FALSE(
      plan_strided_copy({a.data(), 32, 0}, {a.data() + 2048, 16, 0}, {8, 4, 1}, api).empty());
}

TEST(StridedPlan, AFootprintPastASluiceAllocationIsRejected) {
  auto& map = sluice::detail::allocations();
  std::vector<unsigned char> a(1024), b(1024);
  int owner = 0;
  map.add(a.data(), 256, &owner, 0);
  // 4 rows at pitch 64, width 16: footprint 208 inside; 5 rows: 272 > 256.
  const strided_plan in = plan_strided_copy({a.data(), 64, 0}, {b.data(), 64, 0}, {16, 4, 1}, api);
  EXPECT_EQ(in.dst.memory.owner, &owner);
  EXPECT_EQ(in.dst.memory.device, 0);
  EXPECT_FALSE(in.dst.pageable());
  EXPECT_TRUE(in.src.pageable());
  EXPECT_TRUE(rejects(
      [&] {
        plan_strided_copy({a.data(), 64, 0}, {b.data(), 64, 0}, {16, 5, 1}, api);
      },
      "runs past the end"));
  map.remove(a.data());
}

TEST(RegisteredRanges, ACopyWhollyInsideCountsAsRegistered) {
  std::vector<unsigned char> a(1024), b(1024);
  int owner = 0;
  sluice::detail::add_registration(a.data(), 512, &owner, "test");
  EXPECT_TRUE(sluice::detail::inside_registration(a.data() + 100, 412));
  EXPECT_FALSE(sluice::detail::inside_registration(a.data() + 100, 413));  // partly inside
  const strided_plan in = plan_strided_copy({a.data(), 64, 0}, {b.data(), 64, 0}, {16, 8, 1}, api);
  EXPECT_TRUE(in.dst.registered);
  EXPECT_FALSE(in.dst.pageable());
  EXPECT_TRUE(in.src.pageable());
  // Footprint 9 rows: 8 * 64 + 16 > 512, partly inside: pageable.
  const strided_plan part =
      plan_strided_copy({a.data(), 64, 0}, {b.data(), 64, 0}, {16, 9, 1}, api);
  EXPECT_FALSE(part.dst.registered);
  EXPECT_TRUE(part.dst.pageable());
  sluice::detail::remove_registration(a.data());
  EXPECT_FALSE(sluice::detail::inside_registration(a.data(), 16));
}

TEST(RegisteredRanges, BadRegistrationsAreRejected) {
  std::vector<unsigned char> a(1024);
  int owner = 0, other = 0;
  EXPECT_TRUE(rejects([&] { sluice::detail::add_registration(nullptr, 8, &owner, "r"); }, "null"));
  EXPECT_TRUE(
      rejects([&] { sluice::detail::add_registration(a.data(), 0, &owner, "r"); }, "empty"));
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::add_registration(reinterpret_cast<void*>(UINTPTR_MAX - 4), 8, &owner, "r");
      },
      "overflows"));
  sluice::detail::add_registration(a.data() + 256, 256, &owner, "r");
  EXPECT_TRUE(rejects([&] { sluice::detail::add_registration(a.data() + 500, 100, &other, "r"); },
                      "another registered_host_memory"));
  EXPECT_TRUE(rejects([&] { sluice::detail::add_registration(a.data(), 257, &other, "r"); },
                      "another registered_host_memory"));
  // Touching ends do not meet.
  sluice::detail::add_registration(a.data(), 256, &other, "r");
  sluice::detail::remove_registration(a.data());
  int allocation = 0;
  sluice::detail::allocations().add(a.data() + 600, 100, &allocation, -1);
  EXPECT_TRUE(rejects([&] { sluice::detail::add_registration(a.data() + 520, 100, &other, "r"); },
                      "memory sluice allocated"));
  sluice::detail::allocations().remove(a.data() + 600);
  sluice::detail::remove_registration(a.data() + 256);
}

TEST(RangeMapMeets, FindsEveryRangeThatMeets) {
  sluice::detail::range_map m;
  std::vector<unsigned char> a(1024);
  int owner = 0;
  m.add(a.data() + 100, 100, &owner, -1);
  EXPECT_TRUE(m.meets(a.data() + 150, 1));   // inside
  EXPECT_TRUE(m.meets(a.data() + 50, 51));   // reaches its start
  EXPECT_TRUE(m.meets(a.data() + 199, 10));  // starts at its last byte
  EXPECT_TRUE(m.meets(a.data(), 1000));      // around it
  EXPECT_FALSE(m.meets(a.data() + 50, 50));  // ends where it starts
  EXPECT_FALSE(m.meets(a.data() + 200, 10));
  EXPECT_FALSE(m.add_if_disjoint(a.data() + 190, 20, &owner, -1));
  EXPECT_TRUE(m.add_if_disjoint(a.data() + 200, 20, &owner, -1));
  EXPECT_TRUE(m.meets(a.data() + 210, 1));
}

// --- the strided peer plans ------------------------------------------------

sluice::detail::peer_limits any_memory() {
  sluice::detail::peer_limits l;
  l.only_sluice_memory = false;
  return l;
}

TEST(StridedPeerPlan, ChecksAndPathOfOneCopy) {
  const sluice::device d0(0);
  std::vector<unsigned char> a(4096), b(4096);
  const auto p = sluice::detail::plan_copy_peer(0, pitched_ptr{a.data(), 64, 0}, d0,
                                                const_pitched_ptr{b.data(), 32, 0}, d0,
                                                extent{8, 10, 1}, any_memory());
  EXPECT_EQ(p.copy.path, sluice::copy_path::local);
  EXPECT_EQ(p.copy.bytes, 80U);
  EXPECT_EQ(p.shape.rows, 10U);
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::plan_copy_peer(0, pitched_ptr{a.data(), 4, 0}, d0,
                                       const_pitched_ptr{b.data(), 32, 0}, d0, extent{8, 10, 1},
                                       any_memory());
      },
      "sluice::copy_peer: dst's pitch 4"));
}

TEST(StridedPeerPlan, BatchPiecesMayShareAnArrayByColumns) {
  const sluice::device d0(0);
  std::vector<unsigned char> dst(4096), src(4096);
  // Two ghost columns of one destination array, from two columns of the source.
  std::vector<sluice::strided_piece> pieces = {
      {{dst.data(), 64, 0}, {src.data() + 8, 64, 0}, {8, 16, 1}},
      {{dst.data() + 56, 64, 0}, {src.data() + 48, 64, 0}, {8, 16, 1}},
      {{dst.data(), 0, 0}, {src.data(), 0, 0}, {0, 1, 1}}};  // empty: dropped
  const auto plan =
      sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory());
  EXPECT_EQ(plan.pieces.size(), 2U);
  EXPECT_EQ(plan.copy.bytes, 256U);
  EXPECT_EQ(plan.copy.path, sluice::copy_path::local);
  // A third piece writing into the first one's columns.
  pieces[2] = {{dst.data() + 4, 64, 0}, {src.data() + 2048, 64, 0}, {8, 16, 1}};
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory());
      },
      "piece 0 and piece 2 overlap where both write"));
  // A piece reading what another writes.
  pieces[2] = {{dst.data() + 2048, 64, 0}, {dst.data() + 60, 64, 0}, {4, 2, 1}};
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory());
      },
      "piece 1 and piece 2 overlap where one writes and the other reads"));
  // Reads may meet freely.
  pieces[2] = {{dst.data() + 2048, 64, 0}, {src.data() + 8, 64, 0}, {8, 16, 1}};
  EXPECT_EQ(
      sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory())
          .pieces.size(),
      3U);
  // A bad piece is named.
  pieces[2].dst.pitch = 2;
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory());
      },
      "piece 2: "));
}

// Pieces the strided SM kernel takes go by it, the rest by the copy engine, in one batch.
TEST(StridedPeerPlan, BatchOfFacesSomeSmallGoesPartlyByTheSmKernel) {
  const sluice::device d0(0);
  alignas(16) static unsigned char dst[64 * 1024], src[64 * 1024];
  sluice::detail::peer_limits l = any_memory();
  l.sm_blocks = 132;
  l.sm_batch_max = 1024;
  l.sm_strided_narrow_row = 16;
  // An x face (narrow rows: any size), a y face of 4 KiB rows (too big), a small y face.
  const std::vector<sluice::strided_piece> pieces = {
      {{dst + 16384, 1024, 0}, {src + 16392, 1024, 0}, {8, 8, 1}},
      {{dst, 4096, 2}, {src, 4096, 2}, {4096, 1, 2}},
      {{dst + 32768, 64, 0}, {src + 32768, 64, 0}, {32, 8, 1}}};
  auto plan = sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), l);
  EXPECT_EQ(plan.copy.path, sluice::copy_path::local);
  ASSERT_EQ(plan.pieces.size(), 3U);
  ASSERT_EQ(plan.sm_pieces, 2U);
  EXPECT_EQ(plan.pieces[0].width, 8U);   // the x face
  EXPECT_EQ(plan.pieces[1].width, 32U);  // the small y face
  EXPECT_EQ(plan.pieces[2].width, 4096U);
  EXPECT_EQ(plan.copy.bytes, 64U + 8192U + 256U);
  // Every piece small: the whole batch by the kernel.
  plan = sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data() + 2, 1, l);
  EXPECT_EQ(plan.copy.path, sluice::copy_path::local_sm);
  EXPECT_EQ(plan.sm_pieces, 1U);
  // No kernel: none by it.
  l.sm_blocks = 0;
  plan = sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), l);
  EXPECT_EQ(plan.copy.path, sluice::copy_path::local);
  EXPECT_EQ(plan.sm_pieces, 0U);
}

TEST(StridedPeerPlan, BatchPiecesMayInterleaveRowsOfOneArray) {
  const sluice::device d0(0);
  std::vector<unsigned char> dst(8192), src(8192);
  // The two y faces of a 3-D block (rows 0 and 5 of every plane, the same
  // columns): their footprints meet, their bytes do not.
  std::vector<sluice::strided_piece> pieces = {
      {{dst.data(), 16, 8}, {src.data(), 16, 8}, {16, 1, 4}},
      {{dst.data() + 5 * 16, 16, 8}, {src.data() + 16, 16, 8}, {16, 1, 4}}};
  EXPECT_EQ(
      sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory())
          .pieces.size(),
      2U);
  // Row 5 of plane 2 lies inside the second piece: a 2-D piece over it shares a byte.
  pieces.push_back(
      {{dst.data() + 2 * 128 + 5 * 16 + 15, 1000, 0}, {src.data() + 4096, 16, 0}, {1, 2, 1}});
  EXPECT_TRUE(rejects(
      [&] {
        sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory());
      },
      "piece 1 and piece 2 overlap where both write"));
  // One byte later: the gap after that row; a second row 1000 bytes on lies past every plane.
  pieces[2].dst.ptr = dst.data() + 2 * 128 + 5 * 16 + 16;
  EXPECT_EQ(
      sluice::detail::plan_copy_peer_batch(0, d0, d0, pieces.data(), pieces.size(), any_memory())
          .pieces.size(),
      3U);
}

TEST(StridedPeerPlan, SmallAlignedStridedCopiesOverTheLinkUseTheKernel) {
  if (sluice::device_count() < 2) GTEST_SKIP() << "needs two devices";
  // Device 1 to 0: the host backend's tests need 0 to 1 without peer access.
  const sluice::device d0(0), d1(1);
  sluice::enable_peer_access(d1, d0);
  std::vector<unsigned char> a(8192), b(8192);
  auto* pa = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(a.data()) + 63) &
                                              ~std::uintptr_t{63});
  auto* pb = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(b.data()) + 63) &
                                              ~std::uintptr_t{63});
  auto limits = any_memory();
  limits.sm_strided_max = 1024;
  limits.sm_blocks = 4;
  const auto small = sluice::detail::plan_copy_peer(
      1, pitched_ptr{pa, 64, 0}, d0, const_pitched_ptr{pb, 128, 0}, d1, extent{16, 8, 1}, limits);
  EXPECT_EQ(small.copy.path, sluice::copy_path::direct_sm);
  const auto big = sluice::detail::plan_copy_peer(
      1, pitched_ptr{pa, 64, 0}, d0, const_pitched_ptr{pb, 128, 0}, d1, extent{64, 32, 1}, limits);
  EXPECT_EQ(big.copy.path, sluice::copy_path::direct);
  // The kernel moves 4-byte units at the least: a pitch of 60 suits it, one of 62 does not.
  const auto four = sluice::detail::plan_copy_peer(
      1, pitched_ptr{pa, 60, 0}, d0, const_pitched_ptr{pb, 128, 0}, d1, extent{16, 8, 1}, limits);
  EXPECT_EQ(four.copy.path, sluice::copy_path::direct_sm);
  const auto unaligned = sluice::detail::plan_copy_peer(
      1, pitched_ptr{pa, 62, 0}, d0, const_pitched_ptr{pb, 128, 0}, d1, extent{16, 8, 1}, limits);
  EXPECT_EQ(unaligned.copy.path, sluice::copy_path::direct);
  // Narrow rows go to the kernel whatever the size; without the rule, by size only.
  const auto tall = [&](const sluice::detail::peer_limits& l) {
    return sluice::detail::plan_copy_peer(1, pitched_ptr{pa, 16, 0}, d0,
                                          const_pitched_ptr{pb, 32, 0}, d1, extent{8, 200, 1}, l)
        .copy.path;
  };
  EXPECT_EQ(tall(limits), sluice::copy_path::direct);  // 1600 bytes, over sm_strided_max
  auto narrow = limits;
  narrow.sm_strided_narrow_row = 8;
  EXPECT_EQ(tall(narrow), sluice::copy_path::direct_sm);
  // One device: the same rule, as local_sm; without the kernel, local.
  const auto one_device = [&](const sluice::detail::peer_limits& l) {
    return sluice::detail::plan_copy_peer(0, pitched_ptr{pa, 64, 0}, d0,
                                          const_pitched_ptr{pb, 128, 0}, d0, extent{16, 8, 1}, l)
        .copy.path;
  };
  EXPECT_EQ(one_device(limits), sluice::copy_path::local_sm);
  auto no_kernel = limits;
  no_kernel.sm_blocks = 0;
  EXPECT_EQ(one_device(no_kernel), sluice::copy_path::local);
}

}  // namespace
