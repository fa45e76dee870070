// A batch of host functions on the GPU backend: back-to-back host functions
// of one stream behind one signal and one gate wait, and the runner thread
// that runs them (batch.cpp) and opens the gate. How a batch is enqueued:
// enqueue.cpp; how later functions join it: joins.cpp.
#pragma once

#include "host_func/word_watch.hpp"

#include <sluice/detail/host_task.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace sluice::detail {

struct stream_state;

//! Host functions in flight behind one signal and one gate wait: the stream
//! stores the batch's ticket into its signal word once the work before the
//! batch is done; the word watcher (word_watch.hpp) sees it and hands the
//! batch to a runner thread, which runs the functions in order and then opens
//! the gate with the ticket.
//!
//! Later host functions join the batch while it is open without a lock
//! (join_open_batch): each is pushed on `joins`, newest first, and the runner
//! takes the whole list at once (run_joined_functions). The runner closes the
//! batch by swapping an empty list for closed_batch(); a join that finds that
//! starts a batch of its own.
struct host_batch {
  std::unique_ptr<host_task> first;        // the function that started the batch
  std::atomic<host_task*> joins{nullptr};  // joined since the runner last looked
  stream_state* stream = nullptr;          // holds a reference until the gate is open
  std::uint32_t ticket = 0;
  word_watch::watch watch;      // signal >= ticket: run the batch (fire_host_batch; signal, kernel)
  const char* path = "signal";  // "kernel" (the gate kernel stores the signal), or "callback":
                                // the vendor callback hands it over (hand_over)
};

//! The watch's function (the signal and kernel paths): on a runner thread
//! (never the watcher's, never the vendor's), which may block in the user's
//! function (HOST-2) and may call sluice (HOST-3).
void fire_host_batch(void* data) noexcept;

//! The vendor callback (the callback path): no vendor calls allowed here, and
//! it runs on the vendor's one callback thread, so it only hands over (HOST-2,
//! HOST-3).
void hand_over(void* data);

//! Runs one function of a batch of s on the calling runner; what it throws is
//! recorded for HOST-4, and its captures die before later work may run.
void run_batch_task(stream_state& s, std::unique_ptr<host_task> task) noexcept;

}  // namespace sluice::detail
