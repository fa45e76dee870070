// Memory of the host backend: simulated device memory and pinned memory are
// host allocations registered in a range map, so that copies can check
// ranges and tell sluice memory from pageable memory (MEM-3).
#include "backend_rules.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "range_map.hpp"

#include <cstring>
#include <new>

namespace sluice {

namespace detail {

namespace {

constexpr std::align_val_t device_alignment{256};  // like cudaMalloc

void register_allocation(allocation* a) {
  allocations().add(a->ptr, a->bytes, a, a->kind == memory_kind::device ? a->device : -1);
}

void unregister_allocation(allocation* a) noexcept {
  if (a->bytes != 0) allocations().remove(a->ptr);
}

allocation* new_allocation(std::size_t bytes, memory_kind kind, int device, const char* api) {
  auto a = std::make_unique<allocation>();
  a->bytes = bytes;
  a->kind = kind;
  a->device = device;
  if (bytes > 0) {
    a->ptr = ::operator new(bytes, device_alignment, std::nothrow);
    if (a->ptr == nullptr) {
      if (device >= 0)
        fail(errc::out_of_memory, api, "cannot allocate ", bytes, " bytes on device ", device);
      fail(errc::out_of_memory, api, "cannot allocate ", bytes, " bytes of pinned memory");
    }
  }
  register_allocation(a.get());
  return a.release();
}

void destroy(allocation* a) noexcept {
  if (a->ptr != nullptr) ::operator delete(a->ptr, device_alignment);
  if (a->stream != nullptr) a->stream->release();
  for (auto* s : a->recorded) s->release();
  delete a;
}

//! Frees an allocation once every position it waits for is reached.
struct deferred_free final : listener {
  std::atomic<int> remaining{1};
  allocation* target = nullptr;
  void on_complete() noexcept override {
    if (remaining.fetch_sub(1) == 1) {
      destroy(target);
      delete this;
    }
  }
};

struct copy_op final : op {
  copy_op(void* d, const void* s, std::size_t n) : dst(d), src(s), bytes(n) {}
  void describe(trace::record& r) const override {
    r.kind = peer_path != nullptr ? "copy_peer" : "copy";
    r.path = peer_path;
    r.bytes = bytes;
  }
  step run(stream_state&) override {
    std::memcpy(dst, snapshot ? snapshot.get() : src, bytes);
    return step::done;
  }
  void ranges(memory_ranges& out) const override {
    out.emplace_back(dst, bytes);
    out.emplace_back(src, bytes);
  }
  void* dst;
  const void* src;
  std::size_t bytes;
  std::unique_ptr<unsigned char[]> snapshot;  // a pageable source, copied at enqueue (MEM-3)
  const char* peer_path = nullptr;            // copy_peer: its path, for the trace
};

struct fill_op final : op {
  fill_op(void* d, unsigned char v, std::size_t n) : dst(d), value(v), bytes(n) {}
  void describe(trace::record& r) const override {
    r.kind = "fill";
    r.bytes = bytes;
  }
  step run(stream_state&) override {
    std::memset(dst, value, bytes);
    return step::done;
  }
  void ranges(memory_ranges& out) const override { out.emplace_back(dst, bytes); }
  void* dst;
  unsigned char value;
  std::size_t bytes;
};

//! Both ends of a copy under one lock of the range map (the enqueue hot path).
std::pair<const allocation*, const allocation*> find_allocations(void* dst, const void* src,
                                                                 std::size_t bytes,
                                                                 const char* api) {
  const auto [d, s] = allocations().find(dst, src, bytes);
  check_no_overrun(d, bytes, api, "dst");
  check_no_overrun(s, bytes, api, "src");
  return {static_cast<const allocation*>(d.owner), static_cast<const allocation*>(s.owner)};
}

}  // namespace

const allocation* find_allocation(const void* p, std::size_t bytes, const char* api,
                                  const char* what) {
  const range_lookup l = allocations().find(p, bytes);
  check_no_overrun(l, bytes, api, what);
  return static_cast<const allocation*>(l.owner);
}

void* allocate_device(sluice::device d, std::size_t bytes, allocation** out) {
  (void)engine().dev(d.id());
  allocation* a = new_allocation(bytes, memory_kind::device, d.id(), "sluice::device_buffer");
  *out = a;
  return a->ptr;
}

void* allocate_device_async(stream_ref s, std::size_t bytes, allocation** out) {
  auto& st = checked(s, "sluice::device_buffer");
  refuse_if_capturing(st, "sluice::device_buffer",
                      "a stream-ordered allocation on a capturing stream (not in this version)");
  allocation* a = new_allocation(bytes, memory_kind::device, st.dev->id, "sluice::device_buffer");
  st.add_ref();
  a->stream = &st;
  *out = a;
  return a->ptr;
}

int allocation_device(const allocation* a) noexcept { return a->device; }

void record_stream(allocation* a, stream_ref s) {
  auto& st = checked(s, "sluice::device_buffer::record_stream");
  refuse_if_capturing(st, "sluice::device_buffer::record_stream",
                      "record_stream on a capturing stream (recorded operations are not work)");
  add_recorded_stream(a->m, a->stream, a->recorded, st);
}

void release_device(allocation* a) noexcept {
  if (a == nullptr) return;
  unregister_allocation(a);
  // The positions the memory waits for: the own stream's work (stream-ordered)
  // or all work of the device (synchronous allocation), plus recorded streams.
  std::vector<std::pair<stream_state*, seq_t>> positions;
  auto take = [&](stream_state* s) {
    if (s->try_add_ref()) positions.emplace_back(s, s->enqueued.load(std::memory_order_acquire));
  };
  if (a->stream != nullptr) {
    take(a->stream);
  } else if (a->device >= 0) {
    auto& d = engine().dev(a->device);
    std::lock_guard<std::mutex> lock(d.streams_m);
    for (auto* s : d.streams) take(s);
  }
  {
    std::lock_guard<std::mutex> lock(a->m);
    for (auto* s : a->recorded) take(s);
  }
  // Out of memory here ends the process (a destructor cannot report it).
  auto* pending = new deferred_free();  // NOLINT(bugprone-unhandled-exception-at-new)
  pending->target = a;
  pending->remaining.store(static_cast<int>(positions.size()) + 1);
  for (auto& [s, seq] : positions) {
    if (!when_reached(*s, seq, pending)) pending->on_complete();
    s->release();
  }
  pending->on_complete();  // the registration reference
}

void* allocate_pinned(std::size_t bytes, allocation** out) {
  allocation* a = new_allocation(bytes, memory_kind::pinned, -1, "sluice::pinned_buffer");
  *out = a;
  return a->ptr;
}

void release_pinned(allocation* a) noexcept {
  if (a == nullptr) return;
  unregister_allocation(a);
  destroy(a);
}

//! Enqueues a memcpy on s after the checks of copy(); shared with copy_peer.
seq_t enqueue_copy(stream_state& s, void* dst, const void* src, std::size_t bytes,
                   bool snapshot_source, const char* api, const char* peer_path) {
  auto o = std::make_unique<copy_op>(dst, src, bytes);
  o->peer_path = peer_path;
  if (snapshot_source) {
    o->snapshot.reset(new (std::nothrow) unsigned char[bytes]);
    if (!o->snapshot)
      fail(errc::out_of_memory, api, "cannot stage ", bytes, " bytes of pageable source memory");
    std::memcpy(o->snapshot.get(), src, bytes);
  }
  return enqueue(s, o.release());
}

}  // namespace detail

void copy(stream_ref s, void* dst, const void* src, std::size_t bytes) {
  constexpr const char* api = "sluice::copy";
  auto& st = detail::checked(s, api);
  if (bytes == 0) return;
  detail::check_copy_ranges(dst, src, bytes, api);
  const auto [dst_allocation, src_allocation] = detail::find_allocations(dst, src, bytes, api);
  detail::check_copy_devices(st.dev->id, dst_allocation != nullptr ? dst_allocation->device : -1,
                             src_allocation != nullptr ? src_allocation->device : -1, api);
  const bool dst_pageable = dst_allocation == nullptr && detail::pageable_host_memory(dst, bytes);
  const bool src_pageable = src_allocation == nullptr && detail::pageable_host_memory(src, bytes);
  if (dst_pageable || src_pageable)
    detail::refuse_if_capturing(st, api, "a copy touching pageable host memory in a capture");
  if (dst_pageable) detail::check_not_self_wait(st, UINT64_MAX, api);
  detail::diagnose::note_pageable_copy(SLUICE_CALL_SITE(), bytes, dst_pageable, src_pageable);
  const auto seq = detail::enqueue_copy(st, dst, src, bytes, src_pageable, api, nullptr);
  // A pageable destination holds the data when the call returns (MEM-3).
  if (dst_pageable) detail::wait_reached(st, seq, false);
}

void fill(stream_ref s, void* dst, unsigned char value, std::size_t bytes) {
  constexpr const char* api = "sluice::fill";
  auto& st = detail::checked(s, api);
  if (bytes == 0) return;
  detail::check_pointer_range(dst, bytes, api, "dst");
  const bool dst_pageable = detail::find_allocation(dst, bytes, api, "dst") == nullptr &&
                            detail::pageable_host_memory(dst, bytes);
  if (dst_pageable)
    detail::refuse_if_capturing(st, api, "a fill of pageable host memory in a capture");
  if (dst_pageable) detail::check_not_self_wait(st, UINT64_MAX, api);
  const auto seq = detail::enqueue(st, new detail::fill_op(dst, value, bytes));
  if (dst_pageable) detail::wait_reached(st, seq, false);
}

}  // namespace sluice
