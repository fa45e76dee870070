// Peers on the host backend: every simulated device reaches every other
// through host memory. Peer access is tracked per ordered pair; without it
// copy_peer really stages through a bounce buffer.
#include "host.hpp"
#include "peer_access.hpp"
#include "peer_plan.hpp"
#include "strided.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace sluice {

namespace detail {

seq_t enqueue_copy(stream_state& s, void* dst, const void* src, std::size_t bytes,
                   bool snapshot_source, const char* api, const char* peer_path);

namespace {

//! Host: all device memory is sluice's, so anything else is rejected; no SM kernel.
peer_limits host_limits() noexcept {
  peer_limits l;
  l.only_sluice_memory = true;
  return l;
}

//! The staged path: device -> bounce buffer -> device, chunk by chunk.
struct staged_copy_op final : op {
  staged_copy_op(void* d, const void* s, std::size_t n) : dst(d), src(s), bytes(n) {}
  void describe(trace::record& r) const override {
    r.kind = "copy_peer";
    r.path = "staged";
    r.bytes = bytes;
  }
  step run(stream_state&) override {
    bounce_buffer().move(dst, src, bytes);
    return step::done;
  }
  void ranges(memory_ranges& out) const override {
    out.emplace_back(dst, bytes);
    out.emplace_back(src, bytes);
  }
  void* dst;
  const void* src;
  std::size_t bytes;
};

//! A batched peer copy: every piece in one operation (staged pieces go
//! through a bounce buffer, as staged_copy_op does).
struct batch_copy_op final : op {
  batch_copy_op(std::vector<peer_piece> p, copy_path how, std::size_t bytes)
      : pieces(std::move(p)), path(how), total(bytes) {}
  void describe(trace::record& r) const override {
    r.kind = "copy_peer_batch";
    r.path = to_string(path);
    r.bytes = total;
  }
  step run(stream_state&) override {
    bounce_buffer bounce;
    for (const peer_piece& p : pieces) {
      if (path == copy_path::staged)
        bounce.move(p.dst, p.src, p.bytes);
      else
        std::memcpy(p.dst, p.src, p.bytes);
    }
    return step::done;
  }
  void ranges(memory_ranges& out) const override {
    for (const peer_piece& p : pieces) {
      out.emplace_back(p.dst, p.bytes);
      out.emplace_back(p.src, p.bytes);
    }
  }
  std::vector<peer_piece> pieces;
  copy_path path;
  std::size_t total;
};

}  // namespace
}  // namespace detail

link_info link(sluice::device from, sluice::device to) {
  if (from == to) return {link_kind::same_device, true, true, 0};
  return {link_kind::host_memory, true, true, 0};
}

void enable_peer_access(sluice::device from, sluice::device to) {
  if (from == to)
    detail::fail(errc::invalid_argument, "sluice::enable_peer_access", "device ", from.id(),
                 " cannot be its own peer");
  detail::peer_access().enable(from.id(), to.id());
}

bool peer_access_enabled(sluice::device from, sluice::device to) {
  return detail::peer_access().enabled(from.id(), to.id());
}

copy_path copy_peer(stream_ref s, void* dst, sluice::device dst_dev, const void* src,
                    sluice::device src_dev, std::size_t bytes) {
  constexpr const char* api = "sluice::copy_peer";
  auto& st = detail::checked(s, api);
  const int own = st.dev->id;
  const copy_path path =
      detail::plan_copy_peer(own, dst, dst_dev, src, src_dev, bytes, detail::host_limits()).path;
  if (bytes == 0) return path;
  // Host: no direction is faster than the other.
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(), bytes,
                                   to_string(path), false, st.trace_id);
  if (path == copy_path::staged)
    detail::enqueue(st, new detail::staged_copy_op(dst, src, bytes));
  else
    detail::enqueue_copy(st, dst, src, bytes, false, api, to_string(path));
  return path;
}

copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const peer_piece* pieces, std::size_t count) {
  constexpr const char* api = "sluice::copy_peer_batch";
  auto& st = detail::checked(s, api);
  const int own = st.dev->id;
  const auto plan =
      detail::plan_copy_peer_batch(own, dst_dev, src_dev, pieces, count, detail::host_limits());
  const copy_path path = plan.path;
  const std::size_t total = plan.bytes;
  if (total == 0) return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(), total,
                                   to_string(path), false, st.trace_id);
  std::vector<peer_piece> kept;
  kept.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    if (pieces[i].bytes > 0) kept.push_back(pieces[i]);
  detail::enqueue(st, new detail::batch_copy_op(std::move(kept), path, total));
  return path;
}

copy_path copy_peer(stream_ref s, pitched_ptr dst, sluice::device dst_dev, const_pitched_ptr src,
                    sluice::device src_dev, extent e) {
  constexpr const char* api = "sluice::copy_peer";
  auto& st = detail::checked(s, api);
  const int own = st.dev->id;
  auto plan = detail::plan_copy_peer(own, dst, dst_dev, src, src_dev, e, detail::host_limits());
  const copy_path path = plan.copy.path;
  if (plan.shape.empty()) return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(),
                                   plan.shape.bytes, to_string(path), false, st.trace_id);
  std::vector<detail::strided_plan> pieces{plan.shape};
  detail::enqueue_strided(st, std::move(pieces), "copy_peer", to_string(path),
                          path == copy_path::staged, false, api);
  return path;
}

copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const strided_piece* pieces, std::size_t count) {
  constexpr const char* api = "sluice::copy_peer_batch";
  auto& st = detail::checked(s, api);
  const int own = st.dev->id;
  auto plan =
      detail::plan_copy_peer_batch(own, dst_dev, src_dev, pieces, count, detail::host_limits());
  const copy_path path = plan.copy.path;
  if (plan.copy.bytes == 0) return path;
  detail::diagnose::note_peer_copy(SLUICE_CALL_SITE(), own, dst_dev.id(), src_dev.id(),
                                   plan.copy.bytes, to_string(path), false, st.trace_id);
  detail::enqueue_strided(st, std::move(plan.pieces), "copy_peer_batch", to_string(path),
                          path == copy_path::staged, false, api);
  return path;
}

}  // namespace sluice
