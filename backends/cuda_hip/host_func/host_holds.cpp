// What on a device waits for the host (host_holds.hpp): the holds of
// host-function batches and flag waits, and the signal-path enqueues ordered
// against them.
#include "host_func/host_holds.hpp"

#include "engine.hpp"
#include "spin_mutex.hpp"
#include "stream_state.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace sluice::detail {

void announce_batch_hold(stream_state& s) noexcept {
  std::lock_guard<spin_mutex> lock(s.hold_m);
  if (s.pending_batches.fetch_add(1, std::memory_order_seq_cst) == 0)
    engine().devices[static_cast<std::size_t>(s.device)].holds.stream_holds();
}

void release_batch_hold(stream_state& s) noexcept {
  std::lock_guard<spin_mutex> lock(s.hold_m);
  if (s.pending_batches.fetch_sub(1, std::memory_order_seq_cst) == 1)
    engine().devices[static_cast<std::size_t>(s.device)].holds.stream_released();
}

void host_holds::flag_wait(api::stream_t waiting, const std::atomic<std::uint64_t>* word,
                           std::uint64_t value) {
  std::lock_guard<std::mutex> lock(m_);
  flags_.push_back(flag_entry{waiting, word, value});
  waits_.fetch_add(1, std::memory_order_seq_cst);
}

bool host_holds::others_wait(api::stream_t own) noexcept {
  if (waits_.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lock(m_);
  int dropped = 0;
  for (std::size_t i = 0; i < flags_.size();) {
    // The device's >= on a word holding a 32-bit value (mapped_word.hpp); or
    // the stream is idle: the wait passed (the flag may be gone since, its
    // word reused and lower).
    bool passed = flags_[i].word->load(std::memory_order_acquire) >= flags_[i].value;
    if (!passed) {
      passed = api::stream_query(flags_[i].waiting).ok();
      if (!passed) api::clear_last_error();
    }
    if (passed) {
      flags_[i] = flags_.back();
      flags_.pop_back();
      ++dropped;
    } else {
      ++i;
    }
  }
  waits_.fetch_sub(dropped, std::memory_order_seq_cst);
  for (const flag_entry& e : flags_)
    if (e.waiting != own) return true;
  return false;
}

bool host_holds::begin_signal(api::stream_t own) noexcept {
  // The caller's own stream is one of holding_; its own flag waits come
  // before its signal in its own order and do not count.
  const auto clear = [this, own] {
    return holding_.load(std::memory_order_seq_cst) == 1 && !others_wait(own);
  };
  if (!clear()) return false;
  signals_.fetch_add(1, std::memory_order_seq_cst);
  if (clear()) return true;
  signals_.fetch_sub(1, std::memory_order_seq_cst);
  return false;
}

}  // namespace sluice::detail
