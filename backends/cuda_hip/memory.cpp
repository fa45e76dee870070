// Memory of the GPU backend: device_buffer from sluice's pool per device,
// stream-ordered frees that never block, pinned buffers, copy and fill.
#include "backend_rules.hpp"
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "memory_state.hpp"
#include "range_map.hpp"
#include "stream_state.hpp"
#include "strided.hpp"
#include "trace/gpu_trace.hpp"
#include "when_streams_pass.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace sluice {
namespace detail {
void add_live_streams(device_state& dev, std::vector<stream_state*>& out) {
  std::lock_guard<std::mutex> lock(dev.streams_m);
  out.reserve(out.size() + dev.streams.size());
  for (auto* s : dev.streams)
    if (s->try_add_ref()) out.push_back(s);
}

namespace {

void report_release_failure(const error& e) noexcept {
  // A destructor cannot throw; nothing is swallowed silently either.
  std::fprintf(stderr, "sluice: freeing device memory failed: %s\n", e.what());
}

}  // namespace

void* allocate_device(sluice::device d, std::size_t bytes, allocation** out) {
  auto& dev = engine().dev(d.id(), "sluice::device_buffer");
  auto a = std::make_unique<allocation>();
  a->bytes = bytes;
  a->device = dev.id;
  if (bytes > 0) {
    // From sluice's pool on an internal stream, complete before the call returns:
    // usable by any stream at once, like cudaMalloc, but freed without a device sync.
    const scoped_device guard(dev.id);
    check(api::malloc_from_pool(&a->ptr, bytes, dev.pool, dev.alloc_stream),
          "sluice::device_buffer: allocating ", bytes, " bytes on device ", dev.id);
    check(api::stream_synchronize(dev.alloc_stream), "sluice::device_buffer: allocating ", bytes,
          " bytes on device ", dev.id);
    try {
      allocations().add(a->ptr, bytes, a.get(), dev.id);
    } catch (...) {
      (void)api::free_async(a->ptr, dev.alloc_stream);
      throw;
    }
  }
  *out = a.release();
  return (*out)->ptr;
}

void* allocate_device_async(stream_ref s, std::size_t bytes, allocation** out) {
  auto& st = checked(s, "sluice::device_buffer");
  refuse_if_capturing(st, "sluice::device_buffer",
                      "a stream-ordered allocation on a capturing stream (not in this version)");
  auto& dev = engine().dev(st.device);
  auto a = std::make_unique<allocation>();
  a->bytes = bytes;
  a->device = dev.id;
  end_host_batch(st);  // an enqueue, but no traced operation: only the batch ends
  if (bytes > 0)
    check(api::malloc_from_pool(&a->ptr, bytes, dev.pool, st.native),
          "sluice::device_buffer: allocating ", bytes, " bytes on a stream of device ", dev.id);
  try {
    allocations().add(a->ptr, bytes, a.get(), dev.id);
  } catch (...) {
    (void)api::free_async(a->ptr, st.native);
    throw;
  }
  st.add_ref();  // the free is ordered on this stream: keep it alive until then
  a->stream = &st;
  *out = a.release();
  return (*out)->ptr;
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
  if (a->ptr != nullptr) allocations().remove(a->ptr);  // no longer sluice memory
  auto& e = engine();
  std::vector<stream_state*> waited;  // each holds a reference
  try {
    if (a->ptr != nullptr) {
      auto& dev = e.devices[static_cast<std::size_t>(a->device)];
      if (a->stream == nullptr) {
        // A synchronous allocation may be in use by any stream of its device.
        add_live_streams(dev, waited);
      }
      {
        std::lock_guard<std::mutex> lock(a->m);
        for (auto* s : a->recorded)
          if (s->try_add_ref()) waited.push_back(s);
      }
      if (a->stream != nullptr && waited.empty()) {
        // Stream-ordered and used by no other stream: freed in order on its stream (MEM-4).
        check(api::free_async(a->ptr, a->stream->native),
              "sluice::device_buffer: freeing memory of device ", a->device);
      } else {
        // Other streams may use it (all of the device's, or the recorded ones: MEM-6):
        // a sluice thread waits for each of them, and for the own stream, up to
        // this moment. Never a device queue: the own stream must not be held by
        // the work of the recorded ones.
        if (a->stream != nullptr && a->stream->try_add_ref()) waited.push_back(a->stream);
        void* const ptr = a->ptr;
        const int device = a->device;
        when_streams_pass(waited, [ptr, device](const std::string& failure) {
          if (!failure.empty()) {  // leak rather than free memory that may be in use
            std::fprintf(stderr,
                         "sluice: freeing memory of device %d: waiting for its users failed "
                         "(%s); the memory stays allocated\n",
                         device, failure.c_str());
            return;
          }
          // On the allocation stream, which never waits for anything.
          const api::status s =
              api::free_async(ptr, engine().devices[static_cast<std::size_t>(device)].alloc_stream);
          if (!s.ok() && !api::means_shutdown(s.code))
            std::fprintf(stderr, "sluice: freeing memory of device %d failed: %s\n", device,
                         api::error_string(s.code));
        });
      }
    }
  } catch (const error& failure) {
    report_release_failure(failure);
  } catch (...) {
    std::fprintf(stderr, "sluice: freeing device memory failed: out of host memory\n");
  }
  for (auto* w : waited) w->release();
  for (auto* r : a->recorded) r->release();
  if (a->stream != nullptr) a->stream->release();
  delete a;
}

namespace {

// Pinned blocks are never handed back to the vendor while the process runs.
// The vendor's free of pinned memory (cudaFreeHost) waits for the whole device
// and, while it waits, keeps host-function callbacks and the staging of
// pageable copies from making progress: with a stream held by a gate that
// deadlocked (on the H100, 2026-11-23: a pinned free from one test against a
// pageable copy or host functions of the next, docs/design.md). A freed block
// goes back to this cache once every stream has passed the moment it was
// freed, and a later pinned_buffer of the same rounded size takes it.
struct pinned_cache {
  std::mutex m;
  std::multimap<std::size_t, void*> blocks;  // rounded size -> block
};

pinned_cache& pinned_blocks() {
  static auto* c = new pinned_cache();  // never destroyed: reaper jobs may return blocks at exit
  return *c;
}

//! Sizes are rounded so that blocks are reused: to a power of two up to 1 MiB
//! (at least 4 KiB), to a multiple of 1 MiB above.
std::size_t pinned_block_size(std::size_t bytes) {
  constexpr std::size_t mib = std::size_t{1} << 20;
  if (bytes > mib) return (bytes + mib - 1) / mib * mib;
  std::size_t b = 4096;
  while (b < bytes) b *= 2;
  return b;
}

void* take_cached_pinned(std::size_t block) {
  auto& c = pinned_blocks();
  std::lock_guard<std::mutex> lock(c.m);
  const auto it = c.blocks.find(block);
  if (it == c.blocks.end()) return nullptr;
  void* p = it->second;
  c.blocks.erase(it);
  return p;
}

//! Out of pinned memory: the cached blocks go back to the vendor (this may wait
//! for the device), and the allocation is tried once more.
bool drop_cached_pinned() {
  std::multimap<std::size_t, void*> taken;
  {
    auto& c = pinned_blocks();
    std::lock_guard<std::mutex> lock(c.m);
    taken.swap(c.blocks);
  }
  for (const auto& [size, p] : taken) (void)api::free_host(p);
  return !taken.empty();
}

}  // namespace

void* allocate_pinned(std::size_t bytes, allocation** out) {
  auto a = std::make_unique<allocation>();
  a->bytes = bytes;
  if (bytes > 0) {
    (void)engine();
    a->block = pinned_block_size(bytes);
    a->ptr = take_cached_pinned(a->block);
    if (a->ptr == nullptr) {
      api::status s = api::host_alloc(&a->ptr, a->block);
      if (!s.ok() && drop_cached_pinned()) {
        api::clear_last_error();
        s = api::host_alloc(&a->ptr, a->block);
      }
      if (!s.ok())
        vendor_fail(s,
                    concat("sluice::pinned_buffer: allocating ", bytes, " bytes of pinned memory"));
    }
    try {
      allocations().add(a->ptr, bytes, a.get(), -1);
    } catch (...) {
      auto& c = pinned_blocks();
      std::lock_guard<std::mutex> lock(c.m);
      c.blocks.emplace(a->block, a->ptr);  // back to the cache: nothing used it
      throw;
    }
  }
  *out = a.release();
  return (*out)->ptr;
}

void release_pinned(allocation* a) noexcept {
  if (a == nullptr) return;
  if (a->ptr != nullptr) {
    allocations().remove(a->ptr);
    // Any stream of any device may still read or write it: back to the cache
    // once each has passed this moment (waited for on a sluice thread).
    std::vector<stream_state*> waited;  // each holds a reference
    auto& e = engine();
    try {
      for (int d = 0; d < e.count; ++d)
        add_live_streams(e.devices[static_cast<std::size_t>(d)], waited);
      void* const p = a->ptr;
      const std::size_t block = a->block;
      when_streams_pass(waited, [p, block](const std::string& failure) {
        if (!failure.empty()) {  // leak rather than reuse memory that may be in use
          std::fprintf(stderr,
                       "sluice: freeing pinned memory: waiting for its users failed (%s); the "
                       "memory stays allocated\n",
                       failure.c_str());
          return;
        }
        auto& c = pinned_blocks();
        std::lock_guard<std::mutex> lock(c.m);
        c.blocks.emplace(block, p);
      });
    } catch (...) {
      std::fprintf(stderr,
                   "sluice: freeing pinned memory: out of host memory; %zu bytes stay "
                   "allocated\n",
                   a->block);
    }
    for (auto* w : waited) w->release();
  }
  delete a;
}

void copy_on_host(stream_state& st, void* dst, const void* src, std::size_t bytes,
                  const char* api_name, const void* site) {
  // The buffers stay valid until the task has run: freeing pinned memory waits
  // for every stream to pass the moment of the free, and this stream's gate
  // opens only after the task.
  auto task = make_host_task([dst, src, bytes] { std::memmove(dst, src, bytes); });
  if (trace::enabled()) [[unlikely]]
    task = traced_host_task(st, std::move(task), "copy", bytes, "host");
  diagnose::note_host_copy(site, bytes);
  enqueue_host(st, std::move(task), api_name);
}

void copy_split_at_registrations(stream_state& st, void* dst, const void* src, std::size_t bytes,
                                 const char* api_name) {
  auto* to = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
  while (bytes > 0) {
    // Each piece ends where the registration either end starts in ends: inside one it is a
    // pinned copy, from memory outside every registration a pageable one.
    const std::size_t n = std::min(registered_run(to, bytes), registered_run(from, bytes));
    check(gpu::api::memcpy_async(to, from, n, st.native), api_name, ": ", n,
          " bytes on a stream of device ", st.device,
          " (a piece of a copy partly inside "
          "registered host memory)");
    to += n;
    from += n;
    bytes -= n;
  }
}

}  // namespace detail

void copy(stream_ref s, void* dst, const void* src, std::size_t bytes) {
  constexpr const char* api = "sluice::copy";
  auto& st = detail::checked(s, api);
  if (bytes == 0) return;
  detail::check_copy_ranges(dst, src, bytes, api);
  // A range that starts in a sluice allocation must end in it: the vendor
  // would otherwise treat it as pageable memory, block, or fault.
  const auto [d, from] = detail::allocations().find(dst, src, bytes);
  detail::check_no_overrun(d, bytes, api, "dst");
  detail::check_no_overrun(from, bytes, api, "src");
  const auto device_of = [](const detail::range_lookup& r) {
    return r.owner != nullptr ? static_cast<const detail::allocation*>(r.owner)->device : -1;
  };
  detail::check_copy_devices(st.device, device_of(d), device_of(from), api);
  // Wholly inside a registered_host_memory range: pinned (MEM-8). Partly inside: pageable.
  // (sluice memory is never registered: only other memory is looked up.)
  const detail::range_lookup d_reg =
      d.owner == nullptr ? detail::registrations().find(dst, bytes) : detail::range_lookup{};
  const detail::range_lookup from_reg =
      from.owner == nullptr ? detail::registrations().find(src, bytes) : detail::range_lookup{};
  const auto registered = [](const detail::range_lookup& r) {
    return r.owner != nullptr && !r.overrun;
  };
  if (d.owner == nullptr && !registered(d_reg)) detail::wait_until_unregistered(dst, bytes, api);
  if (from.owner == nullptr && !registered(from_reg))
    detail::wait_until_unregistered(src, bytes, api);
  if (detail::any_capture() && detail::record_copy_if_capturing(st, dst, src, bytes)) [[unlikely]]
    return;
  if (detail::diagnose::enabled()) [[unlikely]] {
    // Only sluice memory and registered ranges are known pinned; ask the vendor about the rest.
    bool dst_pageable = d_reg.owner != nullptr && d_reg.overrun;
    bool src_pageable = from_reg.owner != nullptr && from_reg.overrun;
    if (d.owner == nullptr && d_reg.owner == nullptr)
      (void)gpu::api::is_pageable(dst, &dst_pageable);
    if (from.owner == nullptr && from_reg.owner == nullptr)
      (void)gpu::api::is_pageable(src, &src_pageable);
    gpu::api::clear_last_error();
    detail::diagnose::note_pageable_copy(SLUICE_CALL_SITE(), bytes, dst_pageable, src_pageable);
  }
  if (d.owner == nullptr && detail::current_host_function_stream() == &st) [[unlikely]] {
    // A copy into pageable memory returns only once the data is there (MEM-3):
    // from a host function of the same stream that would wait for itself.
    bool pageable = false;
    (void)gpu::api::is_pageable(dst, &pageable);
    gpu::api::clear_last_error();
    if (pageable) detail::check_not_self_wait(st, UINT32_MAX, api);
  }
  // An end only partly inside a registration is pageable for sluice (MEM-8). The vendor takes a
  // range that starts in registered pages as that registration and refuses it past its end: the
  // copy goes in pieces split at the registration's end, and the call waits for them all, as
  // for pageable memory (MEM-3).
  const bool partly_registered =
      (d_reg.owner != nullptr && d_reg.overrun) || (from_reg.owner != nullptr && from_reg.overrun);
  if (partly_registered) [[unlikely]]
    detail::check_not_self_wait(st, UINT32_MAX, api);
  const bool dst_pinned_host = registered(d_reg) || (d.owner != nullptr && d.device < 0);
  const bool src_pinned_host = registered(from_reg) || (from.owner != nullptr && from.device < 0);
  if (dst_pinned_host && src_pinned_host) [[unlikely]] {
    // Both pinned (sluice's or registered): the vendors run a host-to-host copy on the
    // calling thread once the stream has drained (CUDA "API synchronization
    // behavior"; seen on 2x H200: a held stream deadlocked the caller). Here it
    // is a host task on the stream instead: ordered, and the call returns at
    // once (MEM-2). Traced as a copy with path "host".
    detail::copy_on_host(st, dst, src, bytes, api, SLUICE_CALL_SITE());
    return;
  }
  // The stream's device is made current for the call when it is not (pool
  // memory of device 1 with device 0 current: cudaErrorInvalidValue).
  detail::enqueue_scope<detail::device_current> scope(st, "copy", bytes);
  if (partly_registered) [[unlikely]]
    detail::copy_split_at_registrations(st, dst, src, bytes, api);
  else
    detail::check(gpu::api::memcpy_async(dst, src, bytes, st.native), api, ": ", bytes,
                  " bytes on a stream of device ", st.device);
  scope.done();
  if (partly_registered) [[unlikely]]
    detail::check(gpu::api::stream_synchronize(st.native), api, ": waiting for a copy of ", bytes,
                  " bytes partly inside registered host memory");
}

void fill(stream_ref s, void* dst, unsigned char value, std::size_t bytes) {
  constexpr const char* api = "sluice::fill";
  auto& st = detail::checked(s, api);
  if (bytes == 0) return;
  detail::check_pointer_range(dst, bytes, api, "dst");
  const detail::range_lookup d = detail::allocations().find(dst, bytes);
  detail::check_no_overrun(d, bytes, api, "dst");
  bool pageable = false;
  if (d.owner == nullptr && !detail::inside_registration(dst, bytes))
    detail::wait_until_unregistered(dst, bytes, api);
  if (detail::any_capture() && detail::record_fill_if_capturing(st, dst, value, bytes)) [[unlikely]]
    return;
  if (d.owner == nullptr) {  // not sluice memory: ask the vendor what it is
    (void)gpu::api::is_pageable(dst, &pageable);
    gpu::api::clear_last_error();
    // Partly inside a registration: pageable for sluice (MEM-8), and the vendor refuses a fill
    // that starts in registered pages and runs past their end.
    if (!pageable && detail::registered_run(dst, bytes) < bytes) pageable = true;
  }
  if (pageable) {
    // The device cannot write pageable memory: wait for the stream, then fill on
    // this thread, so the fill is still ordered after prior work and before
    // later work (MEM-1, MEM-3: copies touching pageable memory may block).
    detail::check_not_self_wait(st, UINT32_MAX, api);
    detail::check(gpu::api::stream_synchronize(st.native), api, ": waiting for a stream of device ",
                  st.device, " before filling pageable memory");
    std::memset(dst, value, bytes);
    return;
  }
  // No device_current here: cudaMemsetAsync took pool memory of device 1 with
  // device 0 current (2x H200, sluice-probe-xdev), unlike cudaMemcpyAsync.
  detail::enqueue_scope<detail::keep_device> scope(st, "fill", bytes);
  detail::check(gpu::api::memset_async(dst, value, bytes, st.native), api, ": ", bytes,
                " bytes on a stream of device ", st.device);
  scope.done();
}

}  // namespace sluice
