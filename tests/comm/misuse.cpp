// COMM-6: bad input is rejected with a sluice::error of the documented errc
// before anything is enqueued, on the rank that made the call. Every case runs
// on a stream held by a gate; afterwards the stream holds nothing else, and a
// ring exchange on the same communicator still matches (a rejected send or
// receive that took a match number would make it meet the wrong message).
#include "comm_test.hpp"

#include <sluice/comm.hpp>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::conformance {
namespace {

using sluice::comm::communicator;
using sluice::comm::reduce_op;

struct misuse_case {
  const char* name;
  errc expected;
  std::function<void(stream_ref, communicator&)> call;
};

// Each case on a stream held by a gate: a sluice::error of its errc, and
// nothing enqueued behind the gate. Then nothing took a match number or a
// collective's place: a ring exchange and an all_reduce on c still meet the
// other ranks' own.
void reject_each(communicator& c, const std::vector<misuse_case>& cases) {
  const int size = c.size();
  int checked = 0;
  // SLUICE_COMM_TEST_PROGRESS=1: each case's start and end on stderr (where a
  // run hangs, the last case named is the one).
  const bool progress = std::getenv("SLUICE_COMM_TEST_PROGRESS") != nullptr;
  for (const auto& m : cases) {
    if (progress) std::fprintf(stderr, "rank %d: COMM-6 case '%s'\n", c.rank(), m.name);
    stream s(device(0));
    gate g{s};
    try {
      m.call(s, c);
      ADD_FAILURE() << m.name << ": accepted";
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), m.expected) << m.name << ": " << e.what();
      ++checked;
    } catch (const std::exception& e) {
      ADD_FAILURE() << m.name << ": threw a " << typeid(e).name() << " instead: " << e.what();
    }
    if (progress) std::fprintf(stderr, "rank %d: COMM-6 case '%s' returned\n", c.rank(), m.name);
    EXPECT_FALSE(s.ready()) << m.name << ": the gate's hold is gone";
    g.release();
    EXPECT_TRUE(eventually([&] { return s.ready(); }))
        << m.name << ": something was enqueued behind the gate";
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
  // Nothing took a match number: a ring exchange still meets its own messages
  // (in a group: a send before its receive on one stream of every rank needs
  // the engine to buffer it, which MPI does for small messages and NCCL not).
  stream s(device(0));
  const std::int32_t mine = 500 + c.rank();
  std::int32_t theirs = -1;
  {
    comm::group ring(c);
    comm::send(s, &mine, sizeof mine, (c.rank() + 1) % size, c);
    comm::recv(s, &theirs, sizeof theirs, (c.rank() + size - 1) % size, c);
  }
  s.synchronize();
  EXPECT_EQ(theirs, 500 + (c.rank() + size - 1) % size);
  // Collectives too: one all_reduce still meets the other ranks' first.
  std::int32_t one = 1, total = 0;
  comm::all_reduce(s, &one, &total, 1, reduce_op::sum, c);
  s.synchronize();
  EXPECT_EQ(total, size);
}

TEST_F(CommTest, COMM_6__bad_input_is_rejected_before_anything_is_enqueued) {
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  const int size = c.size();
  std::int32_t word = 1;
  std::int32_t words[8] = {};
  std::vector<misuse_case> cases = {
      {"send to rank -1", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::send(s, &word, 4, -1, cm); }},
      {"send to rank size()", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::send(s, &word, 4, size, cm); }},
      {"recv from rank size()", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::recv(s, &word, 4, size, cm); }},
      {"send of a null buffer", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::send(s, nullptr, 4, 0, cm); }},
      {"recv into a null buffer", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::recv(s, nullptr, 4, 0, cm); }},
      {"send on a destroyed stream", errc::invalid_handle,
       [&](stream_ref, communicator& cm) {
         stream_ref gone = [] {
           stream t(device(0));
           return stream_ref(t);
         }();
         comm::send(gone, &word, 4, 0, cm);
       }},
      {"send with a moved-from communicator", errc::invalid_handle,
       [&](stream_ref s, communicator& cm) {
         communicator moved(MPI_COMM_WORLD, device(0), test_engine());
         if (std::getenv("SLUICE_COMM_TEST_PROGRESS") != nullptr)
           std::fprintf(stderr, "rank %d: COMM-6 a communicator made\n", cm.rank());
         communicator taker(std::move(moved));
         comm::send(s, &word, 4, 0, moved);  // NOLINT(bugprone-use-after-move): the case
       }},
      {"rank() of a moved-from communicator", errc::invalid_handle,
       [&](stream_ref, communicator&) {
         communicator moved(MPI_COMM_WORLD, device(0), test_engine());
         communicator taker(std::move(moved));
         (void)moved.rank();  // NOLINT(bugprone-use-after-move): the case
       }},
      {"send of more than INT_MAX bytes", errc::not_supported,
       [&](stream_ref s, communicator& cm) {
         comm::send(s, &word, static_cast<std::size_t>(INT_MAX) + 1, 0, cm);
       }},
      {"broadcast from root size()", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::broadcast(s, words, 8, size, cm); }},
      {"broadcast from root -1", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) { comm::broadcast(s, words, 8, -1, cm); }},
      {"all_reduce with an unknown reduce_op", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) {
         comm::all_reduce(s, words, words, 8, static_cast<reduce_op>(42), cm);
       }},
      {"all_reduce with overlapping input and output", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) {
         comm::all_reduce(s, words, words + 1, 4, reduce_op::sum, cm);
       }},
      {"all_reduce with a null output", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) {
         comm::all_reduce<std::int32_t>(s, words, nullptr, 4, reduce_op::sum, cm);
       }},
      {"all_gather whose input overlaps another rank's slot", errc::invalid_argument,
       [&](stream_ref s, communicator& cm) {
         std::vector<std::int32_t> out(static_cast<std::size_t>(size) * 2);
         const int other = (cm.rank() + 1) % size;
         comm::all_gather(s, out.data() + other * 2, out.data(), 2, cm);
       }},
      {"all_gather of more than INT_MAX elements per rank", errc::not_supported,
       [&](stream_ref s, communicator& cm) {
         comm::all_gather(s, words, words, static_cast<std::size_t>(INT_MAX) + 1, cm);
       }},
      {"all_reduce of a count whose bytes overflow", errc::not_supported,
       [&](stream_ref s, communicator& cm) {
         comm::all_reduce(s, words, words, SIZE_MAX / 2, reduce_op::sum, cm);
       }},
      {"a second group of one communicator on one thread", errc::invalid_argument,
       [&](stream_ref, communicator& cm) {
         comm::group outer(cm);
         comm::group inner(cm);
       }},
      {"a communicator of MPI_COMM_NULL", errc::invalid_argument,
       [&](stream_ref, communicator&) {
         communicator bad(MPI_COMM_NULL, device(0), test_engine());
       }},
      {"an unknown engine", errc::invalid_argument,
       [&](stream_ref, communicator&) {
         communicator bad(MPI_COMM_WORLD, device(0), static_cast<comm::engine>(7));
       }},
  };
  reject_each(c, cases);
}

// The calls that name another device's stream or memory: on a machine with one
// GPU this test is skipped (it says so); the host backend has device 1 where
// the test runs it (ctest: SLUICE_HOST_DEVICES=2), so there it never skips.
TEST_F(CommTest, COMM_6__a_stream_or_buffer_of_another_device_is_rejected) {
  // Every rank the same answer (the communicator below is collective).
  int devices = device_count();
  MPI_Allreduce(MPI_IN_PLACE, &devices, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (sluice::backend() == backend_kind::host)
    ASSERT_GE(devices, 2) << "run with SLUICE_HOST_DEVICES=2 (ctest does)";
  else if (devices < 2)
    GTEST_SKIP() << "needs 2 devices, found " << devices;
  communicator c(MPI_COMM_WORLD, device(0), test_engine());
  std::int32_t word = 1;
  std::vector<misuse_case> cases = {
      {"send on a stream of another device", errc::invalid_argument,
       [&](stream_ref, communicator& cm) {
         stream other(device(1));
         comm::send(other, &word, 4, 0, cm);
       }},
      {"all_reduce on a stream of another device", errc::invalid_argument,
       [&](stream_ref, communicator& cm) {
         stream other(device(1));
         comm::all_reduce(other, &word, &word, 1, reduce_op::sum, cm);
       }},
  };
  // On a GPU backend device memory is the device's alone: a buffer of
  // another device is refused (sluice's own allocations are known from its
  // allocation map; on the host backend all memory is the host's).
  std::unique_ptr<device_buffer<std::int32_t>> elsewhere;
  if (sluice::backend() != backend_kind::host) {
    elsewhere = std::make_unique<device_buffer<std::int32_t>>(device(1), 4);
    cases.push_back(
        {"send of a device_buffer of another device", errc::invalid_argument,
         [&](stream_ref s, communicator& cm) { comm::send(s, elsewhere->data(), 4, 0, cm); }});
    cases.push_back(
        {"recv into a device_buffer of another device", errc::invalid_argument,
         [&](stream_ref s, communicator& cm) { comm::recv(s, elsewhere->data(), 4, 0, cm); }});
  }
  reject_each(c, cases);
}

// SLUICE_COMM_PIECE_BYTES outside 0 and 4096..1 GiB, and
// SLUICE_COMM_PIECES_IN_FLIGHT outside 0..1024 (rank 0's, read by the
// communicator: docs/api.md): errc::invalid_argument from the communicator on
// every rank (rank 0 tells the others), and a later communicator works.
TEST_F(CommTest, COMM_6__a_bad_piece_size_is_rejected_by_the_communicator) {
  {
    communicator probe(MPI_COMM_WORLD, device(0), test_engine());
    if (probe.kind() != comm::engine::mpi)
      GTEST_SKIP() << "only the mpi engine sends in pieces (the nccl engine never reads it)";
  }
  const std::pair<const char*, std::vector<const char*>> cases[] = {
      {"SLUICE_COMM_PIECE_BYTES", {"100", "4095", "1073741825", "4096x", "-4096"}},
      {"SLUICE_COMM_PIECES_IN_FLIGHT", {"-1", "1025", "2x", " "}}};
  for (const auto& [name, bads] : cases) {
    const char* old = std::getenv(name);
    const std::string kept = old != nullptr ? old : "";
    for (const char* bad : bads) {
      setenv(name, bad, 1);
      try {
        communicator c(MPI_COMM_WORLD, device(0), test_engine());
        ADD_FAILURE() << name << "=" << bad << " was accepted";
      } catch (const sluice::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << name << "=" << bad << ": " << e.what();
      }
    }
    if (old != nullptr)
      setenv(name, kept.c_str(), 1);
    else
      unsetenv(name);
  }
  communicator after(MPI_COMM_WORLD, device(0), test_engine());
  stream s(device(0));
  std::int32_t mine = after.rank() + 1, sum = 0;
  comm::all_reduce(s, &mine, &sum, 1, reduce_op::sum, after);
  s.synchronize();
  EXPECT_EQ(sum, after.size() * (after.size() + 1) / 2);
}

}  // namespace
}  // namespace sluice::conformance
