// Joining a host-function batch (joins.hpp): the enqueuing thread pushes
// the function on the open batch's list, the runner takes the list and closes
// the batch.
#include "host_func/joins.hpp"

#include "host_func/batch.hpp"
#include "host_func/word_watch.hpp"
#include "stream_state.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace sluice::detail {

namespace {

//! How long a batch whose functions were joined while it ran waits for one
//! more before it closes (run_joined_functions).
constexpr std::chrono::microseconds join_wait{2};
//! While functions are being joined to a running batch, its runner lets the
//! enqueuing thread finish before it takes them, up to join_defer: taking and
//! running them meanwhile contends with that thread for the list's cache line
//! and for the allocator (each function's memory freed on the runner while
//! the enqueuing thread allocates the next one). Measured on 2x H100, 100
//! back-to-back host functions: 381 and 295 ns each with the runner taking
//! them under a lock, 185-233 ns without the lock, 136 ns on the vendor
//! callback, whose runner starts after them. The runner looks every
//! join_look_gap: the enqueuing thread has paused when the list did not change
//! between two looks.
constexpr std::chrono::microseconds join_defer{20};
constexpr std::chrono::nanoseconds join_look_gap{1000};

//! Spins (no shared memory read) until `gap` has passed.
void pause_for(std::chrono::nanoseconds gap) noexcept {
  const auto until = std::chrono::steady_clock::now() + gap;
  while (std::chrono::steady_clock::now() < until) word_watch::cpu_relax();
}

//! The end of a closed batch's list: no function joins it any more.
struct closed_marker final : host_task {
  void run() override {}
};
closed_marker closed_tag;
host_task* closed_batch() noexcept { return &closed_tag; }

}  // namespace

bool join_open_batch(stream_state& s, std::unique_ptr<host_task>& task) noexcept {
  if (!s.native_escaped.load(std::memory_order_relaxed)) {
    // Join the batch of the host function enqueued just before, if it is still
    // running or waiting: its gate opens only after this one has run too.
    // `joining` keeps the batch from being freed meanwhile (run_host_batch).
    s.joining.store(true, std::memory_order_seq_cst);
    if (host_batch* open = s.open_batch.load(std::memory_order_seq_cst)) {
      host_task* head = open->joins.load(std::memory_order_relaxed);
      while (head != closed_batch()) {
        task->next = head;
        if (open->joins.compare_exchange_weak(head, task.get(), std::memory_order_release,
                                              std::memory_order_relaxed)) {
          (void)task.release();  // the runner's now
          s.joining.store(false, std::memory_order_release);
          return true;
        }
      }
      task->next = nullptr;
    }
    s.joining.store(false, std::memory_order_release);
  }
  return false;
}

void run_joined_functions(host_batch* batch) noexcept {
  // Then the functions that joined, in the order they were enqueued. A batch
  // that ran one function alone closes at once (the next host function is
  // not in sight); one that was joined waits up to join_wait for more, so that
  // back-to-back host functions keep joining one batch (an enqueue of about
  // 100 ns) instead of each starting one (a stream operation).
  std::uint32_t joined = 0;  // functions that joined and ran
  bool waited_for_joins = false;
  host_task* seen = nullptr;  // the list at the last look, while deferring
  std::chrono::steady_clock::time_point deferred_since;
  for (;;) {
    host_task* list = batch->joins.load(std::memory_order_relaxed);
    if (list == nullptr) {
      if (joined == 0 || waited_for_joins) {
        // Closed: later host functions start a batch of their own.
        if (batch->joins.compare_exchange_strong(list, closed_batch(), std::memory_order_acquire,
                                                 std::memory_order_relaxed))
          break;
      } else {
        waited_for_joins = true;
        for (std::chrono::nanoseconds waited{0}; waited < join_wait; waited += join_look_gap) {
          pause_for(join_look_gap);
          if (batch->joins.load(std::memory_order_relaxed) != nullptr) break;
        }
      }
      continue;
    }
    // Functions wait. Still being added to (a push changes the list's head:
    // the new function's address, never the head's at the last look)? Let
    // the enqueuing thread finish first, up to join_defer (above).
    if (list != seen) {
      const auto now = std::chrono::steady_clock::now();
      if (seen == nullptr) deferred_since = now;
      if (now - deferred_since < join_defer) {
        seen = list;
        pause_for(join_look_gap);
        continue;
      }
    }
    seen = nullptr;
    list = batch->joins.exchange(nullptr, std::memory_order_acquire);
    waited_for_joins = false;
    host_task* in_order = nullptr;  // the list reversed: oldest first
    while (list != nullptr) {
      host_task* next = list->next;
      list->next = in_order;
      in_order = list;
      list = next;
    }
    while (in_order != nullptr) {
      std::unique_ptr<host_task> task(in_order);
      in_order = in_order->next;
      run_batch_task(*batch->stream, std::move(task));
      ++joined;
    }
  }
}

}  // namespace sluice::detail
