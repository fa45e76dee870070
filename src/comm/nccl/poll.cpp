// The nccl engine thread's watch of a batch: its sizes matched (the verdict
// a gated stream waits for), its done events, NCCL's asynchronous error; a
// failure reported on the streams before the NCCL communicator is aborted.
#include "comm/impl/event_pool.hpp"
#include "comm/impl/failure.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/types.hpp"
#include "comm/nccl/transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <mutex>
#include <string>

namespace sluice::comm::detail::nccl {

void opened(batch& b) {
  auto& c = *b.comm;
  std::lock_guard<std::mutex> lock(c.open_m);
  c.nccl_open.push_back(&b);
}

void closed(batch& b) noexcept {
  auto& c = *b.comm;
  std::lock_guard<std::mutex> lock(c.open_m);
  // Batches finish about in the order they opened: found near the front.
  const auto at = std::find(c.nccl_open.begin(), c.nccl_open.end(), &b);
  if (at != c.nccl_open.end()) c.nccl_open.erase(at);
}

void fail_open(communicator_state& c) noexcept {
  std::lock_guard<std::mutex> lock(c.open_m);
  for (batch* b : c.nccl_open)
    if (b->failed) b->failed->store(true);
}

void fail_batch(batch& b, const std::string& why) noexcept {
  report_failure(b);  // before the abort lets its streams go on
  abort_lanes(*b.comm, "rank " + std::to_string(b.comm->rank) + ": " + why);
}

bool poll(batch& b) {
  auto& c = *b.comm;
  bool all_done = true;
  for (auto& m : b.messages) {
    if (m.done) continue;
    int code = MPI_SUCCESS;
    const bool known = sizes_known(m, code);
    if (code != MPI_SUCCESS) {
      fail_message(b, m, ": the size exchange failed: " + mpi::error_text(code));
      fail_batch(b, b.failure);
      continue;
    }
    if (!known) {
      all_done = false;
      continue;
    }
    m.done = true;
    const message_state& s = nccl_state(m);
    if (m.kind == op_kind::recv && s.peer_bytes != s.own_bytes && b.failure.empty()) {
      b.failure = m.describe() + ": the matching send had " + std::to_string(s.peer_bytes) +
                  " bytes (a receive must be exactly as large as its send; the NCCL "
                  "communicator is aborted)";
      // NCCL would wait for bytes that never come (or room that is never
      // given): its kernels end only when the communicator is aborted.
      fail_batch(b, b.failure);
    }
  }
  // Every size is known and matched: the verdict is given now, before
  // NCCL's kernels are done, so that a gated stream does not wait for the
  // engine to see them done as well (a host round trip per receive). The
  // lease is past NCCL's calls and the done events on the streams: no
  // stream goes on before its kernels end. A failure found later (NCCL's
  // own, a timeout) is reported on the streams before the abort lets the
  // kernels end (fail_batch), as for an ungated batch.
  if (all_done && b.gated && !b.verdict_given && b.failure.empty()) {
    b.verdict_given = true;
    b.lease.flag->store(b.lease.value);
  }
  for (sluice::event* d : b.done_events)
    if (!event_ready(d)) all_done = false;
  if (all_done && c.nccl.empty() && b.failure.empty())
    // Aborted (by another operation's failure) while this one was in flight:
    // its kernels ended, maybe without the data.
    b.failure = "the NCCL communicator was aborted meanwhile (" + c.nccl_failure + ")";
  if (!all_done) {
    const std::string why = async_error(c);
    if (!why.empty()) {
      if (b.failure.empty()) b.failure = "NCCL failed: " + why;
      fail_batch(b, why);
    }
  }
  return all_done;
}

void cancel(message& m, cancelled_requests& cancelled) {
  message_state& s = nccl_state(m);
  cancelled.cancel(s.size_sent);
  cancelled.cancel(s.size_received);
}

}  // namespace sluice::comm::detail::nccl
