// registered_host_memory on the GPU backend: the vendor's registration of the program's own
// memory (cudaHostRegister / hipHostRegister, portable and mapped: api::host_register), entered
// into the shared registry (src/strided.hpp) so that copies wholly inside the range count as
// pinned (MEM-8). The unregister never runs on the calling thread: the vendor's may wait for the
// device's work in flight, as its free of pinned memory does (memory.cpp says what that did on an
// H100). As a freed pinned_buffer, the range waits on a sluice thread until every live stream
// has passed the moment of destruction, then the vendor unregisters it there.
//
// A registration of a range whose unregister is still pending waits for that unregister (the
// vendor would refuse the range as registered): destroying and re-registering the same memory
// works, and waits for the streams that were busy when it was destroyed. So does a copy or fill
// that sluice takes as pageable and that touches such a range (wait_until_unregistered): the
// vendor still takes the range as pinned, returns from a copy into it before the data is there
// (against MEM-3), and its unregister can unmap the range under the copy. Seen on an H200: a
// copy into a std::vector whose memory had just been registered and released failed with
// cudaErrorLaunchFailure in some runs of the conformance suite.
#include "engine.hpp"
#include "memory_state.hpp"
#include "stream_state.hpp"
#include "strided.hpp"
#include "when_streams_pass.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::detail {

struct registration {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

namespace {

//! Ranges released whose vendor unregister has not yet run.
struct pending_unregisters {
  std::mutex m;
  std::condition_variable finished;
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges;  // start, bytes
  std::atomic<std::size_t> count{0};  //!< ranges.size(), read without the lock by copies
};

pending_unregisters& pending() {
  static auto* p = new pending_unregisters();  // never destroyed: reaper jobs may finish at exit
  return *p;
}

bool meets_pending(std::uintptr_t a, std::size_t n) {
  for (const auto& [start, bytes] : pending().ranges)
    if (a < start + bytes && start < a + n) return true;
  return false;
}

void finish_pending(std::uintptr_t a) noexcept {
  auto& p = pending();
  std::lock_guard<std::mutex> lock(p.m);
  for (auto it = p.ranges.begin(); it != p.ranges.end(); ++it)
    if (it->first == a) {
      p.ranges.erase(it);
      p.count.store(p.ranges.size(), std::memory_order_release);
      break;
    }
  p.finished.notify_all();
}

void unregister_now(void* ptr) noexcept {
  const api::status s = api::host_unregister(ptr);
  if (!s.ok() && !api::means_shutdown(s.code))
    std::fprintf(stderr, "sluice: unregistering host memory at %p failed: %s\n", ptr,
                 api::error_string(s.code));
  finish_pending(reinterpret_cast<std::uintptr_t>(ptr));
}

}  // namespace

void wait_until_unregistered(const void* p, std::size_t bytes, const char* api_name) {
  auto& q = pending();
  if (bytes == 0 || q.count.load(std::memory_order_acquire) == 0) [[likely]]
    return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::unique_lock<std::mutex> lock(q.m);
  if (!meets_pending(a, bytes)) return;
  // The unregister waits for streams that were live when the registration was destroyed; from a
  // host function, one of them may be the stream this function holds.
  if (current_host_function_stream() != nullptr)
    fail(errc::invalid_argument, api_name, "called from a host function on host memory whose ",
         "registered_host_memory was destroyed while streams were busy: it would wait for them");
  q.finished.wait(lock, [&] { return !meets_pending(a, bytes); });
}

registration* register_host_memory(void* p, std::size_t bytes) {
  constexpr const char* api_name = "sluice::registered_host_memory";
  (void)engine();  // the runtime's environment before its first call
  auto r = std::make_unique<registration>();
  r->ptr = p;
  r->bytes = bytes;
  // sluice's checks first (null, empty, overlaps): nothing reaches the vendor then.
  add_registration(p, bytes, r.get(), api_name);
  try {
    {
      auto& q = pending();
      std::unique_lock<std::mutex> lock(q.m);
      q.finished.wait(lock,
                      [&] { return !meets_pending(reinterpret_cast<std::uintptr_t>(p), bytes); });
    }
    check(api::host_register(p, bytes), api_name, ": registering ", bytes, " bytes of host memory");
  } catch (...) {
    remove_registration(p);
    throw;
  }
  return r.release();
}

void release_registration(registration* r) noexcept {
  if (r == nullptr) return;
  // Copies enqueued from now on no longer count the range as pinned.
  remove_registration(r->ptr);
  void* const ptr = r->ptr;
  const auto start = reinterpret_cast<std::uintptr_t>(ptr);
  std::vector<stream_state*> waited;  // each holds a reference
  try {
    {
      auto& q = pending();
      std::lock_guard<std::mutex> lock(q.m);
      q.ranges.emplace_back(start, r->bytes);
      q.count.store(q.ranges.size(), std::memory_order_release);
    }
    auto& e = engine();
    for (int d = 0; d < e.count; ++d)
      add_live_streams(e.devices[static_cast<std::size_t>(d)], waited);
    when_streams_pass(waited, [ptr](const std::string& failure) {
      if (!failure.empty()) {
        // A stream may still use the range: it stays registered (pinned) rather than be
        // unpinned under a copy.
        std::fprintf(stderr,
                     "sluice: unregistering host memory at %p: waiting for its users failed (%s); "
                     "it stays registered\n",
                     ptr, failure.c_str());
        finish_pending(reinterpret_cast<std::uintptr_t>(ptr));
        return;
      }
      unregister_now(ptr);
    });
  } catch (...) {
    std::fprintf(stderr,
                 "sluice: unregistering host memory at %p: out of host memory; it stays "
                 "registered\n",
                 ptr);
    finish_pending(start);
  }
  for (auto* w : waited) w->release();
  delete r;
}

}  // namespace sluice::detail
