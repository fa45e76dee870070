// IND-4 at a cold start: what a program can do first, done first, behind a
// held stream. A backend may prepare things at its first use (a vendor runtime
// loads a kernel's code at its first launch unless told otherwise, and that
// load can wait for every stream of the device); a suite that always runs warm
// never sees it. Each ColdStart test is meant to run as the first and only
// test of a fresh process: ctest runs every one so (conformance.<backend>.cold.*,
// tests/CMakeLists.txt reads their names from this file). In a whole-suite run
// they still check IND-4, warm.
//
// Each enqueue runs on a helper thread (returns_while_held): a backend whose
// first enqueue waits for the held stream fails the test, naming the call,
// instead of hanging it; the hold is then released so that the call returns.
#include "support.hpp"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace sluice::conformance {
namespace {

constexpr std::size_t n = 64 * kib + 3;
constexpr std::size_t small = 4 * kib, large = 4 * mib + 5;

//! The reported program: a stream, a flag gate held on it, a device buffer and
//! a pinned buffer, then host functions and copies behind the hold, then the
//! gate opened.
TEST(ColdStart, IND_4__host_functions_and_copies_first_behind_a_held_stream_return) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  gate g{s};
  std::optional<sluice::device_buffer<byte>> on_device;
  std::optional<sluice::pinned_buffer<byte>> in_buffer, out_buffer;
  ASSERT_TRUE(returns_while_held(g, [&] {
    on_device.emplace(dev, n);
    in_buffer.emplace(n);
    out_buffer.emplace(n);
  })) << "allocating device and pinned memory";
  auto& in = *in_buffer;
  auto& out = *out_buffer;
  write_pattern(in.data(), n, 7);
  std::memset(out.data(), 0, n);
  std::atomic<int> ran{0};
  EXPECT_TRUE(returns_while_held(g, [&] { s.host_func([&] { ran.fetch_add(1); }); }))
      << "the first host function";
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::copy(s, on_device->data(), in.data(), n);
    sluice::copy(s, out.data(), on_device->data(), n);
  })) << "copies between pinned and device memory";
  EXPECT_TRUE(returns_while_held(g, [&] { s.host_func([&] { ran.fetch_add(1); }); }))
      << "the second host function";
  EXPECT_EQ(ran.load(), 0) << "work ran while its stream was held";
  g.release();
  s.synchronize();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(first_pattern_mismatch(out.data(), n, 7), n);
}

//! A copy between two pinned buffers: the GPU backends carry it out on the
//! host, in stream order (a host function of sluice's own).
TEST(ColdStart, IND_4__a_pinned_to_pinned_copy_first_behind_a_held_stream_returns) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  gate g{s};
  std::optional<sluice::pinned_buffer<byte>> in_buffer, out_buffer;
  ASSERT_TRUE(returns_while_held(g, [&] {
    in_buffer.emplace(n);
    out_buffer.emplace(n);
  })) << "allocating pinned memory";
  auto& in = *in_buffer;
  auto& out = *out_buffer;
  write_pattern(in.data(), n, 11);
  std::memset(out.data(), 0, n);
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::copy(s, out.data(), in.data(), n); }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(out.data(), n, 11), n);
}

//! A host function first on a stream of its own while another stream is held:
//! it returns, and runs, before the hold is released (IND-1, HOST-2).
TEST(ColdStart, IND_4__a_host_function_first_beside_a_held_stream_runs) {
  const sluice::device dev{0};
  held_stream held(dev);
  sluice::stream s{dev};
  std::atomic<bool> ran{false};
  EXPECT_TRUE(returns_while_held(held.g, [&] { s.host_func([&] { ran.store(true); }); }));
  EXPECT_TRUE(eventually([&] { return ran.load(); }))
      << "the host function did not run while another stream was held";
  held.g.release();
  s.synchronize();
  held.s.synchronize();
}

//! 64 streams made while one is held, each waiting on an event of the held
//! stream and enqueuing a host function, the first thing in a process.
TEST(ColdStart, IND_4__many_streams_behind_one_hold_enqueue_host_functions) {
  const sluice::device dev{0};
  constexpr int count = 64;
  sluice::reserve_streams(dev, count + 1);  // stream creation itself never waits (IND-4)
  held_stream held(dev);
  std::vector<std::unique_ptr<sluice::stream>> streams;
  std::atomic<int> ran{0};
  EXPECT_TRUE(returns_while_held(held.g, [&] {
    for (int i = 0; i < count; ++i) {
      streams.push_back(std::make_unique<sluice::stream>(dev));
      streams.back()->wait(held.behind);
      streams.back()->host_func([&] { ran.fetch_add(1); });
    }
  }));
  EXPECT_EQ(ran.load(), 0) << "host functions ran before the stream they wait for";
  held.g.release();
  for (const auto& s : streams) s->synchronize();
  EXPECT_EQ(ran.load(), count);
}

//! A batch of small aligned pieces within one device: the GPU backends may move
//! it with sluice's SM copy kernel (local_sm).
TEST(ColdStart, IND_4__a_batch_first_behind_a_held_stream_returns) {
  const sluice::device dev{0};
  constexpr std::size_t piece = 4 * kib, pieces = 8;
  sluice::device_buffer<byte> from(dev, piece * pieces), to(dev, piece * pieces);
  sluice::pinned_buffer<byte> in(piece * pieces), out(piece * pieces);
  sluice::stream s{dev};
  gate g{s};
  write_pattern(in.data(), in.size(), 13);
  std::memset(out.data(), 0, out.size());
  std::vector<sluice::peer_piece> batch;
  for (std::size_t i = 0; i < pieces; ++i)
    batch.push_back({to.data() + i * piece, from.data() + i * piece, piece});
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::copy(s, from.data(), in.data(), in.size());
    (void)sluice::copy_peer_batch(s, dev, dev, batch);
    sluice::copy(s, out.data(), to.data(), out.size());
  }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(out.data(), out.size(), 13), out.size());
}

//! Copies between two devices first behind a held stream, with peer access
//! (small ones: the GPU backends' SM copy kernel; a large one: the copy engine).
TEST(ColdStartMultiDevice, IND_4__peer_copies_first_behind_a_held_stream_return) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device a{0}, b{1};
  if (sluice::link(a, b).peer_access_possible) sluice::enable_peer_access(a, b);
  const auto src = patterned_device_bytes(a, large, 17);
  sluice::device_buffer<byte> dst(b, large);
  sluice::stream s{a};
  gate g{s};
  std::vector<sluice::peer_piece> batch;
  for (std::size_t i = 1; i < 5; ++i)
    batch.push_back({dst.data() + i * small, src.data() + i * small, small});
  EXPECT_TRUE(returns_while_held(g, [&] {
    (void)sluice::copy_peer(s, dst.data(), b, src.data(), a, small);
    (void)sluice::copy_peer_batch(s, b, a, batch);
    (void)sluice::copy_peer(s, dst.data() + 5 * small, b, src.data() + 5 * small, a,
                            large - 5 * small);
  }));
  g.release();
  s.synchronize();
  const auto back = read_back(dst);
  EXPECT_EQ(first_pattern_mismatch(back.data(), large, 17), large);
}

//! A copy between two devices without peer access first behind a held stream:
//! staged through host memory (the last two devices, which no test enables).
TEST(ColdStartMultiDevice, IND_4__a_staged_copy_first_behind_a_held_stream_returns) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device a{count - 2}, b{count - 1};
  const auto src = patterned_device_bytes(a, large, 19);
  sluice::device_buffer<byte> dst(b, large);
  sluice::stream s{b};
  gate g{s};
  sluice::copy_path path = sluice::copy_path::local;
  EXPECT_TRUE(returns_while_held(
      g, [&] { path = sluice::copy_peer(s, dst.data(), b, src.data(), a, large); }));
  g.release();
  s.synchronize();
  if (!sluice::peer_access_enabled(b, a)) {
    EXPECT_EQ(path, sluice::copy_path::staged);
  }
  const auto back = read_back(dst);
  EXPECT_EQ(first_pattern_mismatch(back.data(), large, 19), large);
}

}  // namespace
}  // namespace sluice::conformance
