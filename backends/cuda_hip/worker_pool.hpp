// sluice's own threads (engine_t::host_functions, engine_t::reaper). Defined
// in worker_pool.cpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace sluice::detail {

//! Runs functions on sluice threads: host functions handed over by a vendor
//! callback, and deferred vendor calls that may block (pinned frees, stream
//! destruction where it blocks).
class worker_pool {
 public:
  void submit(std::function<void()> f);
  //! Waits until no function is queued or running, at most `limit`; false if
  //! some still were (at exit: a free waiting for a stream that never ends).
  bool drain(std::chrono::milliseconds limit);

 private:
  void thread_main();
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  int idle_ = 0;
  int running_ = 0;
};

}  // namespace sluice::detail
