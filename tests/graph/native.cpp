// GRAPH: work given to a capturing stream's native handle (docs/graphs.md).
// Where the vendor captures it (CUDA), each run of it between two of sluice's
// operations on the stream is one `native` vertex in stream order, run by
// every launch, whether the exec is the vendor's graph or sluice's replay;
// calls the vendor's capture refuses make end() throw. Elsewhere end()
// refuses native work (capture.cpp, GRAPH-5) and these tests skip.
#include "../conformance/native_ops.hpp"
#include "graph_test.hpp"

#include <sluice/backend.hpp>
#include <sluice/native.hpp>

#include <optional>
#include <string>

namespace sluice::conformance {
namespace {

constexpr std::size_t native_bytes = 64 * kib;

#define SKIP_UNLESS_NATIVE_WORK_IS_CAPTURED()                                             \
  if (sluice::backend() != sluice::backend_kind::cuda)                                    \
  GTEST_SKIP() << "this backend does not capture native work: end() refuses it (GRAPH-5 " \
                  "checks that); nothing to run here"

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t k = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++k;
  return k;
}

// Native fills around sluice's copies, one with a handle taken before the
// capture and kept: each copy sees the native fill before it, at every
// launch, and nothing runs at capture. With a host function the exec is
// sluice's replay; without, CUDA's own graph.
TEST(Graph, GRAPH_1__native_work_runs_at_each_launch_in_stream_order) {
  SKIP_UNLESS_NATIVE_WORK_IS_CAPTURED();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<byte> d{dev, native_bytes};
  sluice::pinned_buffer<byte> first = filled_pinned_bytes(native_bytes, 0);
  sluice::pinned_buffer<byte> second = filled_pinned_bytes(native_bytes, 0);
  sluice::pinned_buffer<byte> probe = filled_pinned_bytes(native_bytes, 9);
  const native_stream_t kept = sluice::native_handle(s);
  for (const bool with_host_function : {false, true}) {
    SCOPED_TRACE(with_host_function ? "sluice's replay" : "the vendor's graph");
    std::memset(first.data(), 0, native_bytes);
    std::memset(second.data(), 0, native_bytes);
    sluice::fill(s, d.data(), 0, native_bytes);
    s.synchronize();
    int ran = 0;
    sluice::graph g = [&] {
      sluice::capture cap{s};
      native_fill(dev, kept, d.data(), 1, native_bytes);
      sluice::copy(s, first.data(), d.data(), native_bytes);
      native_fill(dev, sluice::native_handle(s), d.data(), 2, native_bytes);
      sluice::copy(s, second.data(), d.data(), native_bytes);
      if (with_host_function) s.host_func([&ran] { ++ran; });
      return cap.end();
    }();
    EXPECT_EQ(g.size(), with_host_function ? 5U : 4U);
    EXPECT_EQ(occurrences(g.to_dot(), "kind=\"native\""), 2U) << g.to_dot();
    sluice::copy(s, probe.data(), d.data(), native_bytes);
    s.synchronize();
    EXPECT_EQ(count_not(probe.data(), native_bytes, 0), 0U) << "captured native work ran";
    EXPECT_EQ(count_not(first.data(), native_bytes, 0), 0U) << "a recorded copy ran";
    const sluice::graph_exec exec = g.instantiate();
    EXPECT_EQ(exec.how().rfind(with_host_function ? "replay" : "native", 0), 0U) << exec.how();
    for (int launch = 0; launch < 3; ++launch) {
      std::memset(first.data(), 0, native_bytes);
      std::memset(second.data(), 0, native_bytes);
      sluice::fill(s, d.data(), 9, native_bytes);  // before the launch (GRAPH-2)
      exec.launch(s);
      s.synchronize();
      EXPECT_EQ(count_not(first.data(), native_bytes, 1), 0U) << "launch " << launch;
      EXPECT_EQ(count_not(second.data(), native_bytes, 2), 0U) << "launch " << launch;
    }
    EXPECT_EQ(ran, with_host_function ? 3 : 0);
  }
}

// Native work on a joined stream depends on the join and is joined back by
// the record after it; native work after a joined stream's last record is
// not joined back, and end() says so.
TEST(Graph, GRAPH_4__native_work_on_a_joined_stream_follows_the_joins) {
  SKIP_UNLESS_NATIVE_WORK_IS_CAPTURED();
  const sluice::device dev{0};
  sluice::stream s{dev}, side{dev};
  sluice::device_buffer<byte> d{dev, native_bytes};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(native_bytes, 0);
  sluice::event fork{dev}, join{dev};
  sluice::graph g = [&] {
    sluice::capture cap{s};
    sluice::fill(s, d.data(), 3, native_bytes);
    fork.record(s);
    side.wait(fork);
    native_fill(dev, sluice::native_handle(side), d.data(), 7, native_bytes / 2);
    join.record(side);
    s.wait(join);
    sluice::copy(s, out.data(), d.data(), native_bytes);
    return cap.end();
  }();
  EXPECT_EQ(g.size(), 5U) << g.to_dot();
  const sluice::graph_exec exec = g.instantiate();
  for (int launch = 0; launch < 2; ++launch) {
    std::memset(out.data(), 0, native_bytes);
    exec.launch(s);
    s.synchronize();
    EXPECT_EQ(count_not(out.data(), native_bytes / 2, 7), 0U) << "launch " << launch;
    EXPECT_EQ(count_not(out.data() + native_bytes / 2, native_bytes / 2, 3), 0U);
  }
  {
    sluice::capture cap{s};
    fork.record(s);
    side.wait(fork);
    join.record(side);
    s.wait(join);
    native_fill(dev, sluice::native_handle(side), d.data(), 8, native_bytes);
    EXPECT_TRUE(violates([&] { (void)cap.end(); })) << "native work not joined back";
  }
  EXPECT_FALSE(sluice::is_capturing(side));
  sluice::fill(side, d.data(), 4, native_bytes);
  sluice::copy(side, out.data(), d.data(), native_bytes);
  side.synchronize();
  EXPECT_EQ(count_not(out.data(), native_bytes, 4), 0U) << "the stream does not work after it";
}

// A native call that the vendor's capture refuses (synchronizing the
// capturing stream) spoils the capture: end() throws, nothing recorded runs,
// and the stream works normally afterwards.
TEST(Graph, GRAPH_5__native_work_the_vendor_cannot_capture_makes_end_throw) {
  SKIP_UNLESS_NATIVE_WORK_IS_CAPTURED();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(native_bytes, 0);
  {
    sluice::capture cap{s};
    sluice::fill(s, p.data(), 3, native_bytes);
    EXPECT_NE(native_synchronize(sluice::native_handle(s)), 0)
        << "the vendor synchronized a capturing stream";
    sluice::fill(s, p.data(), 5, native_bytes);
    EXPECT_TRUE(violates([&] { (void)cap.end(); }));
    EXPECT_FALSE(sluice::is_capturing(s));
  }
  EXPECT_EQ(count_not(p.data(), native_bytes, 0), 0U) << "a recorded fill ran";
  sluice::fill(s, p.data(), 4, native_bytes);
  s.synchronize();
  EXPECT_EQ(count_not(p.data(), native_bytes, 4), 0U);
}

// A discarded capture runs none of the native work given to it, and a member
// stream destroyed with native work captured leaves no vendor capture behind:
// the streams made after it work.
TEST(Graph, GRAPH_12__native_work_of_a_discarded_capture_never_runs) {
  SKIP_UNLESS_NATIVE_WORK_IS_CAPTURED();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<byte> d{dev, native_bytes};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(native_bytes, 9);
  sluice::fill(s, d.data(), 0, native_bytes);
  {
    sluice::capture cap{s};
    native_fill(dev, sluice::native_handle(s), d.data(), 5, native_bytes);
  }
  EXPECT_FALSE(sluice::is_capturing(s));
  sluice::copy(s, out.data(), d.data(), native_bytes);
  s.synchronize();
  EXPECT_EQ(count_not(out.data(), native_bytes, 0), 0U) << "discarded native work ran";
  {
    sluice::capture cap{s};
    sluice::event fork{dev};
    fork.record(s);
    std::optional<sluice::stream> side{std::in_place, dev};
    side->wait(fork);
    native_fill(dev, sluice::native_handle(*side), d.data(), 6, native_bytes);
    side.reset();
    EXPECT_TRUE(violates([&] { (void)cap.end(); })) << "a member stream was destroyed";
  }
  for (int k = 0; k < 4; ++k) {  // streams that may reuse the destroyed one's vendor stream
    sluice::stream t{dev};
    sluice::fill(t, d.data(), static_cast<byte>(10 + k), native_bytes);
    sluice::copy(t, out.data(), d.data(), native_bytes);
    t.synchronize();
    EXPECT_EQ(count_not(out.data(), native_bytes, static_cast<byte>(10 + k)), 0U);
  }
}

// A borrowed stream whose native stream its owner captures (a library's own
// capture): sluice's operations on it are refused before anything is
// enqueued, its accessors work, the owner's capture is not spoiled, and once
// it ended the stream works again. The host backend has no vendor capture.
TEST(Graph, GRAPH_5__operations_on_a_borrowed_stream_its_owner_captures_are_refused) {
  if (sluice::backend() == sluice::backend_kind::host)
    GTEST_SKIP() << "the host backend has no vendor capture to borrow a stream from";
  const sluice::device dev{0};
  sluice::stream owner{dev};
  const native_stream_t native = sluice::native_handle(owner);
  sluice::stream borrowed = sluice::borrow(dev, native);
  sluice::device_buffer<byte> d{dev, native_bytes};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(native_bytes, 9);
  sluice::fill(borrowed, d.data(), 0, native_bytes);
  borrowed.synchronize();
  sluice::event e{dev};
  ASSERT_EQ(native_begin_capture(native), 0);
  native_fill(dev, native, d.data(), 1, native_bytes);  // the owner's captured work
  EXPECT_TRUE(violates([&] { sluice::fill(borrowed, d.data(), 2, native_bytes); }));
  EXPECT_TRUE(violates([&] { sluice::copy(borrowed, p.data(), d.data(), native_bytes); }));
  EXPECT_TRUE(violates([&] { borrowed.host_func([] {}); }));
  EXPECT_TRUE(violates([&] { e.record(borrowed); }));
  EXPECT_TRUE(violates([&] { borrowed.wait(owner); }));
  EXPECT_TRUE(violates([&] { (void)borrowed.ready(); }));
  EXPECT_TRUE(violates([&] { borrowed.synchronize(); }));
  EXPECT_TRUE(violates([&] { sluice::capture cap{borrowed}; }));
  EXPECT_EQ(borrowed.device(), dev);  // accessors ask the vendor nothing
  EXPECT_EQ(native_end_capture(native), 0) << "the owner's capture was spoiled";
  sluice::copy(borrowed, p.data(), d.data(), native_bytes);
  borrowed.synchronize();
  EXPECT_EQ(count_not(p.data(), native_bytes, 0), 0U) << "a refused or captured operation ran";
}

}  // namespace
}  // namespace sluice::conformance
