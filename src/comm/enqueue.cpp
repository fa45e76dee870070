// sluice::comm puts each operation on its stream(s) as two steps: the
// stream's arrival (a flag it stores, or for nccl an event, behind the work
// before it), then a wait on a flag that the engine thread stores when the
// operation is done (COMM-1..3); staging copies around them. The engine
// thread does the rest: this file only enqueues and submits.
#include "comm/enqueue.hpp"

#include "comm/engine_thread.hpp"
#include "comm/impl/communicator_state.hpp"
#include "comm/impl/event_pool.hpp"
#include "comm/impl/staging.hpp"
#include "comm/mutation.hpp"
#include "comm/nccl/transport.hpp"
#include "comm/staging_plan.hpp"
#include "comm/trace_span.hpp"
#include "trace.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/memory.hpp>
#include <sluice/trace.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::comm::detail {

namespace {

// What one stream does for a batch: copies in, tells the engine it got there
// (its arrival flag: no host function, no thread on the way), waits for the
// batch, copies out, and hands the staging slots back behind that. A span's
// begin marker goes just before the arrival, its end marker just after the
// wait (both timed like any operation of the stream).
// (nccl: host buffers, copied by a host task on the stream; a result only
// when the batch did not fail: a failed receive leaves its buffer alone.)
void stage_copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                const std::shared_ptr<std::atomic<bool>>& failed) {
  if (failed)
    s.host_func([dst, src, bytes, failed] {
      if (!failed->load()) std::memcpy(dst, src, bytes);
    });
  else
    sluice::copy(s, dst, src, bytes);
}

// (In pieces, mpi engine: the copy of piece j in, then its arrival, for
// each piece; then per piece the wait for its done flag and its copy out.
// The span begins at the first arrival and ends after the last wait.)
void enqueue_on(stream_ref s, std::size_t index, const std::vector<message>& messages,
                const flag_lease* arrival, sluice::event* arrival_event,
                const std::shared_ptr<std::atomic<bool>>& host, const span& sp,
                std::size_t piece = 0) {
  for (const message& m : messages)
    if (m.stream == index && m.stage_in.device != nullptr) {
      const byte_range r = piece_range(m, m.stage_in.bytes, piece);
      if (r.length != 0)
        stage_copy(s, static_cast<char*>(m.stage_in.pinned) + r.offset,
                   static_cast<const char*>(m.stage_in.device) + r.offset, r.length, host);
    }
  if (sp.id != 0) sluice::detail::enqueue_trace_marker(s, sp.name, true, sp.id);
  if (arrival_event != nullptr)
    arrival_event->record(s);
  else
    s.write_value(*arrival->flag, arrival->value);
}

void finish_on(stream_ref s, std::size_t index, const std::vector<message>& messages,
               const std::shared_ptr<std::atomic<bool>>& host, const span& sp,
               std::size_t piece = 0, bool last = true) {
  if (sp.id != 0) sluice::detail::enqueue_trace_marker(s, sp.name, false, sp.id);
  for (const message& m : messages)
    if (m.stream == index && m.stage_out.device != nullptr) {
      const byte_range r = piece_range(m, m.stage_out.bytes, piece);
      if (r.length != 0)
        stage_copy(s, static_cast<char*>(m.stage_out.device) + r.offset,
                   static_cast<const char*>(m.stage_out.pinned) + r.offset, r.length, host);
    }
  if (!last) return;
  for (const message& m : messages)
    if (m.stream == index) {
      release_staging_after(m.stage_in.slot, s);
      release_staging_after(m.stage_out.slot, s);
    }
}

}  // namespace

// Puts b on its streams, then hands it to the engine, which frees it when
// done. Nothing was enqueued when this throws before any stream has it.
void enqueue(batch_ptr b) {
  engine_thread::get();  // the engine runs before anything is enqueued
  plan_pieces(*b);
  stage(*b);
  b->lease = b->next_flag(0);
  // nccl: the NCCL calls go on the streams between two events, their arrival
  // and done, which the engine watches (docs/comm.md "The nccl engine"); the
  // mpi engine: an arrival flag per stream (the batch's own).
  const bool nccl = b->comm->kind == engine::nccl;
  if (nccl)  // the engine's part of each message: the nccl engine's size exchange
    for (message& m : b->messages) m.transport.emplace<nccl::message_state>();
  for (std::size_t k = 0; k < b->streams.size(); ++k)
    if (nccl)
      b->arrival_events.push_back(lease_event(b->comm->device));
    else
      b->arrivals.push_back(b->next_flag(1 + k));
  const std::size_t streams = b->streams.size();
  const std::size_t pieces = b->pieces;
  for (std::size_t i = 0; i < (pieces - 1) * streams; ++i)
    b->piece_arrivals.push_back(b->next_flag(1 + streams + i));
  for (std::size_t j = 0; j + 1 < pieces; ++j)
    b->piece_done.push_back(b->next_flag(1 + pieces * streams + j));
  if (nccl) {
    for (std::size_t j = 0; j < b->streams.size(); ++j)
      b->done_events.push_back(lease_event(b->comm->device));
    if (b->failed_spare) {  // the batch's last one, no longer shared
      b->failed = std::move(b->failed_spare);
      b->failed->store(false);
    } else {
      b->failed = std::make_shared<std::atomic<bool>>(false);
    }
    // Only a receive waits for the engine's verdict (its size against the
    // send's): the rest goes on as soon as NCCL is done, without a round trip
    // through the engine thread (about 10 us per operation on 2x H100).
    b->gated = std::any_of(b->messages.begin(), b->messages.end(),
                           [](const message& m) { return m.kind == op_kind::recv; });
  }
  std::size_t k = 0;
  std::size_t done_on = 0;  // nccl: streams that have their done flag's store
  bool waits = false;       // a stream may wait for this batch's flags: the engine must answer
  // One span per stream while a trace is collected (tracing costs one relaxed
  // load, and no allocation, while none is).
  std::vector<span> spans;
  if (sluice::tracing() && !mutation::is(mutation::kind::untraced)) spans.resize(b->streams.size());
  static const span untraced{};
  auto span_of = [&](std::size_t j) -> const span& { return spans.empty() ? untraced : spans[j]; };
  // Enqueued on the streams and submitted in one piece: the engine sees the
  // batches of each stream in that stream's order.
  std::lock_guard<std::mutex> in_order(engine_thread::enqueue_order());
  // Back-to-back collectives (mpi, one stream, nothing staged): the stream's
  // operations before and after this batch's, kept when they are exactly
  // this batch's (nobody else enqueued on the stream meanwhile).
  const bool counted = !nccl && streams == 1 && pieces == 1 &&
                       std::all_of(b->messages.begin(), b->messages.end(), [](const message& m) {
                         return m.stage_in.device == nullptr && m.stage_out.device == nullptr;
                       });
  const std::uint64_t from =
      counted ? sluice::detail::enqueued_count(b->streams[0]) : sluice::detail::unknown_count;
  try {
    for (; k < b->streams.size(); ++k) {
      if (!spans.empty()) spans[k] = open_span(*b, k);
      enqueue_on(b->streams[k], k, b->messages, nccl ? nullptr : &b->arrivals[k],
                 nccl ? b->arrival_events[k] : nullptr, b->failed, span_of(k));
      if (nccl) continue;
      for (std::size_t j = 1; j < pieces; ++j)
        enqueue_on(b->streams[k], k, b->messages, &b->piece_arrivals[(j - 1) * streams + k],
                   nullptr, b->failed, untraced, j);
      for (std::size_t j = 0; j + 1 < pieces; ++j) {
        waits = true;
        b->streams[k].wait_value(*b->piece_done[j].flag, b->piece_done[j].value);
        finish_on(b->streams[k], k, b->messages, b->failed, untraced, j, false);
      }
      waits = true;
      b->streams[k].wait_value(*b->lease.flag, b->lease.value);
      finish_on(b->streams[k], k, b->messages, b->failed, span_of(k), pieces - 1);
    }
    if (nccl) {
      nccl::opened(*b);  // (no memory: nothing of NCCL's enqueued yet)
      nccl::enqueue(*b);
      // No NCCL call was made: the staging slots hold nothing to copy out.
      if (!b->failure.empty()) b->failed->store(true);
      for (; done_on < b->streams.size(); ++done_on) {
        b->done_events[done_on]->record(b->streams[done_on]);
        if (b->gated) b->streams[done_on].wait_value(*b->lease.flag, b->lease.value);
        finish_on(b->streams[done_on], done_on, b->messages, b->failed, span_of(done_on));
      }
    }
  } catch (const std::exception& e) {
    // Events not recorded on a stream are ready: the engine sees those
    // streams as there and done.
    if (k == 0 && !waits && done_on == 0) {  // nothing the engine must answer: as if never called
      release_unused_staging(*b);
      b->arrivals.clear();  // no stream stores them: no late store to fear
      throw;                // b goes back to the pool
    }
    // Some streams have it, others not (no memory, a stream destroyed
    // meanwhile): it is released for those that have it, failed, and this
    // call says why. The others never get there: their arrivals are given.
    b->failure = std::string("it could not be enqueued on every stream: ") + e.what();
    for (std::size_t j = k; j < b->arrivals.size(); ++j)
      b->arrivals[j].flag->store(b->arrivals[j].value);  // (nccl: their events are not recorded)
    for (std::size_t i = 0; i < b->piece_arrivals.size(); ++i)
      if (i % streams >= k) b->piece_arrivals[i].flag->store(b->piece_arrivals[i].value);
    engine_thread::get().submit(b.release());
    throw;
  }
  if (from != sluice::detail::unknown_count) {
    // Its arrival and its wait, and a span's two markers while tracing.
    const std::uint64_t ours = span_of(0).id != 0 ? 4 : 2;
    const std::uint64_t to = sluice::detail::enqueued_count(b->streams[0]);
    if (to != sluice::detail::unknown_count && to - from == ours) {
      b->enqueued_from = from;
      b->enqueued_to = to;
    }
  }
  if (mutation::is(mutation::kind::enqueue_waits)) {
    const flag_lease done = b->lease;
    engine_thread::get().submit(b.release());
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (done.flag->load() < done.value && std::chrono::steady_clock::now() < end)
      std::this_thread::yield();
    return;
  }
  engine_thread::get().submit(b.release());
}

}  // namespace sluice::comm::detail
