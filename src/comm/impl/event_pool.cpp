// The nccl engine's events (arrivals and done marks of its batches), pooled
// per device and never freed: a late record may still reach one.
#include "comm/impl/event_pool.hpp"

#include <map>
#include <mutex>
#include <vector>

namespace sluice::comm::detail {

namespace {

struct event_pool {
  std::mutex m;
  std::map<int, std::vector<sluice::event*>> free;  // by device
};

event_pool& events() {
  static auto* pool = new event_pool;  // never destroyed: like the flags
  return *pool;
}

}  // namespace

bool event_ready(sluice::event* e) noexcept {
  try {
    return e->ready();
  } catch (...) {
    return true;  // its stream failed: the failure reaches it by its own way
  }
}

sluice::event* lease_event(sluice::device d) {
  auto& pool = events();
  {
    std::lock_guard<std::mutex> lock(pool.m);
    auto& free = pool.free[d.id()];
    if (!free.empty()) {
      sluice::event* e = free.back();
      free.pop_back();
      return e;
    }
  }
  return new sluice::event(d);  // never freed: see event_pool
}

void return_event(sluice::event* e) noexcept {
  if (e == nullptr || !event_ready(e)) return;  // a late record's event is not reused
  auto& pool = events();
  try {
    const int d = e->device().id();
    std::lock_guard<std::mutex> lock(pool.m);
    pool.free[d].push_back(e);
  } catch (...) {
    // No memory to keep it: it stays allocated, unused.
  }
}

}  // namespace sluice::comm::detail
