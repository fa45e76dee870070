// KOK: Kokkos work in sluice stream order (docs/semantics.md, KOK-1 .. KOK-5),
// the conformance family "Kokkos", built with sluice::kokkos. Each rule is seen
// failing under a test-only mutation (SLUICE_TEST_MUTATION=kokkos.<name>,
// docs/conformance/mutations.md).
#include "../conformance/support.hpp"

#include <sluice/kokkos.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

using exec_t = sluice::kokkos::execution_space;
constexpr std::size_t count = 64 * 1024;  // ints

//! Every element i of v becomes v(i) * 2 + 1, as one Kokkos kernel on exec.
void double_plus_one(const exec_t& exec, sluice::device_buffer<int>& b, const char* name) {
  auto v = sluice::kokkos::view(b);
  Kokkos::parallel_for(
      name, Kokkos::RangePolicy<exec_t>(exec, 0, b.size()),
      KOKKOS_LAMBDA(const std::size_t i) { v(i) = v(i) * 2 + 1; });
}

//! The first index whose value is not `expected`; n when none.
std::size_t first_not(const int* p, std::size_t n, int expected) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != expected) return i;
  return n;
}

constexpr int filled = 0x01010101;  // every byte 1
constexpr int doubled = filled * 2 + 1;

#if !defined(SLUICE_BACKEND_HOST)
// Making the Kokkos instance of a stream (at its first submit or instance())
// must not wait for the stream's work: the stream may be held.
TEST(Kokkos, KOK_2__the_instance_of_a_held_stream_is_made_without_waiting) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] { (void)sluice::kokkos::instance(s); }))
      << "making the Kokkos instance waited for the held stream";
}

// A kernel launched on a held stream's instance returns at once (no fence in
// the launch or in the Kokkos Tools callbacks).
TEST(Kokkos, KOK_2__a_launch_on_a_held_stream_returns_at_once) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, count};
  exec_t exec = sluice::kokkos::instance(s);  // made while idle
  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] { double_plus_one(exec, b, "kok2launch"); }))
      << "a Kokkos launch waited for the held stream";
}
#endif

// The kernel sees the fill enqueued before it; the copy enqueued after it sees
// the kernel's result. Everything is enqueued while the stream is held.
TEST(Kokkos, KOK_1__submitted_work_runs_between_earlier_and_later_work) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> out{count};
  std::fill(out.begin(), out.end(), 0);
  {
    gate g{s};
    sluice::fill(s, b.data(), 1, b.size_bytes());
    ASSERT_TRUE(returns_while_held(g, [&] {
      sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok1"); });
    })) << "submit waited for the held stream (KOK-2)";
    sluice::copy(s, out.data(), b.data(), b.size_bytes());
    EXPECT_TRUE(stays_false([&] { return s.ready(); }));
  }
  s.synchronize();
  EXPECT_EQ(first_not(out.data(), count, doubled), count)
      << "the kernel did not run between the fill and the copy (value " << out[0] << ")";
}

// Two submissions in a row and sluice work in between: each sees the one before.
TEST(Kokkos, KOK_1__consecutive_submissions_and_copies_keep_their_order) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> mid{count};
  sluice::pinned_buffer<int> end{count};
  {
    gate g{s};
    sluice::fill(s, b.data(), 1, b.size_bytes());
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok1a"); });
    sluice::copy(s, mid.data(), b.data(), b.size_bytes());
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok1b"); });
    sluice::copy(s, end.data(), b.data(), b.size_bytes());
  }
  s.synchronize();
  EXPECT_EQ(first_not(mid.data(), count, doubled), count);
  EXPECT_EQ(first_not(end.data(), count, doubled * 2 + 1), count);
}

// submit returns while the stream is held, and the Kokkos work has not run.
TEST(Kokkos, KOK_2__submit_returns_without_waiting_for_the_work) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> out{count};
  std::fill(out.begin(), out.end(), 0);
  gate g{s};
  sluice::fill(s, b.data(), 1, b.size_bytes());
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok2"); });
  }));
  sluice::copy(s, out.data(), b.data(), b.size_bytes());
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(out[0], 0);
  g.release();
  s.synchronize();
  EXPECT_EQ(first_not(out.data(), count, doubled), count);
}

// An event recorded after submit captures the Kokkos work: a stream that
// waits on it sees the result, and not before.
TEST(Kokkos, KOK_3__an_event_after_submit_captures_the_kokkos_work) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::stream reader{dev};
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> out{count};
  std::fill(out.begin(), out.end(), 0);
  sluice::event e{dev};
  {
    gate g{s};
    sluice::fill(s, b.data(), 1, b.size_bytes());
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok3"); });
    e.record(s);
    reader.wait(e);
    sluice::copy(reader, out.data(), b.data(), b.size_bytes());
    EXPECT_TRUE(stays_false([&] { return reader.ready() || e.ready(); }));
  }
  reader.synchronize();
  EXPECT_EQ(first_not(out.data(), count, doubled), count)
      << "the reader did not see the Kokkos work (value " << out[0] << ")";
}

// Kokkos work on one stream runs and completes while another stream is held
// (no global fence), and Kokkos work submitted to the held stream afterwards
// waits only for that stream.
TEST(Kokkos, KOK_4__kokkos_work_holds_no_other_stream) {
  const sluice::device dev{0};
  sluice::stream held{dev};
  sluice::stream other{dev};
  sluice::device_buffer<int> hb{dev, count};
  sluice::device_buffer<int> ob{dev, count};
  sluice::pinned_buffer<int> out{count};
  sluice::pinned_buffer<int> held_out{count};
  gate g{held};
  sluice::fill(held, hb.data(), 1, hb.size_bytes());
  const bool independent = returns_while_held(g, [&] {
    sluice::fill(other, ob.data(), 1, ob.size_bytes());
    sluice::kokkos::submit(other,
                           [&ob](const exec_t& exec) { double_plus_one(exec, ob, "kok4o"); });
    sluice::copy(other, out.data(), ob.data(), ob.size_bytes());
    other.synchronize();
  });
  EXPECT_TRUE(independent) << "Kokkos work on one stream waited for a held stream";
  EXPECT_EQ(first_not(out.data(), count, doubled), count);
  sluice::kokkos::submit(held, [&hb](const exec_t& exec) { double_plus_one(exec, hb, "kok4h"); });
  sluice::copy(held, held_out.data(), hb.data(), hb.size_bytes());
  if (independent) {
    EXPECT_FALSE(held.ready());
  }
  g.release();
  held.synchronize();
  EXPECT_EQ(first_not(held_out.data(), count, doubled), count);
}

// Host backend: a throwing submitted function is reported once, by the
// stream's next synchronize, and later work runs. GPU backends: f runs on the
// calling thread, so its exception leaves submit itself, and the stream goes on.
TEST(Kokkos, KOK_5__an_exception_of_the_submitted_function_is_reported_once) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> out{count};
  const auto thrower = [](const exec_t&) { throw std::runtime_error("kok5 thrown"); };
  if (sluice::backend() == sluice::backend_kind::host) {
    sluice::kokkos::submit(s, thrower);
    sluice::fill(s, b.data(), 1, b.size_bytes());
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok5"); });
    sluice::copy(s, out.data(), b.data(), b.size_bytes());
    try {
      s.synchronize();
      ADD_FAILURE() << "the exception was not reported";
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::host_function_failed);
      EXPECT_TRUE(contains(e.what(), "kok5 thrown")) << e.what();
    }
    EXPECT_NO_THROW(s.synchronize()) << "reported twice";
  } else {
    EXPECT_THROW(sluice::kokkos::submit(s, thrower), std::runtime_error);
    sluice::fill(s, b.data(), 1, b.size_bytes());
    sluice::kokkos::submit(s, [&b](const exec_t& exec) { double_plus_one(exec, b, "kok5"); });
    sluice::copy(s, out.data(), b.data(), b.size_bytes());
    s.synchronize();
  }
  EXPECT_EQ(first_not(out.data(), count, doubled), count) << "later work did not run";
}

// instance(s) and borrow(exec) (GPU backends): work on the instance and on the
// stream run in one order; the borrowed stream runs on the instance's stream.
#if !defined(SLUICE_BACKEND_HOST)
TEST(Kokkos, KOK_1__instance_and_borrowed_stream_share_the_native_stream) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  exec_t exec = sluice::kokkos::instance(s);
  sluice::stream borrowed = sluice::kokkos::borrow(exec);
  EXPECT_EQ(sluice::native_handle(borrowed), sluice::native_handle(s));
  sluice::device_buffer<int> b{dev, count};
  sluice::pinned_buffer<int> out{count};
  {
    gate g{s};
    sluice::fill(borrowed, b.data(), 1, b.size_bytes());
    double_plus_one(exec, b, "kok1i");
    sluice::copy(borrowed, out.data(), b.data(), b.size_bytes());
  }
  borrowed.synchronize();
  EXPECT_EQ(first_not(out.data(), count, doubled), count);
}
#endif

#if defined(SLUICE_BACKEND_HOST)
// The backends with graphs reject a submit in a capture (GRAPH-5: not in this
// version); the capture stays valid.
TEST(Kokkos, GRAPH_5__a_submit_on_a_capturing_stream_throws_capture_violation) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> runs{0};
  sluice::capture cap{s};
  try {
    sluice::kokkos::submit(s, [&](const sluice::kokkos::execution_space&) { runs.fetch_add(1); });
    ADD_FAILURE() << "submit in a capture was accepted";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), errc::capture_violation) << e.what();
  }
  const sluice::graph g = cap.end();
  EXPECT_EQ(g.size(), 0U);
  g.instantiate().launch(s);
  s.synchronize();
  EXPECT_EQ(runs.load(), 0);
}
#endif

}  // namespace
}  // namespace sluice::conformance
