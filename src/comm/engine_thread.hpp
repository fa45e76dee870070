// sluice::comm's engine thread: one per process, it takes the batches that
// enqueue.cpp put on their streams, starts each once its streams got there
// (through the transport of its communicator: mpi/transport.hpp,
// nccl/transport.hpp), and releases the streams when it completes, fails or
// times out (docs/comm.md "How it works"). Internal.
#pragma once

#include "comm/impl/batch.hpp"
#include "comm/impl/cancelled_requests.hpp"
#include "comm/mpi/transport.hpp"

#include <sluice/stream.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::comm::detail {

struct communicator_state;

//! One process-wide engine thread carries every batch (docs/comm.md).
class engine_thread {
 public:
  //! Starts the thread on first use. Throws errc::comm_failure when it cannot.
  static engine_thread& get();
  //! A batch enqueued on its streams: the engine starts it once every stream
  //! got there (its arrival flags). Never blocks, never throws.
  void submit(batch* b) noexcept;
  //! enqueue.cpp holds it from enqueueing a batch on its streams to submit():
  //! two batches of one stream reach the engine in that stream's order.
  static std::mutex& enqueue_order() noexcept;

  //! Every MPI call sluice makes holds this while MPI's thread level is below
  //! MPI_THREAD_MULTIPLE (docs/comm.md: thread levels); unlocked otherwise.
  static std::unique_lock<std::mutex> mpi_guard();
  //! True on the engine thread (which holds mpi_guard() while it calls MPI).
  static bool on_engine_thread() noexcept;

 private:
  engine_thread();
  void run();
  void start(batch* b);
  void order(batch* b);  // start, or wait for the collectives before it
  //! When an operation whose peers are awaited from now on fails
  //! (SLUICE_COMM_TIMEOUT_S after now_; never under the no_timeout mutation).
  std::chrono::steady_clock::time_point deadline() const noexcept;
  friend unsigned long long operations_started_early() noexcept;
  batch* take_inbox(bool close) noexcept;  // oldest first
  bool advance_streams(bool stop);         // true when a stream got somewhere
  void take(batch* b);                     // an enqueued batch into its streams' queues
  bool poll(batch& b);                     // true when every message completed
  void finish(batch* b) noexcept;
  void fail_expired(batch& b);
  // A peer was lost (docs/comm.md "After a failure"): what is in flight with
  // it fails now, not at its own timeout (mpi engine; nccl aborts instead).
  void fail_lost();
  unsigned long long lost_seen_ = 0;  // peers_lost() when fail_lost() last ran
  void shut_down() noexcept;
  static int on_finalize(MPI_Comm, int, void*, void*);

  int timeout_s_;  // SLUICE_COMM_TIMEOUT_S: seconds an operation may wait for its peers
  std::chrono::steady_clock::time_point now_{};  // the engine's last clock reading
  // Enqueued batches, newest first (a lock-free stack: an enqueuing thread
  // never waits for the engine); closed_inbox() once the engine stopped.
  std::atomic<batch*> inbox_{nullptr};
  std::atomic<bool> sleeping_{false};  // the engine waits on cv_ (under m_)
  std::atomic<bool> stopping_{false};
  std::mutex m_;
  std::condition_variable cv_;
  // The thread's own. Batches not started yet, per stream in that stream's
  // order (enqueue.cpp enqueues and submits under one lock): only the first
  // of each stream can have arrived, so a pass looks at one flag per stream.
  struct stream_queue {
    stream_ref stream;
    std::deque<std::pair<batch*, std::size_t>> waiting;  // batch, its index of the stream
    // The batch taken last (take()): its communicator, whether it was a
    // collective, the stream's operations after it (what `chained` compares).
    const communicator_state* last_comm = nullptr;
    bool last_collective = false;
    std::uint64_t enqueued_to = ~std::uint64_t{0};
    // What the batch that got there last writes (it may still be in flight):
    // a collective started early must not read it.
    const void* written = nullptr;
    std::size_t written_bytes = 0;
  };
  // A small all_reduce or all_gather whose stream's operation before it is a
  // collective of its communicator, with nothing enqueued between, starts
  // while that one is in flight (docs/comm.md "Back-to-back collectives"):
  // at most this many of a stream at once.
  static constexpr std::size_t early_window = 16;
  bool start_early(stream_queue& q);  // true when it started one
  static std::atomic<unsigned long long> started_early_;
  std::vector<stream_queue> streams_;
  std::size_t waiting_batches_ = 0;  // entries in streams_
  std::vector<batch*> active_;
  cancelled_requests cancelled_;  // timed-out requests not yet completed (both transports')
  mpi::transport mpi_{cancelled_};
  std::set<communicator_state*> parked_;  // those with collectives waiting for their turn
  std::thread thread_;
};

}  // namespace sluice::comm::detail
