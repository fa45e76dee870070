// How a batch of sluice::comm fails (both engines): the first failure is the
// one its streams report. A failure that waited for a peer in vain (a
// timeout, an MPI error) loses that peer for the communicator: MPI cannot
// say whether it is dead, partitioned or late, and cannot reconnect it
// (docs/comm.md "After a failure").
#include "comm/impl/failure.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/mutation.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace sluice::comm::detail {

namespace {
std::atomic<unsigned long long> lost_count{0};

bool point_to_point(const message& m) noexcept {
  return m.kind == op_kind::send || m.kind == op_kind::recv;
}
}  // namespace

void fail_message(batch& b, message& m, const std::string& what) {
  if (b.failure.empty()) b.failure = m.describe() + what;
  m.done = true;
}

void fail_with_peer(batch& b, message& m, const std::string& what) {
  fail_message(b, m, what);
  lose_peer(b, m, what);
}

void lose_peer(batch& b, const message& m, const std::string& what) noexcept {
  if (mutation::is(mutation::kind::forget_lost_peers)) return;
  auto& c = *b.comm;
  try {
    std::lock_guard<std::mutex> lock(c.m);
    if (c.lost.size() != static_cast<std::size_t>(c.size)) c.lost.assign(c.size, 0);
    if (c.lost_because.empty())
      c.lost_because = "rank " + std::to_string(c.rank) + ": " + m.describe() + what;
    for (int r = 0; r < c.size; ++r)
      if (point_to_point(m) ? r == m.peer : r != c.rank) c.lost[static_cast<std::size_t>(r)] = 1;
  } catch (...) {
    return;  // no memory: its later operations wait for their own timeouts
  }
  c.any_lost.store(true, std::memory_order_release);
  lost_count.fetch_add(1, std::memory_order_relaxed);
}

unsigned long long peers_lost() noexcept { return lost_count.load(std::memory_order_relaxed); }

std::string lost_reason(const communicator_state& c, const message& m) {
  if (!c.any_lost.load(std::memory_order_acquire)) return {};
  int lost = -1;
  for (int r = 0; r < static_cast<int>(c.lost.size()) && lost < 0; ++r)
    if (c.lost[static_cast<std::size_t>(r)] != 0 && (!point_to_point(m) || r == m.peer)) lost = r;
  if (lost < 0) return {};
  return "this communicator lost rank " + std::to_string(lost) + " after an earlier failure (" +
         c.lost_because +
         "); MPI cannot reconnect it: no operation with it, and no collective, goes on this "
         "communicator";
}

void report_failure(batch& b) noexcept {
  if (b.failure.empty() || b.reported) return;
  b.reported = true;
  if (b.failed) b.failed->store(true);
  std::string message;
  try {
    message = "sluice::comm: rank " + std::to_string(b.comm->rank) + ": " + b.describe() + ": " +
              b.failure;
  } catch (...) {
    message = "sluice::comm: an operation failed (no memory to say more)";
  }
  for (stream_ref s : b.streams) {
    try {
      sluice::detail::report_stream_failure(s, errc::comm_failure, message);
    } catch (...) {
      // The stream is gone: nobody can ask. Nothing is lost: say it here.
      std::fprintf(stderr, "sluice: %s (its stream was destroyed)\n", message.c_str());
    }
  }
}

}  // namespace sluice::comm::detail
