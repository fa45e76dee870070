// What on a device waits for the host, as far as sluice knows: the rule that
// decides which host functions may use the word watcher's signal (docs/design.md,
// "Which host functions use the word watcher").
//
// A host function's signal is a stream memory write. Sitting in a hardware
// queue behind another stream's stream memory wait that only the host releases
// (a host function's gate, a flag wait), it comes only once that wait passes;
// if the release needs this function (HOST-2: functions that wait for each
// other), never. Which streams share a queue is the vendor's choice (CUDA:
// CUDA_DEVICE_MAX_CONNECTIONS queues, "the number actually allocated by the
// driver may differ", assigned in an order sluice does not see), so the rule
// does not depend on it: a batch takes the signal path only when, as its
// signal is enqueued, no other stream of the device holds for the host. A hold
// enqueued later comes after the signal in any queue; any other work (kernels,
// copies, waits on events, also those behind a hold: they pass once the hold
// is released) ends by itself. Otherwise the vendor callback, which no GPU run
// ever saw held by a queue-mate's wait.
//
// Holds: a stream with a host-function batch whose gate the host has not opened
// (either path: the gate wait is the same); a flag wait (wait_value) on a flag
// below its value, until its word reaches the value or its stream is found
// idle. (A flag the host lowers again before the device saw the value holds
// unseen: flags that go down are outside this rule.) Signal-path enqueues and
// hold enqueues are ordered against each other (seq_cst, Dekker): a hold,
// once counted, waits for the signal enqueues in progress (the length of a
// vendor call) so that it lands behind them, and a signal enqueue that starts
// after a hold was counted sees it and takes the callback.
#pragma once

#include "vendor.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::detail {

struct stream_state;

class host_holds {
 public:
  //! A stream's first pending host-function batch began / its last one ended
  //! (its gate opened). After stream_holds(): begin_signal() or before_hold(),
  //! then the enqueue.
  void stream_holds() noexcept { holding_.fetch_add(1, std::memory_order_seq_cst); }
  void stream_released() noexcept { holding_.fetch_sub(1, std::memory_order_seq_cst); }

  //! A flag wait of `waiting` about to be enqueued: a hold until *word >= value
  //! or `waiting` is found idle. Then before_hold(). std::bad_alloc leaves
  //! nothing counted.
  void flag_wait(api::stream_t waiting, const std::atomic<std::uint64_t>* word,
                 std::uint64_t value);

  //! Before enqueueing a hold: waits until no signal-path enqueue is in progress.
  void before_hold() const noexcept {
    while (signals_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  }

  //! For a batch of the stream `own`, counted by stream_holds(): true when no
  //! other stream of the device holds for the host; the signal enqueue is then
  //! in progress until end_signal(). Takes the lock only while flag waits are
  //! counted (to drop those that passed).
  bool begin_signal(api::stream_t own) noexcept;
  void end_signal() noexcept { signals_.fetch_sub(1, std::memory_order_seq_cst); }

 private:
  //! Drops the flag waits that passed; whether one of another stream than
  //! `own` is left.
  bool others_wait(api::stream_t own) noexcept;

  std::atomic<int> holding_{0};  // streams with a pending host-function batch
  std::atomic<int> waits_{0};    // flag waits counted (changed under m_)
  std::atomic<int> signals_{0};  // signal-path enqueues in progress
  std::mutex m_;
  struct flag_entry {
    api::stream_t waiting;
    const std::atomic<std::uint64_t>* word;
    std::uint64_t value;
  };
  std::vector<flag_entry> flags_;  // under m_
};

//! A batch of s was enqueued (or is about to be): s holds for the host until
//! its gate opens. Its device's count of holding streams changes with s's
//! first pending batch (stream_state::hold_m).
void announce_batch_hold(stream_state& s) noexcept;
//! A batch of s opened its gate, or was never enqueued.
void release_batch_hold(stream_state& s) noexcept;

}  // namespace sluice::detail
