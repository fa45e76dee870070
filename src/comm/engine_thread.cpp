// The engine thread: one per process starts every batch (through its
// communicator's transport: mpi/, nccl/), tests it, and releases the batch's
// streams (their flag) when it completes, fails or times out. No sluice
// worker and no vendor callback ever makes a blocking MPI call (docs/comm.md
// "How it works"). This file: the thread, its inbox and its loop; what it
// does to a batch: engine_batches.cpp.
#include "comm/engine_thread.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mutation.hpp"
#include "comm/nccl/transport.hpp"
#include "settings.hpp"

#include <sluice/error.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::comm::detail {

namespace {
using clock = std::chrono::steady_clock;
}  // namespace

std::unique_lock<std::mutex> engine_thread::mpi_guard() {
  static auto* m = new std::mutex;
  static const bool serialize = [] {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided < MPI_THREAD_MULTIPLE;
  }();
  return serialize ? std::unique_lock<std::mutex>(*m) : std::unique_lock<std::mutex>();
}

engine_thread& engine_thread::get() {
  static engine_thread* engine = new engine_thread;  // stopped by MPI_Finalize, never destroyed
  return *engine;
}

engine_thread::engine_thread() : timeout_s_(sluice::detail::settings::comm_timeout_s()) {
  // MPI_Finalize deletes MPI_COMM_SELF's attributes first: the engine stops
  // there, failing what is still pending, before MPI goes away.
  int key = MPI_KEYVAL_INVALID;
  {
    auto lock = mpi_guard();
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &engine_thread::on_finalize, &key, this) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, key, this) != MPI_SUCCESS)
      throw error(errc::comm_failure,
                  "sluice::comm: could not register the engine's stop with MPI_Finalize", 0,
                  "MPI_Comm_set_attr");
  }
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    throw error(errc::comm_failure,
                std::string("sluice::comm: could not start the engine thread: ") + e.what(), 0,
                "sluice::comm::communicator");
  }
}

int engine_thread::on_finalize(MPI_Comm, int, void*, void* self) {
  static_cast<engine_thread*>(self)->shut_down();
  return MPI_SUCCESS;
}

void engine_thread::shut_down() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_.exchange(true)) return;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // nccl: no NCCL call still running on a thread of its own when MPI (and
  // then the process) ends; one that outlives the timeout is left to it.
  nccl::settle_lanes(std::chrono::seconds(timeout_s_));
}

std::mutex& engine_thread::enqueue_order() noexcept {
  static auto* m = new std::mutex;
  return *m;
}

namespace {
// The inbox once the engine stopped: submit() refuses from then on.
batch* closed_inbox() noexcept {
  static batch marker;
  return &marker;
}
}  // namespace

void engine_thread::submit(batch* b) noexcept {
  batch* head = inbox_.load();
  do {
    if (head == closed_inbox()) {
      b->failure = "MPI_Finalize was called before it could start";
      finish(b);
      return;
    }
    b->next = head;
  } while (!inbox_.compare_exchange_weak(head, b));
  // seq_cst with the engine's sleeping_ store and inbox_ load: either it sees
  // this batch before it waits, or this sees it waiting.
  if (sleeping_.load()) {
    std::lock_guard<std::mutex> lock(m_);
    cv_.notify_one();
  }
}

batch* engine_thread::take_inbox(bool close) noexcept {
  // Most passes find it empty: a load, not an exchange that takes the cache
  // line from an enqueuing thread.
  if (!close && inbox_.load(std::memory_order_relaxed) == nullptr) return nullptr;
  batch* newest = inbox_.exchange(close ? closed_inbox() : nullptr);
  if (newest == closed_inbox()) return nullptr;
  batch* oldest = nullptr;
  while (newest != nullptr) oldest = std::exchange(newest, std::exchange(newest->next, oldest));
  return oldest;
}

namespace {
thread_local bool on_engine_thread = false;
}

bool engine_thread::on_engine_thread() noexcept { return detail::on_engine_thread; }

void engine_thread::run() {
  detail::on_engine_thread = true;
  now_ = clock::now();
  clock::time_point idle_since{};
  unsigned idle_passes = 0;
  unsigned deadline_passes = 0;
  bool slow = false;  // no progress for 200 us: poll every 50 us
  for (;;) {
    // Nothing to do: sleep, but only once 200 us passed without progress
    // (`slow`): a thread that enqueues one operation at a time, each after
    // the engine finished the one before, would otherwise wake it (a futex
    // wake and a context switch) per operation.
    if (slow && active_.empty() && cancelled_.empty() && mpi_.idle() && waiting_batches_ == 0 &&
        inbox_.load() == nullptr) {
      std::unique_lock<std::mutex> lock(m_);
      sleeping_.store(true);
      cv_.wait(lock, [&] { return inbox_.load() != nullptr || stopping_.load(); });
      sleeping_.store(false);
      now_ = clock::now();
    }
    const bool stop = stopping_.load();
    batch* incoming = take_inbox(stop);
    bool moved = false;
    {
      auto mpi_lock = mpi_guard();
      while (incoming != nullptr) {
        batch* b = std::exchange(incoming, incoming->next);
        moved = true;
        if (mutation::is(mutation::kind::post_at_enqueue)) {
          order(b);  // the mutation: started before its streams get there
          continue;
        }
        take(b);
      }
      if (advance_streams(stop)) moved = true;
      // Deadlines are seconds: the clock is read every 32nd pass (and after
      // a sleep); a batch's deadline counts from that reading.
      const bool check_deadlines = stop || slow || (++deadline_passes & 31U) == 0;
      if (check_deadlines) now_ = clock::now();
      mpi_.look_across = check_deadlines;
      bool finished = false;
      for (std::size_t i = 0; i < active_.size();) {
        batch* b = active_[i];
        bool done = poll(*b);
        if (!done && check_deadlines && (stop || now_ >= b->deadline)) {
          if (stop && b->failure.empty())
            b->failure = "MPI_Finalize was called while it was pending";
          fail_expired(*b);
          done = true;
        }
        if (done) {
          active_[i] = active_.back();
          active_.pop_back();
          if (b->early && !b->here) {  // finished once its stream gets there
            b->completed = true;
            moved = true;
            continue;
          }
          finish(b);
          moved = true;
          finished = true;
        } else {
          ++i;
        }
      }
      // A finished operation may have let its stream reach the next one (the
      // host backend runs a stream's flag ops on the thread that stores the
      // flag): start it in this pass.
      if (finished && !stop) advance_streams(false);
      mpi_.drain_refused(stop);
      cancelled_.test(stop);
    }
    if (stop) {
      // Collectives that never got their turn: their streams go on, failed.
      // (A communicator with waiting batches is alive: they hold it.)
      std::vector<batch*> never_started;
      for (communicator_state* c : parked_)
        for (auto& [place, b] : c->waiting) never_started.push_back(b);
      parked_.clear();
      for (batch* b : never_started) {
        b->comm->waiting.erase(b->collective);
        b->failure = "MPI_Finalize was called before an earlier collective of this rank started";
        finish(b);
      }
      return;
    }
    // Spin while messages move, then poll gently: latency when busy, little
    // CPU when a peer is slow (docs/comm.md states the bound). After progress
    // look again at once: a finished operation may have let its stream reach
    // the next one (the host backend runs flag ops on the thread that stores
    // the flag).
    if (moved) {
      idle_passes = 0;
      slow = false;
      continue;
    }
    if (slow) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    // Spin as a blocking MPI call would, reading the clock and giving the CPU
    // away every 64 passes (a 2-core machine: the thread that makes the next
    // move may need it). MPI moves a message only while it is tested: with
    // requests in flight the engine keeps testing (a large message takes
    // milliseconds to seconds without completing) and slows down only after
    // 1 s without a completion (a late peer); with none, 200 us after the last
    // progress (streams still on their way to an operation).
    if ((++idle_passes & 63U) != 0) continue;
    const auto now = clock::now();
    const auto patience =
        active_.empty() ? std::chrono::microseconds(200) : std::chrono::microseconds(1000000);
    if (idle_passes == 64)
      idle_since = now;
    else if (now - idle_since >= patience)
      slow = true;
    std::this_thread::yield();
  }
}

}  // namespace sluice::comm::detail
