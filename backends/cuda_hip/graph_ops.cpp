// The copies and fills of a capturing stream on the GPU backends (graph.hpp):
// after their checks, each records a call that makes the same operation on a
// lane at every launch, with the ranges it touches. Host memory that sluice
// takes as pageable is refused here: such a copy or fill completes (or
// snapshots its source) during the call, which a graph cannot do.
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "peer_copy.hpp"
#include "range_map.hpp"
#include "sm_copy.hpp"
#include "strided.hpp"
#include "vendor.hpp"

#include <sluice/memory.hpp>
#include <sluice/peer.hpp>

namespace sluice::detail {

namespace {

//! Pageable for sluice: neither sluice memory nor wholly registered, and
//! either partly registered (MEM-8) or pageable as the vendor says.
bool pageable(const void* p, std::size_t n) {
  if (allocations().find(p, n).owner != nullptr) return false;
  const range_lookup reg = registrations().find(p, n);
  if (reg.owner != nullptr) return reg.overrun;
  bool yes = false;
  (void)api::is_pageable(p, &yes);
  api::clear_last_error();
  return yes;
}

recorded_call call_of(vertex_kind kind, std::size_t bytes, replay_call f) {
  recorded_call c;
  c.kind = kind;
  c.bytes = bytes;
  c.call = std::move(f);
  return c;
}

//! Whether [p, p + n) lies in memory that sluice allocated on `device`.
bool on_device(const void* p, std::size_t n, int device) {
  const void* owner = allocations().find(p, n).owner;
  return owner != nullptr && allocation_device(static_cast<const allocation*>(owner)) == device;
}

//! In a vendor graph, a fill (src null) or copy of at most
//! sm_copy::graph_kernel_max_bytes within the lane's device's memory is one
//! of sluice's kernels, not the vendor's memset or memcpy node: CUDA's
//! launch of a graph costs the calling thread far more per memset or memcpy
//! node than per kernel node. True when made so.
bool as_kernel_node(const replay_site& at, void* dst, const void* src, unsigned char value,
                    std::size_t bytes) {
  if (!at.native_build || bytes == 0 || bytes > sm_copy::graph_kernel_max_bytes) return false;
  stream_state& lane = *access::state(at.lane);
  if (!on_device(dst, bytes, lane.device) ||
      (src != nullptr && !on_device(src, bytes, lane.device)))
    return false;
  enqueue_scope<device_current> scope(lane, src == nullptr ? "fill" : "copy", bytes);
  if (src == nullptr)
    check(api::graph_fill_kernel(dst, value, bytes, lane.native), "sluice::graph::instantiate");
  else
    check(api::graph_copy_kernel(dst, src, bytes, lane.native), "sluice::graph::instantiate");
  scope.done();
  return true;
}

void add_footprints(recorded_call& c, const strided_plan& p) {
  c.memory.emplace_back(p.dst.first, p.dst.footprint);
  c.memory.emplace_back(p.src.first, p.src.footprint);
}

}  // namespace

bool record_copy_if_capturing(stream_state& st, void* dst, const void* src, std::size_t bytes) {
  if (!capturing(st)) return false;
  constexpr const char* api_name = "sluice::copy";
  if (pageable(dst, bytes) || pageable(src, bytes))
    reject_in_capture(api_name, "a copy touching pageable host memory in a capture");
  auto c = call_of(vertex_kind::copy, bytes, [dst, src, bytes](const replay_site& at) {
    if (!as_kernel_node(at, dst, src, 0, bytes)) sluice::copy(at.lane, dst, src, bytes);
  });
  c.memory = {{dst, bytes}, {src, bytes}};
  return record_if_capturing(st, std::move(c));
}

bool record_fill_if_capturing(stream_state& st, void* dst, unsigned char value, std::size_t bytes) {
  if (!capturing(st)) return false;
  if (pageable(dst, bytes))
    reject_in_capture("sluice::fill", "a fill of pageable host memory in a capture");
  auto c = call_of(vertex_kind::fill, bytes, [dst, value, bytes](const replay_site& at) {
    if (!as_kernel_node(at, dst, nullptr, value, bytes)) sluice::fill(at.lane, dst, value, bytes);
  });
  c.memory = {{dst, bytes}};
  return record_if_capturing(st, std::move(c));
}

bool record_strided_copy_if_capturing(stream_state& st, pitched_ptr dst, const_pitched_ptr src,
                                      extent e, const strided_plan& p, bool touches_pageable) {
  if (!capturing(st)) return false;
  if (touches_pageable)
    reject_in_capture("sluice::copy", "a copy touching pageable host memory in a capture");
  auto c = call_of(vertex_kind::copy, p.bytes,
                   [dst, src, e](const replay_site& at) { sluice::copy(at.lane, dst, src, e); });
  add_footprints(c, p);
  return record_if_capturing(st, std::move(c));
}

bool record_copy_peer_if_capturing(stream_state& st, void* dst, device dst_dev, const void* src,
                                   device src_dev, std::size_t bytes, const copy_plan& plan) {
  if (!capturing(st)) return false;
  auto c = call_of(vertex_kind::copy_peer, bytes, [=](const replay_site& at) {
    enqueue_copy_peer(*access::state(at.lane), dst, dst_dev, src, src_dev, bytes, plan,
                      "sluice::graph_exec::launch");
  });
  c.path = to_string(plan.path);
  c.memory = {{dst, bytes}, {src, bytes}};
  return record_if_capturing(st, std::move(c));
}

bool record_copy_peer_if_capturing(stream_state& st, pitched_ptr, device dst_dev, const_pitched_ptr,
                                   device src_dev, extent, const strided_peer_plan& plan,
                                   const peer_limits& limits, const void* site) {
  if (!capturing(st)) return false;
  auto c = call_of(vertex_kind::copy_peer, plan.shape.bytes, [=](const replay_site& at) {
    enqueue_strided_peer(*access::state(at.lane), dst_dev, src_dev, plan, limits,
                         "sluice::graph_exec::launch", site);
  });
  c.path = to_string(plan.copy.path);
  add_footprints(c, plan.shape);
  return record_if_capturing(st, std::move(c));
}

bool record_peer_batch_if_capturing(stream_state& st, device dst_dev, device src_dev,
                                    const peer_piece* pieces, std::size_t count,
                                    const copy_plan& plan, const peer_limits& limits) {
  if (!capturing(st)) return false;
  std::vector<peer_piece> kept(pieces, pieces + count);
  recorded_call c;
  c.kind = vertex_kind::copy_peer_batch;
  c.bytes = plan.bytes;
  c.path = to_string(plan.path);
  for (const peer_piece& piece : kept)
    if (piece.bytes > 0) {
      c.memory.emplace_back(piece.dst, piece.bytes);
      c.memory.emplace_back(piece.src, piece.bytes);
    }
  c.call = [kept = std::move(kept), dst_dev, src_dev, plan, limits](const replay_site& at) {
    enqueue_copy_peer_batch(*access::state(at.lane), dst_dev, src_dev, kept.data(), kept.size(),
                            plan, limits, "sluice::graph_exec::launch");
  };
  return record_if_capturing(st, std::move(c));
}

bool record_peer_batch_if_capturing(stream_state& st, device dst_dev, device src_dev,
                                    const strided_piece*, std::size_t,
                                    const strided_batch_plan& plan, const peer_limits& limits,
                                    const void* site) {
  if (!capturing(st)) return false;
  recorded_call c;
  c.kind = vertex_kind::copy_peer_batch;
  c.bytes = plan.copy.bytes;
  c.path = to_string(plan.copy.path);
  for (const strided_plan& p : plan.pieces) add_footprints(c, p);
  c.call = [dst_dev, src_dev, plan, limits, site](const replay_site& at) {
    enqueue_strided_peer_batch(*access::state(at.lane), dst_dev, src_dev, plan, limits,
                               "sluice::graph_exec::launch", site);
  };
  return record_if_capturing(st, std::move(c));
}

}  // namespace sluice::detail
