// Strided copies and registered host memory on the host backend: a strided
// copy is one stream operation that moves its runs (rows of the normalized
// shape) one by one, so the bytes between them stay untouched (MEM-7); a
// registered range is an entry of the shared registry, which makes copies
// inside it take the asynchronous path (MEM-8).
#include "strided.hpp"

#include "graph.hpp"
#include "host.hpp"
#include "mutation.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace sluice {

namespace detail {

//! One registered_host_memory range: the host's memory is all host memory, so
//! registering it is an entry in the registry and nothing else.
struct registration {
  void* ptr = nullptr;
};

namespace {

struct strided_copy_op final : op {
  strided_copy_op(std::vector<strided_plan> p, const char* k, const char* how, bool bounce)
      : pieces(std::move(p)), kind(k), path(how), staged(bounce) {
    for (const strided_plan& piece : pieces) total += piece.bytes;
  }
  void describe(trace::record& r) const override {
    r.kind = kind;
    r.path = path;
    r.bytes = total;
  }
  step run(stream_state&) override {
    bounce_buffer bounce;  // the staged path, as the contiguous staged copy
    auto move = [&](unsigned char* to, const unsigned char* from, std::size_t n) {
      if (staged)
        bounce.move(to, from, n);
      else
        std::memcpy(to, from, n);
    };
    const unsigned char* packed = snapshot.get();  // a pageable source, packed at enqueue
    const bool drop_last =
        path != nullptr && mutation::is(mutation::kind::strided_peer_drops_last_row);
    for (const strided_plan& p : pieces) {
      if (mutation::is(mutation::kind::strided_ignores_pitch)) {
        move(p.dst_at(0, 0), packed != nullptr ? packed : p.src_at(0, 0), p.bytes);
        continue;
      }
      std::size_t runs = p.rows * p.planes - (drop_last ? 1 : 0);
      for (std::size_t z = 0; z < p.planes; ++z)
        for (std::size_t y = 0; y < p.rows && runs > 0; ++y, --runs) {
          const unsigned char* from = packed != nullptr ? packed : p.src_at(y, z);
          move(p.dst_at(y, z), from, p.width);
          if (packed != nullptr) packed += p.width;
        }
    }
    return step::done;
  }
  void ranges(memory_ranges& out) const override {
    for (const strided_plan& p : pieces) {  // each end's footprint
      if (p.rows == 0 || p.planes == 0) continue;
      const unsigned char* first_dst = p.dst_at(0, 0);
      const unsigned char* first_src = p.src_at(0, 0);
      out.emplace_back(
          first_dst,
          static_cast<std::size_t>(p.dst_at(p.rows - 1, p.planes - 1) - first_dst) + p.width);
      out.emplace_back(
          first_src,
          static_cast<std::size_t>(p.src_at(p.rows - 1, p.planes - 1) - first_src) + p.width);
    }
  }
  std::vector<strided_plan> pieces;
  const char* kind;
  const char* path;  // copy_peer's path for the trace; null for copy()
  bool staged;
  std::size_t total = 0;
  std::unique_ptr<unsigned char[]> snapshot;
};

//! Whether a checked end counts as pageable (MEM-3 vs MEM-8).
bool pageable(const strided_end& e) noexcept {
  if (e.memory.owner != nullptr) return false;
  return !e.registered || mutation::is(mutation::kind::registered_counts_pageable);
}

}  // namespace

bool pageable_host_memory(const void* p, std::size_t bytes) noexcept {
  return !inside_registration(p, bytes) || mutation::is(mutation::kind::registered_counts_pageable);
}

seq_t enqueue_strided(stream_state& s, std::vector<strided_plan> pieces, const char* kind,
                      const char* peer_path, bool staged, bool snapshot_source, const char* api) {
  auto o = std::make_unique<strided_copy_op>(std::move(pieces), kind, peer_path, staged);
  if (snapshot_source) {
    // MEM-3: the source may be reused when the call returns; only the extent's
    // bytes are kept, packed.
    const strided_plan& p = o->pieces.front();
    o->snapshot.reset(new (std::nothrow) unsigned char[p.bytes]);
    if (!o->snapshot)
      fail(errc::out_of_memory, api, "cannot stage ", p.bytes, " bytes of pageable source memory");
    unsigned char* to = o->snapshot.get();
    for (std::size_t z = 0; z < p.planes; ++z)
      for (std::size_t y = 0; y < p.rows; ++y, to += p.width)
        std::memcpy(to, p.src_at(y, z), p.width);
  }
  return enqueue(s, o.release());
}

registration* register_host_memory(void* p, std::size_t bytes) {
  auto r = std::make_unique<registration>();
  r->ptr = p;
  add_registration(p, bytes, r.get(), "sluice::registered_host_memory");
  return r.release();
}

void release_registration(registration* r) noexcept {
  if (r == nullptr) return;
  remove_registration(r->ptr);
  delete r;
}

}  // namespace detail

void copy(stream_ref s, pitched_ptr dst, const_pitched_ptr src, extent e) {
  constexpr const char* api = "sluice::copy";
  auto& st = detail::checked(s, api);
  detail::strided_plan plan = detail::plan_strided_copy(dst, src, e, api);
  if (plan.empty()) return;
  detail::check_copy_devices(st.dev->id, plan.dst.memory.device, plan.src.memory.device, api);
  const bool dst_pageable = detail::pageable(plan.dst);
  const bool src_pageable = detail::pageable(plan.src);
  if (dst_pageable || src_pageable)
    detail::refuse_if_capturing(st, api, "a copy touching pageable host memory in a capture");
  if (dst_pageable) detail::check_not_self_wait(st, UINT64_MAX, api);
  detail::diagnose::note_pageable_copy(SLUICE_CALL_SITE(), plan.bytes, dst_pageable, src_pageable);
  std::vector<detail::strided_plan> pieces{plan};
  const auto seq =
      detail::enqueue_strided(st, std::move(pieces), "copy", nullptr, false, src_pageable, api);
  // A pageable destination holds the data when the call returns (MEM-3).
  if (dst_pageable) detail::wait_reached(st, seq, false);
}

}  // namespace sluice
