// The engine thread: one per process starts every batch (through its
// communicator's transport: mpi/, nccl/), tests it, and releases the batch's
// streams (their flag) when it completes, fails or times out. No sluice
// worker and no vendor callback ever makes a blocking MPI call (docs/comm.md
// "How it works"). Below: the thread, its inbox and its loop, then what it
// does to a batch, from taken to finished: queued per stream until every
// stream it waits on got there (its arrival flags or events), collectives
// started in the order they were enqueued on this rank (a small collective
// chained to the one before it on its stream even before: docs/comm.md
// "Back-to-back collectives"), posted and tested through its communicator's
// transport, failed when it times out, its streams released. It calls only
// the transports.
#include "comm/engine_thread.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/impl/event_pool.hpp"
#include "comm/impl/failure.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mpi/types.hpp"
#include "comm/mutation.hpp"
#include "comm/nccl/transport.hpp"
#include "settings.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <variant>
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
      if (peers_lost() != lost_seen_) {  // those done now finish in the next pass
        fail_lost();
        moved = true;
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

bool engine_thread::advance_streams(bool stop) {
  bool moved = false;
  for (std::size_t i = 0; i < streams_.size();) {
    auto& waiting = streams_[i].waiting;
    while (!waiting.empty()) {
      auto [b, k] = waiting.front();
      const bool here = b->arrival_events.empty()
                            ? b->arrivals[k].flag->load() >= b->arrivals[k].value
                            : event_ready(b->arrival_events[k]);
      if (!stop && !here) {
        if (b->sizes_posted && !b->verdict_given) nccl::early_verdict(*b);
        if (start_early(streams_[i])) moved = true;
        break;
      }
      waiting.pop_front();
      --waiting_batches_;
      moved = true;
      if (b->streams.size() == 1 && b->collective != 0 && b->messages.size() == 1) {
        streams_[i].written = b->messages.front().out;
        streams_[i].written_bytes = mpi::written_by(*b->comm, b->messages.front());
      } else {
        streams_[i].written = nullptr;  // (the next batch is not chained to it)
        streams_[i].written_bytes = 0;
      }
      if (b->early) {  // started before: finished now if its messages completed
        b->here = true;
        if (b->completed)
          finish(b);
        else if (!stop && !mutation::is(mutation::kind::early_deadline))  // it counts from here
          b->deadline = deadline();
        continue;
      }
      if (++b->arrived < b->streams.size()) continue;
      for (sluice::event* e : b->arrival_events) return_event(e);
      b->arrival_events.clear();
      if (stop) {
        for (auto& m : b->messages)  // nccl: its size exchange, posted when taken
          if (std::holds_alternative<nccl::message_state>(m.transport)) nccl::cancel(m, cancelled_);
        b->failure = "MPI_Finalize was called before it could start";
        finish(b);
      } else {
        order(b);
      }
    }
    // An empty queue is kept for the stream's next operation (its memory
    // with it) unless there are many.
    if (waiting.empty() && streams_.size() > 64) {
      streams_[i] = std::move(streams_.back());
      streams_.pop_back();
    } else {
      ++i;
    }
  }
  return moved;
}

void engine_thread::take(batch* b) {
  // nccl: the size exchange of its sends and receives goes out now, in
  // enqueue order, not once the streams got there (sizes are known when
  // enqueued, and no data moves): the receiver usually has its verdict before
  // its stream reaches the wait for it (early_verdict), instead of a round
  // trip through both engines after the stream got there. The timeout still
  // counts from there (start).
  // (An MPI error here fails the batch as any nccl failure: reported on its
  // streams, the NCCL communicator aborted; start() then finishes it.)
  if (b->comm->kind == engine::nccl && b->failure.empty()) nccl::post_size_exchange(*b);
  for (std::size_t k = 0; k < b->streams.size(); ++k) {
    auto it = std::find_if(streams_.begin(), streams_.end(),
                           [&](const stream_queue& q) { return q.stream == b->streams[k]; });
    if (it == streams_.end()) it = streams_.insert(streams_.end(), stream_queue{b->streams[k], {}});
    it->waiting.emplace_back(b, k);
    ++waiting_batches_;
    // Batches reach the engine in their streams' order: the queue's last one
    // is the one before b on its stream.
    const bool single = b->streams.size() == 1;
    b->chained =
        single && b->collective != 0 && it->last_collective && it->last_comm == b->comm.get() &&
        b->enqueued_from != sluice::detail::unknown_count && b->enqueued_from == it->enqueued_to;
    it->last_comm = b->comm.get();
    it->last_collective = single && b->collective != 0;
    it->enqueued_to = single ? b->enqueued_to : sluice::detail::unknown_count;
  }
}

std::atomic<unsigned long long> engine_thread::started_early_{0};

unsigned long long operations_started_early() noexcept {
  return engine_thread::started_early_.load(std::memory_order_relaxed);
}

// Back-to-back collectives (docs/comm.md): the first batches of queue q that
// have not got there yet, in order, start now when each is a small
// all_reduce or all_gather (it reads `in` when posted and writes `out` when
// finished, in its stream's order: finish_small) chained to the collective
// before it (the same communicator, nothing enqueued between on the stream),
// it is its communicator's next collective (collectives start in enqueue
// order), and its `in` is nothing that one still in flight before it writes.
// Neither deadlocks nor completes what would not otherwise: every rank's
// part of such a collective needs every rank's part of it, so every rank has
// started the collective before it (docs/comm.md says why only these).
bool engine_thread::start_early(stream_queue& q) {
  if (mutation::is(mutation::kind::one_at_a_time)) return false;  // it finishes what it starts
  const bool unchecked = mutation::is(mutation::kind::chain_unchecked);
  bool started = false;
  std::size_t seen = 0;
  for (auto& [b, k] : q.waiting) {
    if (++seen > early_window) break;
    if (b->early) continue;
    auto& c = *b->comm;
    if (!(b->chained || unchecked) || c.kind != engine::mpi || !b->failure.empty() ||
        b->collective != c.next_collective || !c.waiting.empty() || !mpi::through_scratch(c, *b))
      break;
    const message& m = b->messages.front();
    const std::size_t bytes = bytes_of(m);
    bool reads_written = overlap(m.in, bytes, q.written, q.written_bytes);
    for (auto& [before, j] : q.waiting) {
      if (before == b) break;
      reads_written = reads_written || overlap(m.in, bytes, before->messages.front().out,
                                               mpi::written_by(c, before->messages.front()));
    }
    if (reads_written && !unchecked) break;
    ++c.next_collective;
    b->early = true;
    start(b);
    if (!mutation::is(mutation::kind::early_deadline))
      b->deadline = clock::time_point::max();  // it counts once its stream gets there
    started_early_.fetch_add(1, std::memory_order_relaxed);
    started = true;
  }
  return started;
}

void engine_thread::order(batch* b) {
  if (b->collective == 0 || mutation::is(mutation::kind::collectives_unordered)) {
    start(b);
    return;
  }
  // Collectives start in the order they were enqueued on this rank, whichever
  // stream reaches its own first (MPI matches them by order).
  auto& c = *b->comm;
  if (b->collective == c.next_collective && c.waiting.empty()) {
    // Its turn, nothing parked behind it (the usual case): no map node, no
    // allocation on the engine thread per collective.
    ++c.next_collective;
    start(b);
    return;
  }
  c.waiting.emplace(b->collective, b);
  for (auto it = c.waiting.find(c.next_collective); it != c.waiting.end();
       it = c.waiting.find(c.next_collective)) {
    batch* next = it->second;
    c.waiting.erase(it);
    ++c.next_collective;
    start(next);
  }
  if (c.waiting.empty())
    parked_.erase(&c);
  else
    parked_.insert(&c);
}

clock::time_point engine_thread::deadline() const noexcept {
  return mutation::is(mutation::kind::no_timeout) ? clock::time_point::max()
                                                  : now_ + std::chrono::seconds(timeout_s_);
}

void engine_thread::start(batch* b) {
  if (!b->failure.empty()) {  // not on every stream (enqueue.cpp): never started
    finish(b);
    return;
  }
  auto& c = *b->comm;
  b->deadline = deadline();
  const bool nccl = c.kind == engine::nccl;
  // Enqueued before its communicator lost a peer of it: fails now, unposted.
  const bool lost = c.any_lost.load(std::memory_order_acquire);
  for (auto& m : b->messages) {
    if (lost) {
      std::string why = lost_reason(c, m);
      if (!why.empty()) {
        if (nccl) {  // its size exchange (posted when taken) goes; its kernels end with the abort
          nccl::cancel(m, cancelled_);
          b->deadline = clock::time_point::min();  // failed in the next pass, as a timeout is
        }
        fail_message(*b, m, ": not started: " + why);
        continue;
      }
    }
    if (b->sizes_posted) continue;
    const int code = nccl ? nccl::post_sizes(c, m) : mpi_.start(c, *b, m);
    if (code != MPI_SUCCESS) fail_with_peer(*b, m, " could not start: " + mpi::error_text(code));
  }
  if (mutation::is(mutation::kind::one_at_a_time)) {
    while (!poll(*b) && clock::now() < b->deadline) {
    }
    if (!poll(*b)) fail_expired(*b);
    finish(b);
    return;
  }
  active_.push_back(b);
}

bool engine_thread::poll(batch& b) {
  return b.comm->kind == engine::nccl ? nccl::poll(b) : mpi_.poll(b);
}

void engine_thread::fail_expired(batch& b) {
  std::string waiting;
  const bool nccl = b.comm->kind == engine::nccl;
  const std::string timed_out =
      ": no answer within SLUICE_COMM_TIMEOUT_S=" + std::to_string(timeout_s_) + " s";
  const bool finalized = stopping_.load();
  for (auto& m : b.messages) {
    if (m.done && !nccl) continue;  // nccl: every message waits for NCCL's kernel
    if (!waiting.empty()) waiting += ", ";
    waiting += m.describe();
    if (std::holds_alternative<nccl::message_state>(m.transport))
      nccl::cancel(m, cancelled_);
    else
      mpi_.cancel(b, m);
    // Its peer did not answer: lost for the communicator (not at MPI_Finalize).
    if (!m.done && !finalized) lose_peer(b, m, timed_out);
    m.done = true;
  }
  if (b.failure.empty()) b.failure = timed_out.substr(2) + ": " + waiting;
  // The NCCL kernels that wait for the peer end only with the communicator.
  if (nccl) nccl::fail_batch(b, b.failure);
}

void engine_thread::fail_lost() {
  lost_seen_ = peers_lost();
  for (batch* b : active_) {
    auto& c = *b->comm;
    if (!c.any_lost.load(std::memory_order_acquire)) continue;
    const bool nccl = c.kind == engine::nccl;
    for (auto& m : b->messages) {
      if (m.done && !nccl) continue;  // nccl: every message waits for NCCL's kernel
      const std::string why = lost_reason(c, m);
      if (why.empty()) continue;
      if (nccl) {  // its kernels end with the aborted NCCL communicators
        nccl::cancel(m, cancelled_);
        b->deadline = clock::time_point::min();  // failed in the next pass, as a timeout is
      } else {
        mpi_.cancel(*b, m);
      }
      fail_message(*b, m, ": given up: " + why);
    }
  }
}

void engine_thread::finish(batch* b) noexcept {
  if (b->comm->kind == engine::nccl) nccl::closed(*b);  // an abort from now on leaves it alone
  if (b->failure.empty()) mpi::finish_small_collectives(*b);
  report_failure(*b);
  for (const flag_lease& d : b->piece_done) d.flag->store(d.value);  // every piece's copy out
  b->lease.flag->store(b->lease.value);                              // the streams go on
  recycle(b);  // with its flags (one its stream has not stored yet is retired there)
}

}  // namespace sluice::comm::detail
