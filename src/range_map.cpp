#include "range_map.hpp"

#include "checks.hpp"

#include <mutex>

namespace sluice::detail {

void range_map::add(const void* p, std::size_t bytes, const void* owner, int device) {
  if (bytes == 0) return;
  std::unique_lock<std::shared_mutex> lock(m_);
  ranges_.insert_or_assign(reinterpret_cast<std::uintptr_t>(p), entry{bytes, owner, device});
}

void range_map::remove(const void* p) noexcept {
  std::unique_lock<std::shared_mutex> lock(m_);
  ranges_.erase(reinterpret_cast<std::uintptr_t>(p));
}

range_lookup range_map::find_locked(const void* p, std::size_t bytes) const noexcept {
  range_lookup l;
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  auto it = ranges_.upper_bound(x);
  if (it == ranges_.begin()) return l;
  --it;
  const std::uintptr_t begin = it->first;
  const std::uintptr_t end = begin + it->second.bytes;
  if (x >= end) return l;
  l.owner = it->second.owner;
  l.overrun = bytes > end - x;
  l.size = it->second.bytes;
  l.offset = x - begin;
  l.device = it->second.device;
  return l;
}

range_lookup range_map::find(const void* p, std::size_t bytes) const noexcept {
  std::shared_lock<std::shared_mutex> lock(m_);
  return find_locked(p, bytes);
}

std::pair<range_lookup, range_lookup> range_map::find(const void* a, const void* b,
                                                      std::size_t bytes) const noexcept {
  std::shared_lock<std::shared_mutex> lock(m_);
  return {find_locked(a, bytes), find_locked(b, bytes)};
}

range_map& allocations() {
  static auto* map = new range_map();
  return *map;
}

void check_no_overrun(const range_lookup& l, std::size_t bytes, const char* api, const char* what) {
  if (!l.overrun) return;
  if (l.device >= 0)
    fail(errc::invalid_argument, api, what, " + ", bytes, " bytes runs past the end of its ",
         l.size, "-byte allocation on device ", l.device, " (offset ", l.offset, ")");
  fail(errc::invalid_argument, api, what, " + ", bytes, " bytes runs past the end of its ", l.size,
       "-byte pinned allocation (offset ", l.offset, ")");
}

}  // namespace sluice::detail
