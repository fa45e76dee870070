// Strided copies on the GPU backend: copy(s, pitched dst, pitched src, extent) and the strided
// copy_peer and copy_peer_batch. src/strided and src/peer_plan check and normalize each copy
// and choose its path; this file carries it out through the traits (docs/design.md, "Strided
// copies", and docs/vendor-differences.md section 26 say which case takes which path on CUDA
// and on HIP):
// - one run after normalizing: the contiguous copy (memory.cpp, peer.cpp), whose rules and
//   paths it then has;
// - within one device or between host and device: the vendor's 2-D copy (one plane, or planes
//   of one row each) or 3-D copy;
// - both ends pinned host memory (sluice's or registered): a host task, as memory.cpp's copy
//   between pinned buffers;
// - direct_sm / local_sm (small, aligned: the plan's choice): sluice's strided SM kernel, a
//   batch's pieces in launches of sm_copy::strided_pieces, no pack buffer;
// - direct: the vendor's 3-D peer copy (CUDA), else (HIP 5.2 has none) one peer copy per row;
// - staged: sluice's staged pipeline (staging.cpp), bands of rows by 2-D copies.
// A footprint partly inside a registration goes run by run, each split at the registration's end.
// A shape the vendor's strided copies cannot take (a pitch above the device's maximum, or, on
// HIP, a size above 32 bits) goes row by row.
#include "strided.hpp"

#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "memory_state.hpp"
#include "peer_copy.hpp"
#include "peer_plan.hpp"
#include "settings.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"

#include <sluice/detail/host_task.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

namespace sluice {

using detail::engine;

namespace detail {
namespace {

//! The plan's shape as the vendor's strided copies take it: `depth` planes of `height` rows
//! of `width` bytes, pitches and rows per plane for each end.
struct vendor_shape {
  std::size_t width = 0, height = 1, depth = 1;
  std::size_t dst_pitch = 0, dst_rows = 1, src_pitch = 0, src_rows = 1;
};

//! False when the vendor cannot take it (then: row by row).
bool as_vendor_shape(const strided_plan& p, std::size_t max_pitch, vendor_shape* v) {
  v->width = p.width;
  if (p.planes == 1 || p.rows == 1) {
    // One plane, or planes of one row each: a 2-D shape.
    const bool planes = p.rows == 1;
    v->height = planes ? p.planes : p.rows;
    v->dst_pitch = planes ? p.dst.plane_step : p.dst.row_step;
    v->src_pitch = planes ? p.src.plane_step : p.src.row_step;
    v->dst_rows = v->src_rows = v->height;
  } else {
    if (p.dst.plane_step % p.dst.row_step != 0 || p.src.plane_step % p.src.row_step != 0)
      return false;
    v->height = p.rows;
    v->depth = p.planes;
    v->dst_pitch = p.dst.row_step;
    v->src_pitch = p.src.row_step;
    v->dst_rows = p.dst.plane_step / p.dst.row_step;
    v->src_rows = p.src.plane_step / p.src.row_step;
  }
  const std::size_t limit = std::min(max_pitch, api::strided_field_max);
  return v->dst_pitch <= limit && v->src_pitch <= limit && v->width <= api::strided_field_max &&
         v->height <= api::strided_field_max && v->depth <= api::strided_field_max &&
         v->dst_rows <= api::strided_field_max && v->src_rows <= api::strided_field_max;
}

//! What the trace shows as the path of a strided copy that has no copy_path.
const char* vendor_strided(const strided_plan& p, const device_state& dev, api::stream_t s,
                           const char* api_name, const void* site) {
  vendor_shape v;
  if (!as_vendor_shape(p, dev.max_pitch, &v)) {
    diagnose::note_strided_rows(site, p.bytes, p.rows * p.planes,
                                "a pitch or size beyond what the vendor's strided copies take");
    for (std::size_t z = 0; z < p.planes; ++z)
      for (std::size_t y = 0; y < p.rows; ++y)
        check(api::memcpy_async(p.dst_at(y, z), p.src_at(y, z), p.width, s), api_name, ": ",
              p.bytes, " bytes, row by row, on a stream of device ", dev.id);
    return "rows";
  }
  if (v.depth == 1) {
    check(api::memcpy_2d_async(p.dst_at(0, 0), v.dst_pitch, p.src_at(0, 0), v.src_pitch, v.width,
                               v.height, s),
          api_name, ": ", v.height, " rows of ", v.width, " bytes on a stream of device ", dev.id);
    return "2d";
  }
  check(api::memcpy_3d_async(p.dst_at(0, 0), v.dst_pitch, v.dst_rows, p.src_at(0, 0), v.src_pitch,
                             v.src_rows, v.width, v.height, v.depth, s),
        api_name, ": ", v.depth, " planes of ", v.height, " rows of ", v.width,
        " bytes on a stream of device ", dev.id);
  return "3d";
}

//! A footprint partly inside a registration, which the vendor refuses when it starts in
//! registered pages and runs past them: run by run, each split where the registration ends
//! (memory.cpp). Traced with the path the vendor's strided copy would have had.
const char* strided_split_at_registrations(stream_state& st, const strided_plan& p,
                                           const device_state& dev, const char* api_name,
                                           const void* site) {
  for (std::size_t z = 0; z < p.planes; ++z)
    for (std::size_t y = 0; y < p.rows; ++y)
      copy_split_at_registrations(st, p.dst_at(y, z), p.src_at(y, z), p.width, api_name);
  vendor_shape v;
  if (as_vendor_shape(p, dev.max_pitch, &v)) return v.depth == 1 ? "2d" : "3d";
  diagnose::note_strided_rows(site, p.bytes, p.rows * p.planes,
                              "a pitch or size beyond what the vendor's strided copies take");
  return "rows";
}

//! Between two devices with peer access: the vendor's 3-D peer copy, else a peer copy per row.
void vendor_strided_peer(const strided_plan& p, const device_state& dev, int dst_dev, int src_dev,
                         api::stream_t s, const char* api_name, const void* site) {
  vendor_shape v;
  if (api::has_3d_peer_copy && as_vendor_shape(p, dev.max_pitch, &v)) {
    check(
        api::memcpy_3d_peer_async(p.dst_at(0, 0), dst_dev, v.dst_pitch, v.dst_rows, p.src_at(0, 0),
                                  src_dev, v.src_pitch, v.src_rows, v.width, v.height, v.depth, s),
        api_name, ": ", p.bytes, " bytes from device ", src_dev, " to device ", dst_dev,
        " (direct)");
    return;
  }
  diagnose::note_strided_rows(site, p.bytes, p.rows * p.planes,
                              api::has_3d_peer_copy
                                  ? "a pitch or size beyond what the vendor's 3-D peer copy takes"
                                  : "the vendor has no 3-D peer copy");
  for (std::size_t z = 0; z < p.planes; ++z)
    for (std::size_t y = 0; y < p.rows; ++y)
      check(api::memcpy_peer_async(p.dst_at(y, z), dst_dev, p.src_at(y, z), src_dev, p.width, s),
            api_name, ": ", p.bytes, " bytes, row by row, from device ", src_dev, " to device ",
            dst_dev, " (direct)");
}

//! SLUICE_PEER_SM_STRIDED_MAX_KIB, default api::peer_sm_strided_default_kib (tuning/): read by
//! the first strided copy_peer (a bad value: each one throws), not by contiguous ones.
std::size_t sm_strided_limit() {
  static const std::size_t bytes =
      std::size_t{1024} *
      static_cast<std::size_t>(settings::peer_sm_strided_max_kib(api::peer_sm_strided_default_kib));
  return bytes;
}

//! The peer limits of a strided copy on `dev`: the contiguous ones, with the strided SM kernel's
//! size limit and its narrow rows (none where SLUICE_PEER_SM_STRIDED_MAX_KIB is 0: never).
peer_limits strided_limits(const device_state& dev, bool batch) {
  peer_limits l = peer_limits_of(dev, batch);
  l.sm_strided_max = sm_strided_limit();
  l.sm_strided_narrow_row = l.sm_strided_max > 0 ? api::peer_sm_strided_narrow_row_bytes : 0;
  return l;
}

sm_copy::strided_piece sm_piece(const strided_plan& p) {
  sm_copy::strided_piece k{p.dst_at(0, 0),
                           p.src_at(0, 0),
                           p.dst.row_step,
                           p.src.row_step,
                           p.dst.plane_step,
                           p.src.plane_step,
                           static_cast<std::uint32_t>(p.width),
                           static_cast<std::uint32_t>(p.rows),
                           static_cast<std::uint32_t>(p.planes),
                           1};
  k.unit = sm_copy::strided_unit(k);
  return k;
}

//! The pieces in launches of at most sm_copy::strided_pieces (the plan chose the SM kernel:
//! each piece small, so its units fit 32 bits).
void sm_strided(const strided_plan* pieces, std::size_t count, const peer_limits& limits,
                api::stream_t s, const char* api_name, int dst_dev, int src_dev, copy_path path) {
  std::vector<sm_copy::strided_piece> group;
  group.reserve(std::min<std::size_t>(count, sm_copy::strided_pieces));
  std::size_t largest = 0;
  const auto launch = [&] {
    const auto n = static_cast<unsigned>(group.size());
    const unsigned blocks = sm_batch_blocks(largest, n, limits);
    check(api::sm_copy_strided(group.data(), n, s, blocks), api_name, ": ", n,
          " strided pieces from device ", src_dev, " to device ", dst_dev, " (", to_string(path),
          ")");
    group.clear();
    largest = 0;
  };
  for (std::size_t i = 0; i < count; ++i) {
    group.push_back(sm_piece(pieces[i]));
    largest = std::max(largest, pieces[i].bytes);
    if (group.size() == sm_copy::strided_pieces) launch();
  }
  if (!group.empty()) launch();
}

//! A strided copy() that the strided SM kernel moves: both ends memory of the stream's device,
//! and a shape the kernel takes (peer_plan.hpp sm_strided_takes: the copy engine moves narrow
//! rows one by one).
bool small_device_face(const strided_plan& p, const device_state& dev, const peer_limits& l,
                       int dst_device, int src_device) {
  return dst_device == dev.id && src_device == dev.id && sm_strided_takes(p, l.sm_strided_max, l);
}

//! Without peer access: sluice's staged pipeline, bands of rows by 2-D copies (staging.cpp).
void staged_strided(stream_state& st, int dst_dev, int src_dev,
                    const std::vector<strided_plan>& pieces, const char* api_name) {
  staged_copy_strided(st, dst_dev, src_dev, pieces.data(), pieces.size(), api_name);
}

//! Pageable for sluice (not wholly registered) while it starts in registered pages, which the
//! vendor takes as pinned: the call waits for the copy (MEM-3, MEM-8).
bool partly_registered(const strided_end& e) {
  return e.pageable() &&
         registrations().find(reinterpret_cast<const void*>(e.address), e.footprint).owner !=
             nullptr;
}

bool pinned_host(const strided_end& e) {
  const auto* a = static_cast<const allocation*>(e.memory.owner);
  return e.registered || (a != nullptr && a->device < 0);
}

//! Pageable for SLUICE_DIAGNOSE: neither sluice memory nor wholly registered, and either
//! partly registered or pageable as the vendor says.
bool diagnosed_pageable(const strided_end& e) {
  if (!e.pageable()) return false;
  const void* p = reinterpret_cast<const void*>(e.address);
  if (registrations().find(p, e.footprint).owner != nullptr) return true;
  bool pageable = false;
  (void)api::is_pageable(p, &pageable);
  api::clear_last_error();
  return pageable;
}

}  // namespace
}  // namespace detail

void copy(stream_ref s, pitched_ptr dst, const_pitched_ptr src, extent e) {
  constexpr const char* api = "sluice::copy";
  auto& st = detail::checked(s, api);
  const detail::strided_plan p = detail::plan_strided_copy(dst, src, e, api);
  if (p.empty()) return;
  if (p.contiguous()) {  // one run: the contiguous copy, its checks passed already
    copy(s, p.dst_at(0, 0), p.src_at(0, 0), p.bytes);
    return;
  }
  const auto device_of = [](const detail::strided_end& end) {
    const auto* a = static_cast<const detail::allocation*>(end.memory.owner);
    return a != nullptr ? a->device : -1;
  };
  detail::check_copy_devices(st.device, device_of(p.dst), device_of(p.src), api);
  if (p.dst.pageable()) detail::wait_until_unregistered(p.dst.first, p.dst.footprint, api);
  if (p.src.pageable()) detail::wait_until_unregistered(p.src.first, p.src.footprint, api);
  if (detail::any_capture() &&
      detail::record_strided_copy_if_capturing(
          st, dst, src, e, p,
          detail::diagnosed_pageable(p.dst) || detail::diagnosed_pageable(p.src))) [[unlikely]]
    return;
  if (detail::diagnose::enabled()) [[unlikely]]
    detail::diagnose::note_pageable_copy(SLUICE_CALL_SITE(), p.bytes,
                                         detail::diagnosed_pageable(p.dst),
                                         detail::diagnosed_pageable(p.src));
  if (p.dst.pageable() && detail::current_host_function_stream() == &st) [[unlikely]] {
    bool pageable = false;  // a pageable destination waits for the copy (MEM-3)
    (void)gpu::api::is_pageable(p.dst_at(0, 0), &pageable);
    gpu::api::clear_last_error();
    if (pageable) detail::check_not_self_wait(st, UINT32_MAX, api);
  }
  const bool partly = detail::partly_registered(p.dst) || detail::partly_registered(p.src);
  if (partly) [[unlikely]]
    detail::check_not_self_wait(st, UINT32_MAX, api);
  if (detail::pinned_host(p.dst) && detail::pinned_host(p.src)) [[unlikely]] {
    // Host memory at both ends: a host task, never the vendor's host-to-host copy on the calling
    // thread (memory.cpp's copy_on_host says why).
    auto task = detail::make_host_task([p] {
      for (std::size_t z = 0; z < p.planes; ++z)
        for (std::size_t y = 0; y < p.rows; ++y)
          std::memmove(p.dst_at(y, z), p.src_at(y, z), p.width);
    });
    if (detail::trace::enabled()) [[unlikely]]
      task = detail::traced_host_task(st, std::move(task), "copy", p.bytes, "host");
    detail::diagnose::note_host_copy(SLUICE_CALL_SITE(), p.bytes);
    detail::enqueue_host(st, std::move(task), api);
    return;
  }
  auto& dev = engine().devices[static_cast<std::size_t>(st.device)];
  detail::enqueue_scope<detail::device_current> scope(st, "copy", p.bytes);
  const char* how = nullptr;
  const auto limits = detail::strided_limits(dev, false);
  if (detail::small_device_face(p, dev, limits, device_of(p.dst), device_of(p.src))) {
    // A small face between buffers of the stream's device: the strided SM kernel, as a local
    // strided copy_peer batch would run it.
    detail::sm_strided(&p, 1, limits, st.native, api, st.device, st.device, copy_path::local_sm);
    how = "local_sm";
  } else if (partly) [[unlikely]] {
    how = detail::strided_split_at_registrations(st, p, dev, api, SLUICE_CALL_SITE());
  } else {
    how = detail::vendor_strided(p, dev, st.native, api, SLUICE_CALL_SITE());
  }
  if (detail::trace::enabled()) [[unlikely]]
    scope.path(how);
  scope.done();
  if (partly) [[unlikely]]
    detail::check(gpu::api::stream_synchronize(st.native), api, ": waiting for a copy of ", p.bytes,
                  " bytes partly inside registered host memory");
}

copy_path copy_peer(stream_ref s, pitched_ptr dst, sluice::device dst_dev, const_pitched_ptr src,
                    sluice::device src_dev, extent e) {
  constexpr const char* api = "sluice::copy_peer";
  auto& st = detail::checked(s, api);
  const int own = st.device;
  auto& dev = engine().devices[static_cast<std::size_t>(own)];
  const auto limits = detail::strided_limits(dev, false);
  const auto plan = detail::plan_copy_peer(own, dst, dst_dev, src, src_dev, e, limits);
  const copy_path path = plan.copy.path;
  const detail::strided_plan& p = plan.shape;
  if (p.empty()) return path;
  if (p.contiguous())  // one run: the contiguous copy_peer and its choice of path
    return copy_peer(s, p.dst_at(0, 0), dst_dev, p.src_at(0, 0), src_dev, p.bytes);
  if (detail::any_capture() &&
      detail::record_copy_peer_if_capturing(st, dst, dst_dev, src, src_dev, e, plan, limits,
                                            SLUICE_CALL_SITE())) [[unlikely]]
    return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(), p.bytes,
                                   to_string(path), gpu::api::peer_push_preferred, st.trace.id);
  detail::enqueue_strided_peer(st, dst_dev, src_dev, plan, limits, api, SLUICE_CALL_SITE());
  return path;
}

void detail::enqueue_strided_peer(stream_state& st, sluice::device dst_dev, sluice::device src_dev,
                                  const strided_peer_plan& plan, const peer_limits& limits,
                                  const char* api, const void* site) {
  const copy_path path = plan.copy.path;
  const detail::strided_plan& p = plan.shape;
  auto& dev = engine().devices[static_cast<std::size_t>(st.device)];
  detail::enqueue_scope<detail::device_current> scope(st, "copy_peer", p.bytes);
  if (detail::trace::enabled()) [[unlikely]]
    scope.path(to_string(path));
  if (path == copy_path::direct_sm || path == copy_path::local_sm) {
    detail::sm_strided(&p, 1, limits, st.native, api, dst_dev.id(), src_dev.id(), path);
  } else if (path == copy_path::local) {
    (void)detail::vendor_strided(p, dev, st.native, api, site);
  } else if (path == copy_path::staged) {
    detail::staged_strided(st, dst_dev.id(), src_dev.id(), {p}, api);
  } else {
    detail::vendor_strided_peer(p, dev, dst_dev.id(), src_dev.id(), st.native, api, site);
  }
  scope.done();
}

copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const strided_piece* pieces, std::size_t count) {
  constexpr const char* api = "sluice::copy_peer_batch";
  auto& st = detail::checked(s, api);
  const int own = st.device;
  auto& dev = engine().devices[static_cast<std::size_t>(own)];
  const auto limits = detail::strided_limits(dev, true);
  const auto plan = detail::plan_copy_peer_batch(own, dst_dev, src_dev, pieces, count, limits);
  const copy_path path = plan.copy.path;
  if (plan.copy.bytes == 0) return path;
  if (detail::any_capture() &&
      detail::record_peer_batch_if_capturing(st, dst_dev, src_dev, pieces, count, plan, limits,
                                             SLUICE_CALL_SITE())) [[unlikely]]
    return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(),
                                   plan.copy.bytes, to_string(path), gpu::api::peer_push_preferred,
                                   st.trace.id);
  detail::enqueue_strided_peer_batch(st, dst_dev, src_dev, plan, limits, api, SLUICE_CALL_SITE());
  return path;
}

void detail::enqueue_strided_peer_batch(stream_state& st, sluice::device dst_dev,
                                        sluice::device src_dev, const strided_batch_plan& plan,
                                        const peer_limits& limits, const char* api,
                                        const void* site) {
  const copy_path path = plan.copy.path;
  auto& dev = engine().devices[static_cast<std::size_t>(st.device)];
  detail::enqueue_scope<detail::device_current> scope(st, "copy_peer_batch", plan.copy.bytes);
  const std::size_t sm = plan.sm_pieces;
  const bool mixed = sm > 0 && sm < plan.pieces.size();
  // A mixed batch reports the copy engine's path; the trace names both.
  scope.path(!mixed                     ? to_string(path)
             : path == copy_path::local ? "local_sm+local"
                                        : "direct_sm+direct");
  if (path == copy_path::staged) {
    detail::staged_strided(st, dst_dev.id(), src_dev.id(), plan.pieces, api);
  } else {
    // The first sm pieces by the kernel (every piece when the path is local_sm or direct_sm),
    // the rest by the copy engine.
    if (sm > 0)
      detail::sm_strided(plan.pieces.data(), sm, limits, st.native, api, dst_dev.id(), src_dev.id(),
                         path == copy_path::local || path == copy_path::local_sm
                             ? copy_path::local_sm
                             : copy_path::direct_sm);
    for (std::size_t k = sm; k < plan.pieces.size(); ++k) {
      const detail::strided_plan& p = plan.pieces[k];
      if (path == copy_path::local)
        (void)detail::vendor_strided(p, dev, st.native, api, site);
      else if (p.contiguous())
        detail::check(gpu::api::memcpy_peer_async(p.dst_at(0, 0), dst_dev.id(), p.src_at(0, 0),
                                                  src_dev.id(), p.bytes, st.native),
                      api, ": ", p.bytes, " bytes from device ", src_dev.id(), " to device ",
                      dst_dev.id(), " (direct)");
      else
        detail::vendor_strided_peer(p, dev, dst_dev.id(), src_dev.id(), st.native, api, site);
    }
  }
  scope.done();
}

}  // namespace sluice
