// The allocations sluice made (device and pinned), by address range: lets
// every backend reject a copy or fill that runs past the end of a sluice
// allocation before anything is enqueued (MEM-1), and tell sluice memory from
// pageable memory without asking the vendor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <utility>

namespace sluice::detail {

//! What the map says about [p, p + bytes).
struct range_lookup {
  const void* owner = nullptr;  // the allocation holding p; null: not sluice memory
  bool overrun = false;         // the range runs past the allocation's end
  std::size_t size = 0;         // the allocation's size
  std::uintptr_t offset = 0;    // p's offset in it
  int device = -1;              // -1: pinned host memory
};

//! Readers (every copy and fill) first look in a small per-thread cache of
//! recent answers (an allocation or the gap between two), valid while the
//! map's generation is unchanged; only a miss takes the shared lock.
class range_map {
 public:
  //! Registers [p, p + bytes) (bytes > 0) as owned by `owner` on `device` (-1: pinned).
  void add(const void* p, std::size_t bytes, const void* owner, int device);
  //! add() unless [p, p + bytes) meets a range already in the map: then false, nothing added.
  bool add_if_disjoint(const void* p, std::size_t bytes, const void* owner, int device);
  //! Whether [p, p + bytes) meets any range in the map (bytes > 0, no overflow).
  bool meets(const void* p, std::size_t bytes) const;
  void remove(const void* p) noexcept;
  //! Changes with every add() and remove(): an answer found at one generation
  //! holds while the generation is unchanged.
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  range_lookup find(const void* p, std::size_t bytes) const noexcept;
  //! Both ends of a copy under one lock (the enqueue hot path).
  std::pair<range_lookup, range_lookup> find(const void* a, const void* b,
                                             std::size_t bytes) const noexcept;

 private:
  struct entry {
    std::size_t bytes;
    const void* owner;
    int device;
  };
  //! [lo, hi): the allocation holding x (owner set) or the gap around x.
  struct interval {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    const void* owner = nullptr;
    int device = -1;
  };
  interval find_locked(std::uintptr_t x) const noexcept;
  bool meets_locked(std::uintptr_t x, std::size_t bytes) const noexcept;
  //! Not in this thread's cache: under the shared lock, then cached.
  interval find_interval_miss(std::uintptr_t x) const noexcept;
  //! [x, x + bytes) against the cache, as of generation `now`.
  range_lookup lookup(std::uintptr_t x, std::size_t bytes, std::uint64_t now) const noexcept;
  mutable std::shared_mutex m_;
  std::map<std::uintptr_t, entry> ranges_;
  // Bumped by every change, under m_; starts at a value unique to this map, so
  // that a map made at the address of a destroyed one cannot match its cache.
  std::atomic<std::uint64_t> generation_{first_generation()};
  static std::uint64_t first_generation() noexcept;
};

//! The process's map of sluice allocations (never destroyed: used by workers at exit).
range_map& allocations();

//! Throws errc::invalid_argument for the overrun l reports, naming the range ("dst", "src").
[[noreturn]] void fail_overrun(const range_lookup& l, std::size_t bytes, const char* api_name,
                               const char* what);

//! Throws errc::invalid_argument for an overrun (inline: every copy and fill checks twice).
inline void check_no_overrun(const range_lookup& l, std::size_t bytes, const char* api_name,
                             const char* what) {
  if (l.overrun) [[unlikely]]
    fail_overrun(l, bytes, api_name, what);
}

}  // namespace sluice::detail
