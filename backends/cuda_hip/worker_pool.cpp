// sluice's own threads for work handed over or deferred (worker_pool.hpp).
#include "worker_pool.hpp"

#include <thread>
#include <utility>

namespace sluice::detail {

void worker_pool::submit(std::function<void()> f) {
  bool spawn = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(std::move(f));
    if (idle_ < static_cast<int>(queue_.size())) {
      spawn = true;
      ++idle_;  // the new thread starts idle
    }
  }
  // A function that blocks must never keep another one from running (HOST-2):
  // every queued function finds an idle thread or gets a new one.
  if (spawn)
    std::thread([this] { thread_main(); }).detach();
  else
    cv_.notify_one();
}

void worker_pool::thread_main() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [this] { return !queue_.empty(); });
    auto f = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    ++running_;
    lock.unlock();
    f();  // never throws: callers wrap their work
    f = nullptr;
    lock.lock();
    ++idle_;
    if (--running_ == 0 && queue_.empty()) idle_cv_.notify_all();
  }
}

bool worker_pool::drain(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(m_);
  return idle_cv_.wait_for(lock, limit, [this] { return queue_.empty() && running_ == 0; });
}

}  // namespace sluice::detail
