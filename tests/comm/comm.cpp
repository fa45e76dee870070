// The COMM family (docs/semantics.md "COMM"): sluice::comm's rules, run by
// every rank of an MPI job (mpirun -np N, N >= 2). A test passes only where
// it passed on every rank (main.cpp's CommTest::TearDown gathers them).
#include "comm_test.hpp"

#include <sluice/comm.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

using sluice::comm::communicator;
using sluice::comm::reduce_op;

int next_rank(const communicator& c) { return (c.rank() + 1) % c.size(); }
int previous_rank(const communicator& c) { return (c.rank() + c.size() - 1) % c.size(); }

std::vector<std::int32_t> pattern_of(int rank, std::size_t n, int salt = 0) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = rank * 1000003 + static_cast<int>(i) * 7 + salt;
  return v;
}

// Every rank's pattern_of, added element by element: an all_reduce's sum.
std::vector<std::int32_t> sum_of_patterns(int ranks, std::size_t n) {
  std::vector<std::int32_t> sum(n, 0);
  for (int r = 0; r < ranks; ++r) {
    const auto p = pattern_of(r, n);
    for (std::size_t i = 0; i < n; ++i) sum[i] += p[i];
  }
  return sum;
}

// --- COMM-1 -------------------------------------------------------------------

// A send reads its buffer only after the work before it on its stream: a held
// host function writes the data; the send, enqueued behind it, must send that.
TEST_F(CommTest, COMM_1__send_reads_after_prior_work_and_recv_is_visible_after) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const std::size_t n = 64 * 1024;  // 256 KiB: beyond MPI's eager limits
  std::vector<std::int32_t> out(n, -1), in(n, -2);
  stream s(device(0));
  gate g{s};
  s.host_func([&] {
    const auto p = pattern_of(c.rank(), n);
    std::memcpy(out.data(), p.data(), n * sizeof(std::int32_t));
  });
  {
    // One group: a send and a receive one after the other on one stream would
    // deadlock a ring with messages this large (as blocking MPI calls would).
    comm::group both(c);
    comm::send(s, out.data(), n * sizeof(std::int32_t), next_rank(c), c);
    comm::recv(s, in.data(), n * sizeof(std::int32_t), previous_rank(c), c);
  }
  bool seen = false;
  s.host_func([&] { seen = in == pattern_of(previous_rank(c), n); });
  // Nothing moves while the gate holds the streams of both ends: an
  // operation started before its stream got there would have written `in`
  // by now (read through volatile: MPI may be writing it in that case).
  const volatile std::int32_t* first_word = in.data();
  EXPECT_TRUE(stays_false([&] { return *first_word != -2; }))
      << "the receive wrote its buffer before the work before it on its stream was done";
  g.release();
  s.synchronize();
  EXPECT_TRUE(seen) << "the work after the receive did not see the peer's data";
  EXPECT_EQ(in, pattern_of(previous_rank(c), n))
      << "the send read its buffer before the work before it had written it";
}

// Back-to-back small collectives may start before their stream gets there
// (the host backend, docs/comm.md "Back-to-back collectives"), but never
// before the collective before them wrote what they read: each one here reads
// the result of the one before it.
TEST_F(CommTest, COMM_1__a_collective_reads_what_the_collective_before_it_wrote) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  const int size = c.size();
  constexpr std::size_t n = 4;
  std::int32_t x[n], y[n], z[n];
  std::vector<std::int32_t> gathered(n * static_cast<std::size_t>(size), -1);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = c.rank() + static_cast<std::int32_t>(i);
    y[i] = z[i] = -1;
  }
  comm::all_reduce(s, x, y, n, reduce_op::sum, c);  // y[i] = size (size - 1) / 2 + size i
  comm::all_reduce(s, y, z, n, reduce_op::sum, c);  // z = size y
  comm::all_gather(s, z, gathered.data(), n, c);    // every rank's z
  s.synchronize();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t want_y = size * (size - 1) / 2 + size * static_cast<std::int32_t>(i);
    ASSERT_EQ(y[i], want_y) << i;
    EXPECT_EQ(z[i], size * want_y) << "the second all_reduce read its input early, element " << i;
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(gathered[static_cast<std::size_t>(r) * n + i], size * want_y)
          << "the all_gather read its input early, slot " << r << ", element " << i;
  }
}

// A collective after other work on its stream (a host function) reads what
// that work wrote, though the collective before that one is still in flight.
TEST_F(CommTest, COMM_1__a_collective_reads_its_input_after_the_work_before_it) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  const int size = c.size();
  constexpr std::size_t n = 4;
  std::int32_t x[n], y[n], w[n], z[n];
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = 1;
    w[i] = -1;
    y[i] = z[i] = 0;
  }
  comm::all_reduce(s, x, y, n, reduce_op::sum, c);
  s.host_func([&] {
    for (std::size_t i = 0; i < n; ++i) w[i] = 100 + c.rank();
  });
  comm::all_reduce(s, w, z, n, reduce_op::sum, c);
  s.synchronize();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], size) << i;
    EXPECT_EQ(z[i], 100 * size + size * (size - 1) / 2)
        << "the all_reduce read its input before the host function before it wrote it, element "
        << i;
  }
}

// Device buffers: the data travels in stream order on every backend (on the
// GPU backends through pinned staging, for an MPI that cannot read device
// memory): uploaded, exchanged, reduced in place, downloaded, all on one stream.
TEST_F(CommTest, COMM_1__device_buffers_travel_in_stream_order) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const std::size_t n = 64 * 1024;
  const std::size_t bytes = n * sizeof(std::int32_t);
  stream s(device(0));
  sluice::device_buffer<std::int32_t> out(device(0), n), in(device(0), n), sum(device(0), n);
  sluice::pinned_buffer<std::int32_t> host(n), back(n), total(n);
  const auto mine = pattern_of(c.rank(), n);
  std::memcpy(host.data(), mine.data(), bytes);
  gate g{s};
  sluice::copy(s, out.data(), host.data(), bytes);
  sluice::fill(s, in.data(), 0xff, bytes);
  {
    comm::group both(c);
    comm::send(s, out.data(), bytes, next_rank(c), c);
    comm::recv(s, in.data(), bytes, previous_rank(c), c);
  }
  sluice::copy(s, back.data(), in.data(), bytes);
  sluice::copy(s, sum.data(), out.data(), bytes);
  comm::all_reduce(s, sum.data(), sum.data(), n, reduce_op::sum, c);  // in place
  sluice::copy(s, total.data(), sum.data(), bytes);
  g.release();
  s.synchronize();
  EXPECT_TRUE(std::equal(back.data(), back.data() + n, pattern_of(previous_rank(c), n).begin()))
      << "the device buffer did not receive the previous rank's data";
  const auto expected = sum_of_patterns(c.size(), n);
  EXPECT_TRUE(std::equal(total.data(), total.data() + n, expected.begin()))
      << "the in-place all_reduce of a device buffer is wrong";
}

}  // namespace
}  // namespace sluice::conformance

namespace sluice::comm::detail {
std::size_t staging_slots() noexcept;  // src/comm/impl/staging.cpp (not public API)
}  // namespace sluice::comm::detail

namespace sluice::conformance {
namespace {

// Device buffers passed round the ring `hops` times on each of `streams`
// streams, held behind one gate, the streams' operations enqueued in turn
// (stream k starts from pattern_of(rank, n, k)), each hop sending what the one
// before on its stream received: every byte arrives in its stream's order, and
// the operations reuse their stream's pinned staging (at most 4 slots more per
// stream, not 2 per operation; none under nccl or on the host backend, which
// stage nothing here).
void staged_hops_reuse_their_staging(int streams, int hops) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const std::size_t n = 16 * 1024;
  const std::size_t bytes = n * sizeof(std::int32_t);
  struct lane {
    std::unique_ptr<stream> s;
    std::unique_ptr<sluice::device_buffer<std::int32_t>> a, b;
    std::int32_t* from = nullptr;
    std::int32_t* to = nullptr;
  };
  std::vector<lane> lanes(static_cast<std::size_t>(streams));
  gate g;
  for (int k = 0; k < streams; ++k) {
    lane& l = lanes[static_cast<std::size_t>(k)];
    l.s = std::make_unique<stream>(device(0));
    l.a = std::make_unique<sluice::device_buffer<std::int32_t>>(device(0), n);
    l.b = std::make_unique<sluice::device_buffer<std::int32_t>>(device(0), n);
    const auto mine = pattern_of(c.rank(), n, k);
    sluice::copy(*l.s, l.a->data(), mine.data(), bytes);
    l.s->synchronize();
    g.hold(*l.s);
    l.from = l.a->data();
    l.to = l.b->data();
  }
  const std::size_t slots_before = sluice::comm::detail::staging_slots();
  for (int hop = 0; hop < hops; ++hop)
    for (lane& l : lanes) {
      {
        comm::group ring(c);
        comm::send(*l.s, l.from, bytes, next_rank(c), c);
        comm::recv(*l.s, l.to, bytes, previous_rank(c), c);
      }
      std::swap(l.from, l.to);
    }
  const std::size_t made = sluice::comm::detail::staging_slots() - slots_before;
  std::vector<sluice::pinned_buffer<std::int32_t>> back;
  for (lane& l : lanes) {
    back.emplace_back(n);
    sluice::copy(*l.s, back.back().data(), l.from, bytes);
  }
  g.release();
  for (lane& l : lanes) l.s->synchronize();
  EXPECT_LE(made, 4U * static_cast<std::size_t>(streams))
      << hops << " operations on each of " << streams << " stream(s) made " << made
      << " staging slots";
  const int origin = ((c.rank() - hops) % c.size() + c.size()) % c.size();
  for (int k = 0; k < streams; ++k) {
    const auto& got = back[static_cast<std::size_t>(k)];
    EXPECT_TRUE(std::equal(got.data(), got.data() + n, pattern_of(origin, n, k).begin()))
        << "stream " << k << ": after " << hops << " hops the data is not rank " << origin << "'s";
  }
}

// One stream, 32 hops: at most 4 slots (a new slot for every send and receive,
// 64, where a stream's later operation does not take the slot it gave back).
TEST_F(CommTest, COMM_1__staged_operations_on_one_stream_reuse_their_staging) {
  staged_hops_reuse_their_staging(1, 32);
}

// Six streams whose operations alternate (as a code with a stream per
// neighbour or per field enqueues them), 12 hops each: each stream's later
// operation still takes the slot that stream gave back, however many other
// streams gave theirs back since (a new slot for every operation, 144, where a
// lease looks only at the last four slots given back).
TEST_F(CommTest, COMM_1__staged_operations_of_alternating_streams_reuse_their_staging) {
  staged_hops_reuse_their_staging(6, 12);
}

// SLUICE_COMM_PIECE_BYTES for the communicators made while it lives (rank
// 0's counts: docs/comm.md "Pieces"), the old value back after.
class piece_bytes {
 public:
  explicit piece_bytes(const char* value) {
    if (const char* v = std::getenv(name)) old_ = v;
    had_ = std::getenv(name) != nullptr;
    setenv(name, value, 1);
  }
  ~piece_bytes() {
    if (had_)
      setenv(name, old_.c_str(), 1);
    else
      unsetenv(name);
  }
  piece_bytes(const piece_bytes&) = delete;
  piece_bytes& operator=(const piece_bytes&) = delete;

 private:
  static constexpr const char* name = "SLUICE_COMM_PIECE_BYTES";
  std::string old_;
  bool had_ = false;
};

// Messages in pieces (the mpi engine's, docs/comm.md "Pieces"; 4 KiB pieces
// here): device buffers, a send and a receive of 3 pieces and a part, an
// all_reduce out of place and in place and a broadcast of several pieces,
// all in stream order behind a held gate, every byte checked. (Under the
// nccl engine nothing goes in pieces: the same checks of whole messages.)
TEST_F(CommTest, COMM_1__messages_in_pieces_arrive_whole_in_stream_order) {
  piece_bytes pieces("4096");
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const std::size_t n = 3 * 1024 + 123;  // ints: 3 pieces and a part
  const std::size_t bytes = n * sizeof(std::int32_t);
  stream s(device(0));
  sluice::device_buffer<std::int32_t> out(device(0), n), in(device(0), n), sum(device(0), n),
      inplace(device(0), n), root(device(0), n);
  sluice::pinned_buffer<std::int32_t> host(n), back(n), total(n), total2(n), rooted(n);
  const auto mine = pattern_of(c.rank(), n);
  std::memcpy(host.data(), mine.data(), bytes);
  gate g{s};
  sluice::copy(s, out.data(), host.data(), bytes);
  sluice::copy(s, inplace.data(), host.data(), bytes);
  sluice::copy(s, root.data(), host.data(), bytes);
  sluice::fill(s, in.data(), 0xff, bytes);
  {
    comm::group both(c);
    comm::send(s, out.data(), bytes, next_rank(c), c);
    comm::recv(s, in.data(), bytes, previous_rank(c), c);
  }
  comm::all_reduce(s, out.data(), sum.data(), n, reduce_op::sum, c);
  comm::all_reduce(s, inplace.data(), inplace.data(), n, reduce_op::sum, c);
  comm::broadcast(s, root.data(), n, 0, c);
  sluice::copy(s, back.data(), in.data(), bytes);
  sluice::copy(s, total.data(), sum.data(), bytes);
  sluice::copy(s, total2.data(), inplace.data(), bytes);
  sluice::copy(s, rooted.data(), root.data(), bytes);
  g.release();
  s.synchronize();
  EXPECT_TRUE(std::equal(back.data(), back.data() + n, pattern_of(previous_rank(c), n).begin()))
      << "a message in pieces did not arrive whole";
  const auto expected = sum_of_patterns(c.size(), n);
  EXPECT_TRUE(std::equal(total.data(), total.data() + n, expected.begin()))
      << "an all_reduce in pieces is wrong";
  EXPECT_TRUE(std::equal(total2.data(), total2.data() + n, expected.begin()))
      << "an in-place all_reduce in pieces is wrong";
  EXPECT_TRUE(std::equal(rooted.data(), rooted.data() + n, pattern_of(0, n).begin()))
      << "a broadcast in pieces is wrong";
}

// --- COMM-2 -------------------------------------------------------------------

// Every call returns at once: the receive is enqueued (and returns) while the
// peer has not sent yet; the peer sends only after a barrier that this rank
// reaches after its call returned.
TEST_F(CommTest, COMM_2__calls_return_without_waiting_for_the_peer) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  std::int64_t value = -1;
  const std::int64_t sent = 4242 + c.rank();
  stream s(device(0)), sending(device(0));
  background_call call([&] { comm::recv(s, &value, sizeof value, previous_rank(c), c); });
  EXPECT_TRUE(eventually([&] { return call.done(); }))
      << "comm::recv did not return while its peer had not sent";
  call.finish();
  EXPECT_FALSE(s.ready()) << "the receive completed before its peer sent";
  world_barrier();
  comm::send(sending, &sent, sizeof sent, next_rank(c), c);
  s.synchronize();
  sending.synchronize();
  EXPECT_EQ(value, 4242 + previous_rank(c));
  // A collective too: enqueued before the other ranks have theirs.
  std::int32_t sum = c.rank();
  std::int32_t result = 0;
  background_call reduce([&] { comm::all_reduce(s, &sum, &result, 1, reduce_op::sum, c); });
  EXPECT_TRUE(eventually([&] { return reduce.done(); })) << "comm::all_reduce waited for its peers";
  reduce.finish();
  world_barrier();
  s.synchronize();
  EXPECT_EQ(result, c.size() * (c.size() - 1) / 2);
}

// The first message between two ranks, while the receiver has made no call
// at all. NCCL connects a pair of ranks at their first send or receive, and
// that connection waits for the peer: the nccl engine makes its lanes'
// connections when the communicator is created (docs/comm.md, "The nccl
// engine"), and this checks that no first send is left to make one (the
// receiver waits at a barrier that the sender joins only afterwards). 4 MiB:
// above any eager limit, so no engine completes the send without its receiver
// (a send that waited for completion fails: mutation enqueue_waits). Run alone
// (scripts/gpu-check's comm step) it is the process's first contact.
TEST_F(CommTest, COMM_2__a_first_send_returns_before_the_peer_calls_anything) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  constexpr std::size_t count = std::size_t{1} << 19;  // 4 MiB of int64
  std::vector<std::int64_t> data(count, -1);
  if (c.rank() == 0) {
    for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<std::int64_t>(i * 7 + 3);
    background_call call([&] { comm::send(s, data.data(), count * sizeof data[0], 1, c); });
    EXPECT_TRUE(eventually([&] { return call.done(); }))
        << "the first comm::send to rank 1 waited for rank 1 to call";
    world_barrier();
    call.finish();
  } else {
    world_barrier();
    if (c.rank() == 1) comm::recv(s, data.data(), count * sizeof data[0], 0, c);
  }
  s.synchronize();
  if (c.rank() == 1) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i)
      wrong += data[i] != static_cast<std::int64_t>(i * 7 + 3) ? 1 : 0;
    EXPECT_EQ(wrong, 0U) << "values received wrong";
  }
}

// --- COMM-3 -------------------------------------------------------------------

// A receive that waits for its peer holds only its own stream: another
// stream of the device runs its work, communication included, to the end
// meanwhile. Each rank's first send to the next is held until after a
// barrier; its second goes at once: the second receive (another stream)
// completes while the first still waits.
TEST_F(CommTest, COMM_3__a_waiting_operation_holds_only_its_own_stream) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream waiting(device(0)), other(device(0)), first_send(device(0)), second_send(device(0));
  std::int32_t first = -1, second = -1;
  const std::int32_t one = 100 + c.rank(), two = 200 + c.rank();
  gate g{first_send};
  comm::send(first_send, &one, sizeof one, next_rank(c), c);
  comm::send(second_send, &two, sizeof two, next_rank(c), c);
  comm::recv(waiting, &first, sizeof first, previous_rank(c), c);
  comm::recv(other, &second, sizeof second, previous_rank(c), c);
  bool ran = false;
  other.host_func([&] { ran = true; });
  EXPECT_TRUE(eventually([&] { return other.ready(); }))
      << "a stream whose receive could complete waited for another stream's receive";
  EXPECT_TRUE(ran);
  EXPECT_EQ(second, 200 + previous_rank(c));
  EXPECT_FALSE(waiting.ready()) << "the first receive completed before its peer sent";
  world_barrier();
  g.release();
  waiting.synchronize();
  first_send.synchronize();
  second_send.synchronize();
  EXPECT_EQ(first, 100 + previous_rank(c));
}

// --- COMM-4 -------------------------------------------------------------------

// Sends match receives in enqueue order, not in the order their streams
// reach them: the first send's stream is held until the second message was
// received. The two receives are on streams of their own (the second's
// stream goes there only after the first's did), so that nothing needs a send
// to complete before its receive is reached (NCCL's sends wait for their
// receives; MPI buffers small ones).
TEST_F(CommTest, COMM_4__sends_match_receives_in_enqueue_order) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream first(device(0)), second(device(0)), receiving_a(device(0)), receiving_b(device(0));
  const std::int32_t a = 1000 + c.rank(), b = 2000 + c.rank();
  std::int32_t got_a = -1, got_b = -1;
  gate g{first};
  comm::send(first, &a, sizeof a, next_rank(c), c);
  comm::send(second, &b, sizeof b, next_rank(c), c);
  event a_reached(device(0));
  a_reached.record(receiving_a);
  comm::recv(receiving_a, &got_a, sizeof got_a, previous_rank(c), c);
  receiving_b.wait(a_reached);
  comm::recv(receiving_b, &got_b, sizeof got_b, previous_rank(c), c);
  second.synchronize();  // the later send has gone, the earlier one not
  receiving_b.synchronize();
  EXPECT_EQ(got_b, 2000 + previous_rank(c)) << "the second receive met another message";
  EXPECT_FALSE(receiving_a.ready()) << "the first receive completed before the first send";
  world_barrier();  // no rank sends its first message before every rank looked
  g.release();
  first.synchronize();
  receiving_a.synchronize();
  EXPECT_EQ(got_a, 1000 + previous_rank(c)) << "the first receive met the second send";
}

// The other side: receives match sends in enqueue order, not in the order
// their streams reach them: the first receive's stream is held, the second's
// is not (a receive that took the first message to arrive would get a).
// Under the mpi engine the second receive completes while the first is held
// (its send is small: MPI sends it without the receiver), so the test waits
// for it first: whatever the engine's order of posting, a receive that took
// the first message to arrive gets a. (Under nccl a send waits for its
// receive, so b cannot go before a's receive: released at once.)
TEST_F(CommTest, COMM_4__receives_match_sends_in_enqueue_order) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream sending(device(0)), receiving_a(device(0)), receiving_b(device(0));
  const std::int32_t a = 3000 + c.rank(), b = 4000 + c.rank();
  std::int32_t got_a = -1, got_b = -1;
  gate g{receiving_a};
  comm::send(sending, &a, sizeof a, next_rank(c), c);
  comm::send(sending, &b, sizeof b, next_rank(c), c);
  comm::recv(receiving_a, &got_a, sizeof got_a, previous_rank(c), c);
  comm::recv(receiving_b, &got_b, sizeof got_b, previous_rank(c), c);
  if (c.kind() == comm::engine::mpi) {
    receiving_b.synchronize();
    EXPECT_FALSE(receiving_a.ready()) << "the held receive completed";
  }
  g.release();
  sending.synchronize();
  receiving_a.synchronize();
  receiving_b.synchronize();
  EXPECT_EQ(got_a, 3000 + previous_rank(c)) << "the first receive met another message";
  EXPECT_EQ(got_b, 4000 + previous_rank(c)) << "the second receive met the first send";
}

// A group's exchange does not deadlock whatever the order inside it: every
// rank receives from everyone first, then sends to everyone, with messages
// large enough to need the receiver (rendezvous), on two streams.
TEST_F(CommTest, COMM_4__a_group_exchange_does_not_deadlock) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const std::size_t n = 128 * 1024;
  const int size = c.size();
  std::vector<std::vector<std::int32_t>> in(static_cast<std::size_t>(size)),
      out(static_cast<std::size_t>(size));
  stream receiving(device(0)), sending(device(0));
  {
    comm::group g(c);
    for (int r = 0; r < size; ++r) {
      if (r == c.rank()) continue;
      in[static_cast<std::size_t>(r)].assign(n, -1);
      comm::recv(receiving, in[static_cast<std::size_t>(r)].data(), n * sizeof(std::int32_t), r, c);
    }
    for (int r = 0; r < size; ++r) {
      if (r == c.rank()) continue;
      out[static_cast<std::size_t>(r)] = pattern_of(c.rank(), n, r);
      comm::send(sending, out[static_cast<std::size_t>(r)].data(), n * sizeof(std::int32_t), r, c);
    }
  }
  receiving.synchronize();
  sending.synchronize();
  for (int r = 0; r < size; ++r) {
    if (r != c.rank()) {
      EXPECT_EQ(in[static_cast<std::size_t>(r)], pattern_of(r, n, c.rank())) << "from rank " << r;
    }
  }
}

// --- COMM-5 -------------------------------------------------------------------

TEST_F(CommTest, COMM_5__collectives_give_every_rank_the_same_exact_result) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  const int size = c.size();
  const std::size_t n = 1000;
  std::vector<std::int64_t> in(n), sum(n), max(n), min(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = (static_cast<std::int64_t>(c.rank()) << 40) + i;
  comm::all_reduce(s, in.data(), sum.data(), n, reduce_op::sum, c);
  comm::all_reduce(s, in.data(), max.data(), n, reduce_op::max, c);
  comm::all_reduce(s, in.data(), min.data(), n, reduce_op::min, c);
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = 1.0 / (3.0 + c.rank() + static_cast<double>(i));
  comm::all_reduce(s, d.data(), d.data(), n, reduce_op::sum, c);  // in place
  std::vector<std::int32_t> root_data(n, c.rank() == size - 1 ? 9 : -9);
  comm::broadcast(s, root_data.data(), n, size - 1, c);
  std::vector<std::int32_t> gathered(n * static_cast<std::size_t>(size), -1);
  const auto mine = pattern_of(c.rank(), n);
  comm::all_gather(s, mine.data(), gathered.data(), n, c);
  s.synchronize();
  const std::int64_t rank_sum = static_cast<std::int64_t>(size) * (size - 1) / 2;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(sum[i], (rank_sum << 40) + static_cast<std::int64_t>(i) * size) << i;
    ASSERT_EQ(max[i], (static_cast<std::int64_t>(size - 1) << 40) + static_cast<std::int64_t>(i));
    ASSERT_EQ(min[i], static_cast<std::int64_t>(i));
    ASSERT_EQ(root_data[i], 9);
  }
  for (int r = 0; r < size; ++r)
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(),
                           gathered.begin() + static_cast<long>(r) * static_cast<long>(n)) ==
                (r == c.rank()))
        << "slot " << r;
  for (int r = 0; r < size; ++r) {
    const auto theirs = pattern_of(r, n);
    EXPECT_TRUE(std::equal(theirs.begin(), theirs.end(),
                           gathered.begin() + static_cast<long>(r) * static_cast<long>(n)))
        << "all_gather's slot of rank " << r;
  }
  // The floating-point sum is the same bits on every rank.
  std::vector<double> rank0(d);
  MPI_Bcast(rank0.data(), static_cast<int>(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(std::memcmp(rank0.data(), d.data(), n * sizeof(double)), 0)
      << "all_reduce gave this rank other bits than rank 0";
}

// Collectives match in enqueue order even when their streams get there in
// another order, and in different orders on different ranks: even ranks hold
// the first collective's stream, odd ranks the second's, until every rank has
// enqueued both (a rank that started the collective its stream reached first
// would meet another rank's other collective: a sum against a max).
TEST_F(CommTest, COMM_5__collectives_keep_enqueue_order_across_streams) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream first(device(0)), second(device(0));
  std::int32_t one = 1, ten = 10 + c.rank();
  std::int32_t sum_one = 0, max_ten = 0;
  const bool even = c.rank() % 2 == 0;
  gate g{even ? first : second};
  comm::all_reduce(first, &one, &sum_one, 1, reduce_op::sum, c);
  comm::all_reduce(second, &ten, &max_ten, 1, reduce_op::max, c);
  // Meanwhile the collective of the stream not held got there: it cannot
  // complete, its match on the other ranks is held.
  stream& free_one = even ? second : first;
  EXPECT_TRUE(stays_false([&] { return free_one.ready(); }))
      << "a collective completed while its match on another rank was held";
  world_barrier();
  g.release();
  first.synchronize();
  second.synchronize();
  EXPECT_EQ(sum_one, c.size());
  EXPECT_EQ(max_ten, 10 + c.size() - 1);
}

// --- COMM-7 -------------------------------------------------------------------

// A peer that never answers (a receive whose send never comes, what follows
// it, and what the communicator does after): failure.cpp.

// A collective's timeout counts from where its stream got there, also when it
// started earlier (back-to-back collectives, docs/comm.md): rank 1 reaches
// its first all_reduce 0.6 T late and its second 1.2 T late (T:
// SLUICE_COMM_TIMEOUT_S); the others enqueue both back to back, so their
// second gets there at about 0.6 T and may start at once. Counted from its
// start, it would fail at T; from its stream's arrival it has until 1.6 T.
TEST_F(CommTest, COMM_7__a_collective_started_early_times_out_from_where_its_stream_got_there) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  const int size = c.size();
  const auto timeout = std::chrono::milliseconds(1000 * comm_timeout_s());
  std::int32_t one = 1, two = 2, sum_one = 0, sum_two = 0;
  world_barrier();
  const auto start = clock::now();
  auto until = [&s](clock::time_point t) {
    s.host_func([t] {
      while (clock::now() < t) std::this_thread::yield();  // this rank is late
    });
  };
  if (c.rank() == 1) until(start + timeout * 6 / 10);
  comm::all_reduce(s, &one, &sum_one, 1, reduce_op::sum, c);
  if (c.rank() == 1) until(start + timeout * 12 / 10);
  comm::all_reduce(s, &two, &sum_two, 1, reduce_op::sum, c);
  EXPECT_NO_THROW(s.synchronize()) << "a collective timed out before SLUICE_COMM_TIMEOUT_S "
                                      "passed from where its stream got there";
  EXPECT_EQ(sum_one, size);
  EXPECT_EQ(sum_two, 2 * size);
  world_barrier();
}

// The failure surfaces at event::record too (like a device fault), once.
TEST_F(CommTest, COMM_7__the_failure_surfaces_at_record_too) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  if (c.rank() == 0) {
    std::int32_t value = -1;
    comm::recv(s, &value, sizeof value, 1, c);
    sluice::event e(device(0));
    EXPECT_TRUE(eventually(
        [&] {
          try {
            e.record(s);
            return false;
          } catch (const sluice::error& err) {
            EXPECT_EQ(err.code(), errc::comm_failure) << err.what();
            return true;
          }
        },
        std::chrono::seconds(comm_timeout_s() + 10)))
        << "event::record never reported the failed receive";
    EXPECT_NO_THROW(s.synchronize());
  }
  world_barrier();
}

// A receive smaller or larger than the matching send: an error on the
// receiving stream, never a silent truncation or overrun.
TEST_F(CommTest, COMM_7__a_receive_of_another_size_than_its_send_is_an_error) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  std::vector<std::int32_t> big(256, 5), small(64 + 1, -1);
  // Rank r sends 256 ints to r+1 and receives 64 (then, next, 512) from r-1.
  const auto start = clock::now();
  comm::send(s, big.data(), big.size() * sizeof(std::int32_t), next_rank(c), c);
  comm::recv(s, small.data(), 64 * sizeof(std::int32_t), previous_rank(c), c);
  try {
    s.synchronize();
    ADD_FAILURE() << "a 64-int receive of a 256-int send succeeded";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
  }
  // Found out, not timed out (an engine that cannot see sizes waits for ever).
  EXPECT_LT(clock::now() - start, std::chrono::seconds(comm_timeout_s()))
      << "the size mismatch was reported only by the timeout";
  EXPECT_EQ(small[64], -1) << "the receive wrote past its buffer";
  // A new communicator and stream for the larger receive: under the nccl
  // engine a failure leaves the communicator unusable (its NCCL
  // communicators aborted), so a later call on `c` may be refused at once
  // (docs/comm.md, "The nccl engine"; on 2x H200 the 512-int send below was
  // refused in 2 of 5 runs when it used `c`, whichever way the abort raced).
  communicator c2(MPI_COMM_WORLD, device(0), test_engine());
  stream s2(device(0));
  std::vector<std::int32_t> large(512, -1);
  comm::send(s2, big.data(), big.size() * sizeof(std::int32_t), next_rank(c2), c2);
  comm::recv(s2, large.data(), large.size() * sizeof(std::int32_t), previous_rank(c2), c2);
  try {
    s2.synchronize();
    ADD_FAILURE() << "a 512-int receive of a 256-int send succeeded";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
  }
}

// A send far above MPI's eager size into a smaller receive: nothing past the
// receive's buffer changes (Open MPI 4.1's shared-memory single copy wrote
// the whole message past a truncated receive's buffer), the receive fails,
// the send completes. Host buffers, which the mpi engine gives MPI as they are.
TEST_F(CommTest, COMM_7__a_large_send_writes_nothing_past_a_smaller_receive) {
  piece_bytes whole("0");
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  if (c.kind() != comm::engine::mpi)
    GTEST_SKIP() << "the nccl engine stages host buffers (NCCL never writes them); its size "
                    "check is the test above";
  const std::size_t sent = 64 * 1024, room = 16 * 1024, guard = 64 * 1024;  // ints
  std::vector<std::int32_t> big(sent, 5), small(room + guard, -1);
  stream sending(device(0)), receiving(device(0));
  comm::send(sending, big.data(), sent * sizeof(std::int32_t), next_rank(c), c);
  comm::recv(receiving, small.data(), room * sizeof(std::int32_t), previous_rank(c), c);
  try {
    receiving.synchronize();
    ADD_FAILURE() << "a " << room << "-int receive of a " << sent << "-int send succeeded";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
  }
  EXPECT_NO_THROW(sending.synchronize()) << "the larger send did not complete";
  EXPECT_EQ(std::count(small.begin() + static_cast<std::ptrdiff_t>(room), small.end(), -1),
            static_cast<std::ptrdiff_t>(guard))
      << "the receive wrote past its buffer";
  world_barrier();
}

// The same in pieces (the mpi engine's, 4 KiB pieces): the receiver learns
// the send's size from its header before it takes a piece, so a receive of
// fewer pieces than the send is an error at once (not 3 pieces of 5, the
// rest left to the sender), and so is one of more. The sender's pieces are
// taken and dropped: the send completes, and the communicator keeps working.
TEST_F(CommTest, COMM_7__a_receive_in_pieces_of_another_size_is_an_error) {
  piece_bytes pieces("4096");
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  if (c.kind() != comm::engine::mpi)
    GTEST_SKIP() << "the nccl engine sends nothing in pieces (the test above is its size check)";
  const std::size_t five = 5 * 1024, three = 3 * 1024;  // ints: 5 and 3 pieces
  std::vector<std::int32_t> big(five, 5), small(three + 1, -1), large(2 * five, -1);
  const auto start = clock::now();
  for (const std::size_t received : {three, 2 * five}) {
    stream sending(device(0)), receiving(device(0));
    std::int32_t* into = received == three ? small.data() : large.data();
    comm::send(sending, big.data(), five * sizeof(std::int32_t), next_rank(c), c);
    comm::recv(receiving, into, received * sizeof(std::int32_t), previous_rank(c), c);
    try {
      receiving.synchronize();
      ADD_FAILURE() << "a " << received << "-int receive of a " << five << "-int send succeeded";
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
    }
    EXPECT_NO_THROW(sending.synchronize()) << "the sender's pieces were not taken";
    world_barrier();
  }
  EXPECT_LT(clock::now() - start, std::chrono::seconds(comm_timeout_s()))
      << "the size mismatch was reported only by the timeout";
  EXPECT_EQ(small[three], -1) << "the receive wrote past its buffer";
  // The communicator still matches messages in pieces.
  stream s(device(0));
  std::vector<std::int32_t> again(five, -1);
  {
    comm::group both(c);
    comm::send(s, big.data(), five * sizeof(std::int32_t), next_rank(c), c);
    comm::recv(s, again.data(), five * sizeof(std::int32_t), previous_rank(c), c);
  }
  s.synchronize();
  EXPECT_EQ(again, big);
}

// Sizes on either side of twice the piece size: one message goes whole, the
// other in pieces, on different communicators. A whole receive of a send in
// pieces, and a receive in pieces of a whole send, are errors well before the
// timeout (the engine looks on the other communicator too); the send
// completes, nothing is written past the receive, and the communicator still
// matches both kinds after.
TEST_F(CommTest, COMM_7__a_receive_and_a_send_on_either_side_of_the_piece_size_is_an_error) {
  piece_bytes pieces("4096");
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  if (c.kind() != comm::engine::mpi)
    GTEST_SKIP() << "the nccl engine sends nothing in pieces (the test above is its size check)";
  const std::size_t whole = 1024, in_pieces = 5 * 1024;  // ints: 1 and 5 pieces
  struct mismatch {
    std::size_t sent, received;
  };
  const auto start = clock::now();
  for (const mismatch& m : {mismatch{in_pieces, whole}, mismatch{whole, in_pieces}}) {
    std::vector<std::int32_t> out(m.sent, 7), into(m.received + 1, -1);
    stream sending(device(0)), receiving(device(0));
    comm::send(sending, out.data(), m.sent * sizeof(std::int32_t), next_rank(c), c);
    comm::recv(receiving, into.data(), m.received * sizeof(std::int32_t), previous_rank(c), c);
    try {
      receiving.synchronize();
      ADD_FAILURE() << "a " << m.received << "-int receive of a " << m.sent
                    << "-int send succeeded";
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), errc::comm_failure) << e.what();
      EXPECT_NE(
          std::string(e.what()).find("the matching send had " +
                                     std::to_string(m.sent * sizeof(std::int32_t)) + " bytes"),
          std::string::npos)
          << e.what();
    }
    EXPECT_NO_THROW(sending.synchronize()) << "the " << m.sent << "-int send was not taken";
    EXPECT_EQ(into[m.received], -1) << "the receive wrote past its buffer";
    world_barrier();
  }
  EXPECT_LT(clock::now() - start, std::chrono::seconds(comm_timeout_s()))
      << "the size mismatch was reported only by the timeout";
  // Both kinds still match.
  stream s(device(0));
  std::vector<std::int32_t> small(whole, 3), large(in_pieces, 4), small_in(whole, -1),
      large_in(in_pieces, -1);
  {
    comm::group both(c);
    comm::send(s, small.data(), whole * sizeof(std::int32_t), next_rank(c), c);
    comm::send(s, large.data(), in_pieces * sizeof(std::int32_t), next_rank(c), c);
    comm::recv(s, small_in.data(), whole * sizeof(std::int32_t), previous_rank(c), c);
    comm::recv(s, large_in.data(), in_pieces * sizeof(std::int32_t), previous_rank(c), c);
  }
  s.synchronize();
  EXPECT_EQ(small_in, small);
  EXPECT_EQ(large_in, large);
}

}  // namespace
}  // namespace sluice::conformance
