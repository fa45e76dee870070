// What every backend does the same way around a host function (HOST-4) and
// other failures that surface later on a stream (sluice::comm's
// errc::comm_failure). Internal.
#pragma once

#include <sluice/detail/host_task.hpp>
#include <sluice/error.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sluice::detail {

//! Runs the task; the message of what it threw, or nothing when it returned.
std::optional<std::string> run_host_task(host_task& task) noexcept;

//! One failure that a stream reports later: a host function that threw
//! (errc::host_function_failed, `message` is what it threw) or a
//! communication that failed (errc::comm_failure, `message` says which).
struct stream_failure {
  errc code;
  std::string message;
};

//! A stream's failures not yet reported. Any thread may add; the next
//! ready()/synchronize() (and, for comm failures, event::record) takes them.
class stream_failures {
 public:
  void add(errc code, std::string message);
  //! Cheap when there is nothing: one atomic load.
  bool any() const noexcept { return has_.load(std::memory_order_acquire); }
  //! Throws the pending failures once (the first one's errc; the others named
  //! in its message); nothing when there are none.
  void rethrow(int device);
  //! As rethrow(), only when one of them is a comm failure.
  void rethrow_comm(int device);
  //! Nothing is lost: failures that nothing reported go to stderr, one line
  //! each, naming the device (a stream destroyed or recycled).
  void print_unreported(int device) noexcept;

 private:
  std::vector<stream_failure> take();
  std::mutex m_;
  std::vector<stream_failure> list_;  // under m_
  std::atomic<bool> has_{false};
  std::atomic<bool> has_comm_{false};
};

}  // namespace sluice::detail
