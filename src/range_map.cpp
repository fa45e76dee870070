#include "range_map.hpp"

#include "checks.hpp"

#include <cstdint>
#include <mutex>

namespace sluice::detail {

std::uint64_t range_map::first_generation() noexcept {
  static std::atomic<std::uint64_t> maps{0};
  return (maps.fetch_add(1, std::memory_order_relaxed) + 1) << 32;
}

void range_map::add(const void* p, std::size_t bytes, const void* owner, int device) {
  if (bytes == 0) return;
  std::unique_lock<std::shared_mutex> lock(m_);
  ranges_.insert_or_assign(reinterpret_cast<std::uintptr_t>(p), entry{bytes, owner, device});
  generation_.fetch_add(1, std::memory_order_release);
}

bool range_map::meets_locked(std::uintptr_t x, std::size_t bytes) const noexcept {
  auto it = ranges_.lower_bound(x);
  if (it != ranges_.end() && it->first - x < bytes) return true;  // one starts inside
  if (it == ranges_.begin()) return false;
  --it;
  return x - it->first < it->second.bytes;  // the one before reaches x
}

bool range_map::meets(const void* p, std::size_t bytes) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  return meets_locked(reinterpret_cast<std::uintptr_t>(p), bytes);
}

bool range_map::add_if_disjoint(const void* p, std::size_t bytes, const void* owner, int device) {
  if (bytes == 0) return true;
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  std::unique_lock<std::shared_mutex> lock(m_);
  if (meets_locked(x, bytes)) return false;
  ranges_.emplace(x, entry{bytes, owner, device});
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

void range_map::remove(const void* p) noexcept {
  std::unique_lock<std::shared_mutex> lock(m_);
  if (ranges_.erase(reinterpret_cast<std::uintptr_t>(p)) != 0)
    generation_.fetch_add(1, std::memory_order_release);
}

range_map::interval range_map::find_locked(std::uintptr_t x) const noexcept {
  interval v;
  v.hi = UINTPTR_MAX;
  auto it = ranges_.upper_bound(x);
  if (it != ranges_.end()) v.hi = it->first;
  if (it == ranges_.begin()) return v;  // the gap before the first allocation
  --it;
  const std::uintptr_t end = it->first + it->second.bytes;
  if (x >= end) {
    v.lo = end;  // the gap after it
    return v;
  }
  v.lo = it->first;
  v.hi = end;
  v.owner = it->second.owner;
  v.device = it->second.device;
  return v;
}

namespace {

struct cached_interval {
  const void* map = nullptr;
  std::uint64_t generation = 0;
  std::uintptr_t lo = 0, hi = 0;
  const void* owner = nullptr;
  int device = -1;
};
constexpr unsigned cache_size = 4;
thread_local cached_interval cache[cache_size];
thread_local unsigned cache_next = 0;

}  // namespace

range_map::interval range_map::find_interval_miss(std::uintptr_t x) const noexcept {
  interval v;
  std::uint64_t at = 0;
  {
    std::shared_lock<std::shared_mutex> lock(m_);
    at = generation_.load(std::memory_order_relaxed);
    v = find_locked(x);
  }
  cached_interval& slot = cache[cache_next++ % cache_size];
  slot = cached_interval{this, at, v.lo, v.hi, v.owner, v.device};
  return v;
}

namespace {

//! The lookup of [x, x + bytes) in [lo, hi), field by field: every copy does
//! two, and building it from a returned struct made the CPU wait on stores it
//! could not forward (about 20 ns per copy, perf on a stub runtime).
inline range_lookup lookup_in(std::uintptr_t x, std::size_t bytes, std::uintptr_t lo,
                              std::uintptr_t hi, const void* owner, int device) noexcept {
  range_lookup l;
  if (owner == nullptr) return l;
  l.owner = owner;
  l.overrun = bytes > hi - x;
  l.size = hi - lo;
  l.offset = x - lo;
  l.device = device;
  return l;
}

}  // namespace

inline range_lookup range_map::lookup(std::uintptr_t x, std::size_t bytes,
                                      std::uint64_t now) const noexcept {
  // Unchanged generation: the map is the one the cached answer came from.
  for (const cached_interval& c : cache)
    if (c.map == this && c.generation == now && c.lo <= x && x < c.hi)
      return lookup_in(x, bytes, c.lo, c.hi, c.owner, c.device);
  const interval v = find_interval_miss(x);
  return lookup_in(x, bytes, v.lo, v.hi, v.owner, v.device);
}

range_lookup range_map::find(const void* p, std::size_t bytes) const noexcept {
  return lookup(reinterpret_cast<std::uintptr_t>(p), bytes,
                generation_.load(std::memory_order_acquire));
}

std::pair<range_lookup, range_lookup> range_map::find(const void* a, const void* b,
                                                      std::size_t bytes) const noexcept {
  const std::uint64_t now = generation_.load(std::memory_order_acquire);
  return {lookup(reinterpret_cast<std::uintptr_t>(a), bytes, now),
          lookup(reinterpret_cast<std::uintptr_t>(b), bytes, now)};
}

range_map& allocations() {
  static auto* map = new range_map();
  return *map;
}

void fail_overrun(const range_lookup& l, std::size_t bytes, const char* api, const char* what) {
  if (l.device >= 0)
    fail(errc::invalid_argument, api, what, " + ", bytes, " bytes runs past the end of its ",
         l.size, "-byte allocation on device ", l.device, " (offset ", l.offset, ")");
  fail(errc::invalid_argument, api, what, " + ", bytes, " bytes runs past the end of its ", l.size,
       "-byte pinned allocation (offset ", l.offset, ")");
}

}  // namespace sluice::detail
