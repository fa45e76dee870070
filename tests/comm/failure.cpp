// COMM-7 after a failure (docs/comm.md "After a failure"): a rank that stops
// answering without dying (rank 1 here never posts its send or receive: from
// the others' view a partition) is lost for the communicator. What was
// enqueued behind the failed operation fails when its stream gets there, what
// is in flight with that peer fails with it, and every later call with that
// peer, and every collective, is refused at enqueue: each an error, none
// dropped, none waiting for another timeout.
#include "comm_test.hpp"

#include <sluice/comm.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace sluice::conformance {
namespace {

using sluice::comm::communicator;
using sluice::comm::reduce_op;

// Every comm_failure that s reports, joined (ready() reports them as
// synchronize() does: those that came together in one message, later ones at
// the next call), until s is ready; a failure of another kind, or s still
// waiting at `until`, is a test failure (no hang).
std::string comm_failures_of(const stream& s, clock::time_point until) {
  std::string seen;
  const bool ready = eventually(
      [&] {
        try {
          return s.ready();
        } catch (const sluice::error& e) {
          EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
          seen += std::string(e.what()) + "\n";
          return false;
        }
      },
      until - clock::now());
  if (!ready) ADD_FAILURE() << "the stream still waits; it reported: " << seen;
  return seen;
}

bool names(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Rank 0 waits for rank 1, which never answers (it skips its sends): its
// receive fails with errc::comm_failure within SLUICE_COMM_TIMEOUT_S, naming
// rank 1, reported once, while a third stream keeps working; the stream goes
// on after it. In detail: A (4 bytes) and, behind it on
// the same stream, B (8 bytes) and an all_reduce; on another stream D (12
// bytes), enqueued at 0.6 T (T: SLUICE_COMM_TIMEOUT_S), whose own timeout
// would come at 1.6 T. A fails at T; B, the all_reduce and D must fail then
// too (by 1.3 T), not one timeout after another (2 T, 3 T, 1.6 T). Then every
// call with rank 1, and every collective, is refused at once; with 3 ranks or
// more rank 0 still exchanges with rank 2 (mpi engine: only rank 1 is lost;
// nccl aborts the whole communicator).
TEST_F(CommTest, COMM_7__a_silent_peer_fails_within_the_timeout_and_what_follows_at_once) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const bool nccl = c.kind() == comm::engine::nccl;
  const auto timeout = std::chrono::milliseconds(1000 * comm_timeout_s());
  // Rank 0's part; it stops at the first sign that something still waits
  // (its streams are left to their timeouts: destroying them does not wait).
  auto rank_0 = [&] {
    stream s(device(0)), t(device(0)), other(device(0));
    std::int32_t a = -1, sum = -1, one = 1;
    std::int64_t b = -1;
    std::int32_t d[3] = {-1, -1, -1};
    const auto start = clock::now();
    comm::recv(s, &a, sizeof a, 1, c);
    comm::recv(s, &b, sizeof b, 1, c);
    comm::all_reduce(s, &one, &sum, 1, reduce_op::sum, c);
    const auto late = start + timeout * 6 / 10;
    t.host_func([late] {
      while (clock::now() < late) std::this_thread::yield();
    });
    comm::recv(t, d, sizeof d, 1, c);
    bool ran = false;
    other.host_func([&] { ran = true; });
    other.synchronize();
    EXPECT_TRUE(ran) << "another stream waited for the failing receive";
    EXPECT_LT(clock::now() - start, timeout / 2) << "another stream waited for the failing receive";
    const auto by = start + timeout * 13 / 10;  // each must have failed by then
    const std::string on_s = comm_failures_of(s, by);
    const auto s_failed = clock::now() - start;
    const std::string on_t = comm_failures_of(t, by);
    const auto t_failed = clock::now() - start;
    const auto ms = [](clock::duration x) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(x).count();
    };
    std::printf(
        "rank 0: the stream behind the failed receive failed %lld ms after its start, "
        "the receive in flight on another stream at %lld ms (T = %lld ms)\n",
        static_cast<long long>(ms(s_failed)), static_cast<long long>(ms(t_failed)),
        static_cast<long long>(timeout.count()));
    EXPECT_TRUE(names(on_s, "recv of 4 bytes from rank 1")) << on_s;
    EXPECT_TRUE(names(on_s, "recv of 8 bytes from rank 1")) << "the receive behind it: " << on_s;
    EXPECT_TRUE(names(on_s, "all_reduce of 1 elements")) << "the collective behind it: " << on_s;
    EXPECT_TRUE(names(on_t, "recv of 12 bytes from rank 1")) << on_t;
    EXPECT_GE(ms(s_failed), ms(timeout) - 1000) << "failed before the timeout";
    EXPECT_LE(ms(s_failed), ms(timeout * 13 / 10))
        << "what was enqueued behind the failed receive waited for timeouts of its own: " << on_s;
    EXPECT_LE(ms(t_failed), ms(timeout * 13 / 10))
        << "the receive in flight with the lost peer waited for its own timeout: " << on_t;
    if (!HasFailure()) {  // (else they may still be written)
      EXPECT_EQ(a, -1);
      EXPECT_EQ(b, -1);
      EXPECT_EQ(sum, -1) << "a collective of a communicator that lost a rank wrote its output";
    }
    // Later calls with rank 1, and every collective: refused at enqueue.
    auto refused = [&](const char* what, auto&& call) {
      const auto called = clock::now();
      try {
        call();
        ADD_FAILURE() << what << " was enqueued on a communicator that lost rank 1";
      } catch (const sluice::error& e) {
        EXPECT_EQ(e.code(), errc::comm_failure) << what << ": " << e.what();
        EXPECT_TRUE(names(e.what(), "rank 1")) << what << ": " << e.what();
      }
      EXPECT_LT(clock::now() - called, std::chrono::milliseconds(500)) << what << " waited";
    };
    refused("a recv from rank 1", [&] { comm::recv(s, &a, sizeof a, 1, c); });
    refused("a send to rank 1", [&] { comm::send(s, &a, sizeof a, 1, c); });
    refused("a send to rank 1 in a group", [&] {
      comm::group g(c);
      comm::send(s, &a, sizeof a, 1, c);
    });
    refused("an all_reduce", [&] { comm::all_reduce(s, &one, &sum, 1, reduce_op::sum, c); });
    refused("a broadcast", [&] { comm::broadcast(s, &a, 1, 0, c); });
    std::vector<std::int32_t> gathered(static_cast<std::size_t>(c.size()), -1);
    refused("an all_gather", [&] { comm::all_gather(s, &one, gathered.data(), 1, c); });
    if (HasFailure()) return;  // something still waits, or was enqueued: no synchronize()
    EXPECT_NO_THROW(s.synchronize()) << "a failure was reported twice, or a refused call left "
                                        "something on its stream";
    bool after = false;
    s.host_func([&] { after = true; });
    s.synchronize();
    EXPECT_TRUE(after) << "the stream does not go on after the failure";
  };
  if (c.rank() == 0) rank_0();
  world_barrier();  // rank 0 has lost rank 1; rank 2 starts only now
  if (!nccl && c.size() > 2 && (c.rank() == 0 || c.rank() == 2)) {
    stream s(device(0));
    const int peer = 2 - c.rank();
    std::int32_t mine = 100 + c.rank(), theirs = -1;
    {
      comm::group g(c);
      comm::send(s, &mine, sizeof mine, peer, c);
      comm::recv(s, &theirs, sizeof theirs, peer, c);
    }
    EXPECT_NO_THROW(s.synchronize()) << "rank 0 and rank 2 no longer exchange";
    EXPECT_EQ(theirs, 100 + peer);
  }
  world_barrier();
}

}  // namespace
}  // namespace sluice::conformance
