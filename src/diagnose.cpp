#include "diagnose.hpp"

#include "settings.hpp"
#include "stream_names.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace sluice::detail::diagnose {
namespace {

struct state {
  std::mutex m;
  std::set<std::pair<int, const void*>> warned;
  std::size_t counts[static_cast<int>(kind::count)] = {};
  struct sync_site {
    std::int64_t returned_ns = 0;  // when the last call returned
    int quick = 0;                 // consecutive calls less than 1 ms after the previous return
  };
  std::map<const void*, sync_site> syncs;
};

state& the_state() {
  static auto* s = new state();  // never destroyed: used by threads at exit
  return *s;
}

std::string where(const void* site) {
  Dl_info info{};
  char text[512];
  if (site != nullptr && dladdr(site, &info) != 0 && info.dli_fname != nullptr) {
    const auto offset =
        reinterpret_cast<std::uintptr_t>(site) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    if (info.dli_sname != nullptr)
      std::snprintf(text, sizeof text, "%s (%s+0x%zx)", info.dli_sname, info.dli_fname,
                    static_cast<std::size_t>(offset));
    else
      std::snprintf(text, sizeof text, "%s+0x%zx", info.dli_fname,
                    static_cast<std::size_t>(offset));
    return text;
  }
  std::snprintf(text, sizeof text, "%p", site);
  return text;
}

}  // namespace

const char* name(kind k) noexcept {
  switch (k) {
    case kind::pageable_copy: return "pageable_copy";
    case kind::unrecorded_event_wait: return "unrecorded_event_wait";
    case kind::synchronize_loop: return "synchronize_loop";
    case kind::event_never_used: return "event_never_used";
    case kind::stream_destroyed_busy: return "stream_destroyed_busy";
    case kind::staged_peer_copy: return "staged_peer_copy";
    case kind::host_copy: return "host_copy";
    case kind::strided_rows: return "strided_rows";
    case kind::peer_copy_pulled: return "peer_copy_pulled";
    case kind::count: break;
  }
  return "unknown";
}

bool enabled() noexcept {
  static const bool on = settings::diagnose();
  return on;
}

void warn(kind k, const void* site, const std::string& what, const std::string& advice) noexcept {
  try {
    auto& s = the_state();
    {
      std::lock_guard<std::mutex> lock(s.m);
      if (!s.warned.emplace(static_cast<int>(k), site).second) return;
      ++s.counts[static_cast<int>(k)];
    }
    std::string todo = advice;
    if (!todo.empty())
      todo[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(todo[0])));
    std::fprintf(stderr, "sluice: diagnose: %s at %s: %s. %s.\n", name(k), where(site).c_str(),
                 what.c_str(), todo.c_str());
    std::fflush(stderr);
  } catch (...) {
    // out of memory while warning: the warning is lost, the program is not
  }
}

std::size_t warnings(kind k) noexcept {
  auto& s = the_state();
  std::lock_guard<std::mutex> lock(s.m);
  return s.counts[static_cast<int>(k)];
}

namespace {
std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void note_synchronize_returned(const void* site) noexcept {
  try {
    auto& s = the_state();
    std::lock_guard<std::mutex> lock(s.m);
    s.syncs[site].returned_ns = steady_ns();
  } catch (...) {
  }
}

void note_synchronize(const void* site, const char* api) noexcept {
  if (!enabled()) return;
  constexpr int loop_calls = 64;
  constexpr std::int64_t quick_ns = 1'000'000;
  const std::int64_t now = steady_ns();
  bool loop = false;
  try {
    auto& s = the_state();
    std::lock_guard<std::mutex> lock(s.m);
    auto& entry = s.syncs[site];
    entry.quick =
        entry.returned_ns != 0 && now - entry.returned_ns < quick_ns ? entry.quick + 1 : 0;
    loop = entry.quick + 1 >= loop_calls;
  } catch (...) {
    return;
  }
  if (loop)
    warn(kind::synchronize_loop, site,
         std::string(api) + " was called " + std::to_string(loop_calls) +
             " times in a row from here, each less than 1 ms after the previous one returned",
         "each call makes the host wait for the device and leaves the device idle until the "
         "next enqueue; enqueue the whole loop and synchronize once after it, or wait on events "
         "(stream::wait) between streams instead");
}

void note_pageable_copy(const void* site, std::size_t bytes, bool dst_pageable,
                        bool src_pageable) noexcept {
  if (!enabled() || (!dst_pageable && !src_pageable)) return;
  try {
    const char* which = dst_pageable && src_pageable ? "both ends are"
                        : dst_pageable               ? "the destination is"
                                                     : "the source is";
    warn(kind::pageable_copy, site,
         "a copy of " + std::to_string(bytes) + " bytes: " + which +
             " pageable host memory, so it is staged through a bounce buffer" +
             (dst_pageable ? " and the call blocks until the data has landed" : ""),
         "allocate the host side with sluice::pinned_buffer: pinned copies are asynchronous and "
         "overlap with other streams");
  } catch (...) {
  }
}

void note_peer_copy(const void* site, int stream_device, int dst_device, int src_device,
                    std::size_t bytes, const char* path, bool push_preferred,
                    std::uint64_t stream_id) noexcept {
  if (!enabled() || dst_device == src_device) return;
  try {
    const std::string what = "copy_peer of " + std::to_string(bytes) + " bytes from device " +
                             std::to_string(src_device) + " to device " +
                             std::to_string(dst_device);
    if (std::string(path) == "staged")
      warn(kind::staged_peer_copy, site, what + " took the staged path (through host memory)",
           "call sluice::enable_peer_access(device{" + std::to_string(stream_device) +
               "}, device{" +
               std::to_string(stream_device == src_device ? dst_device : src_device) +
               "}) once before, when sluice::link() says peer access is possible");
    if (push_preferred && stream_device == dst_device)
      warn(kind::peer_copy_pulled, site,
           what + " was issued on " + stream_names::phrase(stream_id, "the destination device") +
               " (a pull)",
           "issue it on a stream of the source device (a push): on this backend a push is "
           "faster, most for small copies (docs/vendor-differences.md)");
  } catch (...) {
  }
}

void note_host_copy(const void* site, std::size_t bytes) noexcept {
  if (!enabled()) return;
  try {
    warn(kind::host_copy, site,
         "a copy of " + std::to_string(bytes) +
             " bytes between two pinned host buffers ran as a host task on a sluice thread (the "
             "vendors copy host memory to host memory only on the calling thread, after the "
             "stream has drained)",
         "it is ordered and does not block, but it is a CPU memcpy that also holds the stream "
         "until it has run; for large or frequent copies, keep the data in device memory or "
         "copy on the host where the data is produced");
  } catch (...) {
  }
}

void note_strided_rows(const void* site, std::size_t bytes, std::size_t rows,
                       const char* why) noexcept {
  if (!enabled()) return;
  try {
    warn(kind::strided_rows, site,
         "a strided copy of " + std::to_string(bytes) + " bytes went as " + std::to_string(rows) +
             " copies of one row each (" + why + ")",
         "keep pitches within the device's maximum; between devices on HIP, a batch of small "
         "aligned pieces takes sluice's SM kernel (SLUICE_PEER_SM_STRIDED_MAX_KIB, "
         "docs/vendor-differences.md section 26)");
  } catch (...) {
  }
}

void note_host_function_path(const std::string& path, const std::string& evidence) noexcept {
  static std::atomic<bool> printed{false};
  if (!enabled() || printed.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr, "sluice: diagnose: host functions: %s: %s\n", path.c_str(),
               evidence.c_str());
  std::fflush(stderr);
}

void event_usage::destroyed(int device) const noexcept {
  if (!enabled()) return;
  const void* site = record_site.load(std::memory_order_relaxed);
  if (site == nullptr || used.load(std::memory_order_relaxed)) return;
  warn(kind::event_never_used, site,
       "an event of device " + std::to_string(device) +
           " recorded here was destroyed without being waited on, queried or timed",
       "a record nobody uses costs an enqueue: remove it, or wait on the event where the "
       "ordering was meant");
}

}  // namespace sluice::detail::diagnose
