// Which device may access which (enable_peer_access): one matrix of flags per
// process, the same on every backend. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace sluice::detail {

class peer_matrix {
 public:
  //! Sizes the matrix for `count` devices, every pair off. Called once, by the
  //! backend's start-up, before any other call.
  void reset(int count);
  //! from may access to's memory. Ids are checked by the caller.
  bool enabled(int from, int to) const noexcept {
    return from != to && flag(from, to).load(std::memory_order_acquire);
  }
  void enable(int from, int to) noexcept { flag(from, to).store(true, std::memory_order_release); }

 private:
  std::atomic<bool>& flag(int from, int to) const noexcept {
    return flags_[static_cast<std::size_t>(from) * static_cast<std::size_t>(count_) +
                  static_cast<std::size_t>(to)];
  }
  int count_ = 0;
  std::unique_ptr<std::atomic<bool>[]> flags_;
};

//! The process's matrix.
peer_matrix& peer_access();

}  // namespace sluice::detail
