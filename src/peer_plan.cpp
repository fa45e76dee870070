#include "peer_plan.hpp"

#include "checks.hpp"
#include "peer_access.hpp"
#include "range_map.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sluice::detail {

namespace {

//! One end of the copy: sluice memory must be device memory of `device`; other
//! memory is rejected when the backend knows all device memory (host).
void check_end(const range_lookup& l, std::size_t bytes, int device, bool only_sluice_memory,
               const char* what) {
  constexpr const char* api = "sluice::copy_peer";
  check_no_overrun(l, bytes, api, what);
  if (l.owner == nullptr) {
    if (only_sluice_memory)
      fail(errc::invalid_argument, api, what, " is not device memory (expected memory of device ",
           device, ")");
    return;
  }
  if (l.device < 0)
    fail(errc::invalid_argument, api, what, " is pinned host memory, not memory of device ",
         device);
  if (l.device != device)
    fail(errc::invalid_argument, api, what, " is memory of device ", l.device, ", not of device ",
         device);
}

bool aligned(const void* p, const peer_limits& l) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % l.sm_alignment == 0;
}

std::size_t blocks_for(std::size_t bytes, const peer_limits& l) noexcept {
  return std::max<std::size_t>(1, (bytes + l.sm_block_bytes - 1) / l.sm_block_bytes);
}

//! The checks and the path of one copy (no SM choice).
copy_path checked_path(int own, void* dst, device dst_dev, const void* src, device src_dev,
                       std::size_t bytes, bool only_sluice_memory) {
  constexpr const char* api = "sluice::copy_peer";
  if (own != dst_dev.id() && own != src_dev.id())
    fail(errc::invalid_argument, api, "the stream is on device ", own, ", neither the source (",
         src_dev.id(), ") nor the destination (", dst_dev.id(), ")");
  copy_path path = copy_path::local;
  if (dst_dev != src_dev) {
    const int other = own == src_dev.id() ? dst_dev.id() : src_dev.id();
    path = peer_access().enabled(own, other) ? copy_path::direct : copy_path::staged;
  }
  if (bytes > 0) {
    check_copy_ranges(dst, src, bytes, api);
    const auto [d, from] = allocations().find(dst, src, bytes);
    check_end(d, bytes, dst_dev.id(), only_sluice_memory, "dst");
    check_end(from, bytes, src_dev.id(), only_sluice_memory, "src");
  }
  return path;
}

//! A strided shape's ends (addresses and steps) and width suit the strided SM kernel's units.
bool aligned(const strided_plan& p, const peer_limits& l) noexcept {
  const std::size_t a = l.sm_strided_alignment;
  return p.dst.address % a == 0 && p.src.address % a == 0 && p.dst.row_step % a == 0 &&
         p.src.row_step % a == 0 && p.dst.plane_step % a == 0 && p.src.plane_step % a == 0 &&
         p.width % a == 0;
}

//! The strided checks of one copy_peer (or piece) and its path, no SM choice.
copy_path checked_strided(int own, pitched_ptr dst, device dst_dev, const_pitched_ptr src,
                          device src_dev, extent e, const peer_limits& limits,
                          strided_plan* shape) {
  constexpr const char* api = "sluice::copy_peer";
  const copy_path path =
      checked_path(own, nullptr, dst_dev, nullptr, src_dev, 0, limits.only_sluice_memory);
  *shape = plan_strided_copy(dst, src, e, api);
  if (!shape->empty()) {
    check_end(shape->dst.memory, shape->dst.footprint, dst_dev.id(), limits.only_sluice_memory,
              "dst");
    check_end(shape->src.memory, shape->src.footprint, src_dev.id(), limits.only_sluice_memory,
              "src");
  }
  return path;
}

}  // namespace

bool sm_strided_takes(const strided_plan& p, std::size_t max_bytes, const peer_limits& l) noexcept {
  if (l.sm_blocks == 0 || !aligned(p, l)) return false;
  const bool narrow = l.sm_strided_narrow_row > 0 && p.width <= l.sm_strided_narrow_row &&
                      p.bytes / l.sm_strided_alignment < (std::size_t{1} << 32);
  return p.bytes <= max_bytes || narrow;
}

strided_peer_plan plan_copy_peer(int own, pitched_ptr dst, device dst_dev, const_pitched_ptr src,
                                 device src_dev, extent e, const peer_limits& limits) {
  strided_peer_plan plan;
  plan.copy.path = checked_strided(own, dst, dst_dev, src, src_dev, e, limits, &plan.shape);
  const strided_plan& shape = plan.shape;
  plan.copy.bytes = shape.bytes;
  const bool local = plan.copy.path == copy_path::local;
  if ((plan.copy.path != copy_path::direct && !local) || shape.empty()) return plan;
  if (local) {
    // One device: the copy engine moves narrow rows one by one, the SM kernel does not.
    if (!shape.contiguous() && sm_strided_takes(shape, limits.sm_strided_max, limits)) {
      plan.copy.path = copy_path::local_sm;
      plan.copy.sm_blocks = static_cast<unsigned>(
          std::min<std::size_t>(limits.sm_blocks, blocks_for(shape.bytes, limits)));
    }
    return plan;
  }
  if (shape.contiguous()) {
    // One run: exactly the contiguous copy's choice.
    plan.copy = plan_copy_peer(own, shape.dst_at(0, 0), dst_dev, shape.src_at(0, 0), src_dev,
                               shape.bytes, limits);
    return plan;
  }
  if (sm_strided_takes(shape, limits.sm_strided_max, limits)) {
    plan.copy.path = copy_path::direct_sm;
    plan.copy.sm_blocks = static_cast<unsigned>(
        std::min<std::size_t>(limits.sm_blocks, blocks_for(shape.bytes, limits)));
  }
  return plan;
}

strided_batch_plan plan_copy_peer_batch(int own, device dst_dev, device src_dev,
                                        const strided_piece* pieces, std::size_t count,
                                        const peer_limits& limits) {
  constexpr const char* api = "sluice::copy_peer_batch";
  if (pieces == nullptr && count > 0)
    fail(errc::invalid_argument, api, "pieces is null with a count of ", count);
  strided_batch_plan plan;
  copy_path path =
      checked_path(own, nullptr, dst_dev, nullptr, src_dev, 0, limits.only_sluice_memory);
  const bool sm = limits.sm_batch_max > 0 && limits.sm_blocks > 0;
  std::vector<bool> small;  // of each kept piece: the strided SM kernel takes it
  struct end_ref {
    const strided_end* end;
    extent shape;
    std::size_t piece;  // its number in `pieces`
    std::size_t kept;   // its number in plan.pieces
    bool written;
  };
  std::vector<std::size_t> index;  // piece number of each kept plan
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    strided_plan shape;
    try {
      path = checked_strided(own, pieces[i].dst, dst_dev, pieces[i].src, src_dev, pieces[i].shape,
                             limits, &shape);
    } catch (const error& e) {
      fail(e.code(), api, "piece ", i, ": ", e.what());
    }
    if (shape.empty()) continue;
    if (total > SIZE_MAX - shape.bytes)
      fail(errc::invalid_argument, api, "the pieces' sizes overflow std::size_t");
    total += shape.bytes;
    small.push_back(sm && sm_strided_takes(shape, limits.sm_batch_max, limits));
    plan.pieces.push_back(shape);
    index.push_back(i);
  }
  // No piece may write bytes another reads or writes (they run in no
  // particular order). Sorted by start, each footprint is compared with the
  // earlier ones that still reach it; where two meet, the columns or else the
  // runs themselves tell whether they share a byte.
  std::vector<end_ref> ends;
  ends.reserve(plan.pieces.size() * 2);
  for (std::size_t k = 0; k < plan.pieces.size(); ++k) {
    const extent e = pieces[index[k]].shape;
    ends.push_back({&plan.pieces[k].dst, e, index[k], k, true});
    ends.push_back({&plan.pieces[k].src, e, index[k], k, false});
  }
  std::sort(ends.begin(), ends.end(),
            [](const end_ref& a, const end_ref& b) { return a.end->address < b.end->address; });
  std::vector<const end_ref*> reaching;
  for (const end_ref& r : ends) {
    std::size_t kept = 0;
    for (const end_ref* q : reaching) {
      if (r.end->address - q->end->address >= q->end->footprint) continue;  // ends before r
      reaching[kept++] = q;
      if (q->piece == r.piece || !(q->written || r.written)) continue;
      if (!strided_overlap_allowed(*q->end, q->shape, *r.end, r.shape) &&
          share_bytes(plan.pieces[q->kept], q->written, plan.pieces[r.kept], r.written))
        fail(errc::invalid_argument, api, "piece ", std::min(q->piece, r.piece), " and piece ",
             std::max(q->piece, r.piece), " overlap where ",
             q->written && r.written ? "both write" : "one writes and the other reads",
             " (the pieces of a batch run in no particular order)");
    }
    reaching.resize(kept);
    reaching.push_back(&r);
  }
  plan.copy.bytes = total;
  plan.copy.path = path;
  if (total == 0 || (path != copy_path::local && path != copy_path::direct)) return plan;
  plan.sm_pieces = static_cast<std::size_t>(std::count(small.begin(), small.end(), true));
  if (plan.sm_pieces == 0) return plan;
  plan.copy.sm_blocks = limits.sm_blocks;
  if (plan.sm_pieces == plan.pieces.size()) {
    plan.copy.path = path == copy_path::local ? copy_path::local_sm : copy_path::direct_sm;
    return plan;
  }
  // The pieces run in no particular order: those the kernel takes go first, in one group.
  std::vector<strided_plan> ordered;
  ordered.reserve(plan.pieces.size());
  for (const bool by_kernel : {true, false})
    for (std::size_t k = 0; k < plan.pieces.size(); ++k)
      if (small[k] == by_kernel) ordered.push_back(plan.pieces[k]);
  plan.pieces = std::move(ordered);
  return plan;
}

copy_plan plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes, const peer_limits& limits) {
  copy_plan plan;
  plan.bytes = bytes;
  plan.path = checked_path(own, dst, dst_dev, src, src_dev, bytes, limits.only_sluice_memory);
  // Small and aligned, over the link: the SM copy kernel on the stream's
  // device (a push from the source, a pull from the destination).
  const std::size_t sm_max = own == src_dev.id() ? limits.sm_push_max : limits.sm_pull_max;
  if (plan.path == copy_path::direct && bytes > 0 && bytes <= sm_max && limits.sm_blocks > 0 &&
      aligned(dst, limits) && aligned(src, limits)) {
    plan.path = copy_path::direct_sm;
    plan.sm_blocks =
        static_cast<unsigned>(std::min<std::size_t>(limits.sm_blocks, blocks_for(bytes, limits)));
  }
  return plan;
}

unsigned sm_batch_blocks(std::size_t largest, unsigned pieces, const peer_limits& limits) noexcept {
  return static_cast<unsigned>(std::clamp<std::size_t>(
      blocks_for(largest, limits), 1, std::max(1U, limits.sm_blocks / std::max(1U, pieces))));
}

copy_plan plan_copy_peer_batch(int own, device dst_dev, device src_dev, const peer_piece* pieces,
                               std::size_t count, const peer_limits& limits) {
  constexpr const char* api = "sluice::copy_peer_batch";
  if (pieces == nullptr && count > 0)
    fail(errc::invalid_argument, api, "pieces is null with a count of ", count);
  const bool only = limits.only_sluice_memory;
  copy_path path = checked_path(own, nullptr, dst_dev, nullptr, src_dev, 0, only);
  bool small = limits.sm_batch_max > 0 && limits.sm_blocks > 0;
  struct range {
    std::uintptr_t begin, end;
    std::size_t piece;
    bool written;
  };
  std::vector<range> ranges;
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const peer_piece& p = pieces[i];
    if (p.bytes == 0) continue;
    try {
      path = checked_path(own, p.dst, dst_dev, p.src, src_dev, p.bytes, only);
    } catch (const error& e) {
      fail(e.code(), api, "piece ", i, ": ", e.what());
    }
    if (total > SIZE_MAX - p.bytes)
      fail(errc::invalid_argument, api, "the pieces' sizes overflow std::size_t");
    total += p.bytes;
    small =
        small && p.bytes <= limits.sm_batch_max && aligned(p.dst, limits) && aligned(p.src, limits);
    const auto d = reinterpret_cast<std::uintptr_t>(p.dst);
    const auto s = reinterpret_cast<std::uintptr_t>(p.src);
    ranges.push_back({d, d + p.bytes, i, true});
    ranges.push_back({s, s + p.bytes, i, false});
  }
  // The pieces run in no particular order: a range written by one piece must
  // not meet a range another piece reads or writes. Sorted by start, a range
  // overlaps an earlier one exactly when it starts before the largest end so
  // far: of the written ranges for a read, of all ranges for a write.
  std::sort(ranges.begin(), ranges.end(),
            [](const range& a, const range& b) { return a.begin < b.begin; });
  const range* furthest = nullptr;          // the earlier range that ends last
  const range* furthest_written = nullptr;  // the earlier written range that ends last
  for (const range& r : ranges) {
    const range* hit = r.written ? furthest : furthest_written;
    if (hit != nullptr && r.begin < hit->end && hit->piece != r.piece)
      fail(errc::invalid_argument, api, "piece ", std::min(hit->piece, r.piece), " and piece ",
           std::max(hit->piece, r.piece), " overlap where ",
           hit->written && r.written ? "both write" : "one writes and the other reads",
           " (the pieces of a batch run in no particular order)");
    if (furthest == nullptr || r.end > furthest->end) furthest = &r;
    if (r.written && (furthest_written == nullptr || r.end > furthest_written->end))
      furthest_written = &r;
  }
  copy_plan plan;
  plan.bytes = total;
  plan.path = path;
  // Every piece small and aligned: the SM kernel, sm_batch_pieces per launch.
  // Within one device too: the vendor's batched copy of 64 x 16 KiB took 220.5
  // us on one H200, the kernel 10.9
  // (docs/results/runs/2026-11-25-batched-copies-one-h200.md).
  if (small && total > 0) {
    if (path == copy_path::local) plan.path = copy_path::local_sm;
    if (path == copy_path::direct) plan.path = copy_path::direct_sm;
    if (plan.path != path) plan.sm_blocks = limits.sm_blocks;
  }
  return plan;
}

}  // namespace sluice::detail
