// Peers on the GPU backend: link queries, peer access (idempotent, also over
// sluice's memory pools), and copy_peer with the path it took.
#include "diagnose.hpp"
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "peer_access.hpp"
#include "peer_copy.hpp"
#include "peer_plan.hpp"
#include "settings.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"

#include <algorithm>
#include <cstdint>

namespace sluice {

using detail::engine;

namespace detail {

const sm_copy_limits& sm_copy_limit() {
  static const sm_copy_limits limits = [] {
    const int both = settings::peer_sm_max_kib();  // -1: unset
    const auto kib = [](int n) { return std::size_t{1024} * static_cast<std::size_t>(n); };
    // Push first, then pull (a braced list runs in order): the first bad one throws.
    return sm_copy_limits{
        kib(settings::peer_sm_push_max_kib(both >= 0 ? both : gpu::api::peer_sm_push_default_kib)),
        kib(settings::peer_sm_pull_max_kib(both >= 0 ? both : gpu::api::peer_sm_pull_default_kib))};
  }();
  return limits;
}

peer_limits peer_limits_of(const device_state& d, bool batch) {
  peer_limits l;
  l.sm_blocks = d.sm_blocks;
  l.sm_alignment = sm_copy::alignment;
  l.sm_block_bytes = std::size_t{sm_copy::threads} * sm_copy::alignment;
  l.sm_batch_pieces = sm_copy::batch_pieces;
  // The variables are read (and checked) by each call that uses them.
  if (batch) {
    l.sm_batch_max = sm_batch_limit();
  } else {
    l.sm_push_max = sm_copy_limit().push;
    l.sm_pull_max = sm_copy_limit().pull;
  }
  return l;
}

std::size_t sm_batch_limit() {
  static const std::size_t bytes =
      std::size_t{1024} *
      static_cast<std::size_t>(settings::peer_sm_batch_max_kib(sm_batch_default_kib));
  return bytes;
}

}  // namespace detail

link_info link(sluice::device from, sluice::device to) {
  constexpr const char* api = "sluice::link";
  (void)engine().dev(from.id(), api);
  (void)engine().dev(to.id(), api);
  if (from == to) return {link_kind::same_device, true, true, 0};
  int possible = 0;
  detail::check(gpu::api::can_access_peer(&possible, from.id(), to.id()), api, ": devices ",
                from.id(), " and ", to.id());
  link_info info{gpu::api::link_kind_of(from.id(), to.id()), possible != 0, false, -1};
  if (possible != 0) {
    int rank = 0;
    int atomics = 0;
    detail::check(gpu::api::p2p_rank(&rank, from.id(), to.id()), api, ": devices ", from.id(),
                  " and ", to.id());
    detail::check(gpu::api::p2p_atomics(&atomics, from.id(), to.id()), api, ": devices ", from.id(),
                  " and ", to.id());
    info.performance_rank = rank;
    info.native_atomics = atomics != 0;
  }
  return info;
}

void enable_peer_access(sluice::device from, sluice::device to) {
  constexpr const char* api = "sluice::enable_peer_access";
  auto& e = engine();
  (void)e.dev(from.id(), api);
  auto& target = e.dev(to.id(), api);
  if (from == to)
    detail::fail(errc::invalid_argument, api, "device ", from.id(), " cannot be its own peer");
  if (detail::peer_access().enabled(from.id(), to.id())) return;
  int possible = 0;
  detail::check(gpu::api::can_access_peer(&possible, from.id(), to.id()), api, ": devices ",
                from.id(), " and ", to.id());
  if (possible == 0)
    detail::fail(errc::peer_access_unavailable, api, "device ", from.id(),
                 " cannot access memory of device ", to.id(),
                 " (the vendor reports no peer access between them)");
  std::lock_guard<std::mutex> lock(e.peer_m);  // idempotent and thread-safe (PEER-1)
  if (detail::peer_access().enabled(from.id(), to.id())) return;
  {
    const detail::scoped_device guard(from.id());
    const auto s = gpu::api::enable_peer_access(to.id());
    if (s.code == gpu::api::peer_access_already_enabled)
      gpu::api::clear_last_error();  // enabled before (outside sluice): success, no stale error
    else
      detail::check(s, api, ": device ", from.id(), " to device ", to.id());
  }
  // Stream-ordered pool memory needs its own grant (see the traits).
  detail::check(gpu::api::pool_grant_access(target.pool, from.id()), api, ": device ", from.id(),
                " to the memory pool of device ", to.id());
  detail::peer_access().enable(from.id(), to.id());
}

bool peer_access_enabled(sluice::device from, sluice::device to) {
  // Only the range is checked (it indexes the flags): a device object was
  // checked when it was made, and the flag needs no device set up. copy_peer
  // asks this on every call.
  auto& e = engine();
  if (from.id() < 0 || from.id() >= e.count) [[unlikely]]
    (void)e.dev(from.id(), "sluice::peer_access_enabled");  // throws
  if (to.id() < 0 || to.id() >= e.count) [[unlikely]]
    (void)e.dev(to.id(), "sluice::peer_access_enabled");  // throws
  return detail::peer_access().enabled(from.id(), to.id());
}

copy_path copy_peer(stream_ref s, void* dst, sluice::device dst_dev, const void* src,
                    sluice::device src_dev, std::size_t bytes) {
  constexpr const char* api = "sluice::copy_peer";
  auto& st = detail::checked(s, api);
  const int own = st.device;
  // The whole plan in src/peer_plan (memory from the vendor's own allocator is the vendor's to
  // check).
  const auto plan = detail::plan_copy_peer(
      own, dst, dst_dev, src, src_dev, bytes,
      detail::peer_limits_of(engine().devices[static_cast<std::size_t>(own)], false));
  const copy_path path = plan.path;
  if (bytes == 0) return path;
  if (detail::any_capture() && detail::record_copy_peer_if_capturing(st, dst, dst_dev, src, src_dev,
                                                                     bytes, plan)) [[unlikely]]
    return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(), bytes,
                                   to_string(path), gpu::api::peer_push_preferred, st.trace.id);
  detail::enqueue_copy_peer(st, dst, dst_dev, src, src_dev, bytes, plan, api);
  return path;
}

void detail::enqueue_copy_peer(stream_state& st, void* dst, sluice::device dst_dev, const void* src,
                               sluice::device src_dev, std::size_t bytes, const copy_plan& plan,
                               const char* api) {
  const copy_path path = plan.path;
  const int own = st.device;
  // As in copy: pool memory of another device.
  detail::enqueue_scope<detail::device_current> scope(st, "copy_peer", bytes);
  if (detail::trace::enabled()) [[unlikely]]
    scope.path(to_string(path));
  if (path == copy_path::direct_sm) {
    // Small and aligned, over the link: sluice's SM copy kernel on the stream's
    // device (a push from the source, a pull from the destination).
    detail::check(gpu::api::sm_copy(dst, src, bytes, st.native, plan.sm_blocks), api, ": ", bytes,
                  " bytes from device ", src_dev.id(), " to device ", dst_dev.id(), " (direct_sm)");
  } else if (path == copy_path::local) {
    detail::check(gpu::api::memcpy_async(dst, src, bytes, st.native), api, ": ", bytes,
                  " bytes on device ", own);
  } else if (path == copy_path::staged) {
    // Without peer access: sluice's pipeline through pinned memory (staging.cpp).
    const peer_piece piece{dst, src, bytes};
    detail::staged_copy(st, dst_dev.id(), src_dev.id(), &piece, 1, api);
  } else {
    detail::check(
        gpu::api::memcpy_peer_async(dst, dst_dev.id(), src, src_dev.id(), bytes, st.native), api,
        ": ", bytes, " bytes from device ", src_dev.id(), " to device ", dst_dev.id(), " (",
        to_string(path), ")");
  }
  scope.done();
}

copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const peer_piece* pieces, std::size_t count) {
  constexpr const char* api = "sluice::copy_peer_batch";
  auto& st = detail::checked(s, api);
  const int own = st.device;
  const auto limits = detail::peer_limits_of(engine().devices[static_cast<std::size_t>(own)], true);
  const auto plan = detail::plan_copy_peer_batch(own, dst_dev, src_dev, pieces, count, limits);
  const copy_path path = plan.path;
  const std::size_t total = plan.bytes;
  if (total == 0) return path;
  if (detail::any_capture() && detail::record_peer_batch_if_capturing(
                                   st, dst_dev, src_dev, pieces, count, plan, limits)) [[unlikely]]
    return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(), total,
                                   to_string(path), gpu::api::peer_push_preferred, st.trace.id);
  detail::enqueue_copy_peer_batch(st, dst_dev, src_dev, pieces, count, plan, limits, api);
  return path;
}

void detail::enqueue_copy_peer_batch(stream_state& st, sluice::device dst_dev,
                                     sluice::device src_dev, const peer_piece* pieces,
                                     std::size_t count, const copy_plan& plan,
                                     const peer_limits& limits, const char* api) {
  const copy_path path = plan.path;
  const std::size_t total = plan.bytes;
  if (path == copy_path::direct_sm || path == copy_path::local_sm) {
    std::vector<detail::sm_copy::piece> group;
    group.reserve(std::min<std::size_t>(count, detail::sm_copy::batch_pieces));
    detail::enqueue_scope<detail::device_current> scope(st, "copy_peer_batch", total);
    scope.path(to_string(path));
    const auto launch = [&] {
      std::size_t largest = 0;
      for (const auto& p : group) largest = std::max(largest, p.bytes);
      const auto n = static_cast<unsigned>(group.size());
      const unsigned blocks = detail::sm_batch_blocks(largest, n, limits);
      detail::check(gpu::api::sm_copy_batch(group.data(), n, st.native, blocks), api, ": ", n,
                    " pieces from device ", src_dev.id(), " to device ", dst_dev.id(), " (",
                    to_string(path), ")");
      group.clear();
    };
    for (std::size_t i = 0; i < count; ++i) {
      if (pieces[i].bytes == 0) continue;
      group.push_back({pieces[i].dst, pieces[i].src, pieces[i].bytes});
      if (group.size() == detail::sm_copy::batch_pieces) launch();
    }
    if (!group.empty()) launch();
    scope.done();
    return;
  }
  // The vendor's batched copy takes three arrays (made before anything is enqueued).
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<std::size_t> sizes;
  if (path != copy_path::staged) {
    dsts.reserve(count);
    srcs.reserve(count);
    sizes.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (pieces[i].bytes == 0) continue;
      dsts.push_back(pieces[i].dst);
      srcs.push_back(pieces[i].src);
      sizes.push_back(pieces[i].bytes);
    }
  }
  detail::enqueue_scope<detail::device_current> scope(st, "copy_peer_batch", total);
  scope.path(to_string(path));
  if (path == copy_path::staged) {
    // Without peer access: the pieces share the pinned slots of sluice's pipeline.
    detail::staged_copy(st, dst_dev.id(), src_dev.id(), pieces, count, api);
  } else {
    detail::check(
        gpu::api::memcpy_peer_batch_async(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                                          dst_dev.id(), src_dev.id(), st.native),
        api, ": ", dsts.size(), " pieces, ", total, " bytes from device ", src_dev.id(),
        " to device ", dst_dev.id(), " (", to_string(path), ")");
  }
  scope.done();
}

}  // namespace sluice
