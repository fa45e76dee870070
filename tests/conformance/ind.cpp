// IND: independence across streams (docs/semantics.md, IND-1 .. IND-3).
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <vector>

namespace {

using sluice::conformance::eventually;
using sluice::conformance::first_byte_not;
using sluice::conformance::gate;
using sluice::conformance::order_log;
using sluice::conformance::returns_while_held;
using sluice::conformance::stays_false;

using byte = unsigned char;
constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

//! How many streams a test may keep live on d without exceeding what the
//! backend guarantees to be independent.
int independent_streams(sluice::device d, int wanted) {
  return std::min(sluice::independent_stream_limit(d), wanted);
}

}  // namespace

TEST(Independence, IND_1__a_stream_completes_while_another_is_held) {
  const sluice::device dev{0};
  ASSERT_GE(sluice::independent_stream_limit(dev), 2)
      << "a device whose streams all serialize cannot keep IND-1";
  sluice::stream held{dev};
  gate g;
  g.hold(held);
  sluice::device_buffer<byte> held_data{dev, 64 * kib};
  sluice::fill(held, held_data.data(), 1, held_data.size());

  // Created after the hold: no legacy default-stream behaviour may tie it to `held`.
  sluice::stream other{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out{n};
  std::fill(out.begin(), out.end(), byte{0});
  sluice::fill(other, d.data(), 0x5A, n);
  sluice::copy(other, out.data(), d.data(), n);

  EXPECT_TRUE(eventually([&] { return other.ready(); }));
  EXPECT_TRUE(returns_while_held(g, [&] { other.synchronize(); }));
  EXPECT_EQ(first_byte_not(out.data(), n, 0x5A), n);
  EXPECT_FALSE(held.ready());
  g.release();
  held.synchronize();
}

// Freeing pinned memory must not tie anything to a held stream. On CUDA the
// vendor's free (cudaFreeHost) waits for the whole device; sluice called it on
// its own thread, and the suite hung on an H100 right after tests that freed
// pinned buffers, in tests that then held a stream while a host function and a
// pageable copy waited (docs/conformance/README.md). Each round frees a pinned
// buffer just before holding a stream that has both.
TEST(Independence, IND_1__a_pinned_free_holds_no_stream_behind_a_gate) {
  const sluice::device dev{0};
  constexpr std::size_t n = 256 * kib;
  sluice::stream other{dev};
  sluice::device_buffer<byte> d{dev, n};
  for (int round = 0; round < 10; ++round) {
    {
      sluice::pinned_buffer<byte> staging{n};
      std::fill(staging.begin(), staging.end(), static_cast<byte>(round));
      sluice::copy(other, d.data(), staging.data(), n);
      other.synchronize();
    }  // freed here, while the next stream is being held
    sluice::stream held{dev};
    gate g;
    g.hold(held);
    std::atomic<bool> ran{false};
    held.host_func([&ran] { ran.store(true); });
    std::vector<byte> page(n, 0xFF);
    EXPECT_TRUE(sluice::conformance::blocks_until_released(
        g, [&] { sluice::copy(held, page.data(), d.data(), n); }))
        << "round " << round;
    EXPECT_TRUE(ran.load()) << "round " << round;
    EXPECT_EQ(first_byte_not(page.data(), n, static_cast<byte>(round)), n) << "round " << round;
    EXPECT_TRUE(eventually([&] { return held.ready(); })) << "round " << round;
  }
}

// Every stream holds its own gate; gates open from the last stream to the first,
// so each stream must complete while all streams created before it are held.
TEST(Independence, IND_1__streams_up_to_the_limit_complete_in_any_release_order) {
  const sluice::device dev{0};
  const int count = independent_streams(dev, 8);
  ASSERT_GE(count, 2);
  std::deque<gate> gates(static_cast<std::size_t>(count));
  std::vector<sluice::stream> streams;
  sluice::device_buffer<byte> d{dev, static_cast<std::size_t>(count) * 64 * kib};
  order_log log;
  for (int i = 0; i < count; ++i) {
    streams.emplace_back(dev);
    gates[static_cast<std::size_t>(i)].hold(streams.back());
    sluice::fill(streams.back(), d.data() + static_cast<std::size_t>(i) * 64 * kib,
                 static_cast<byte>(i), 64 * kib);
    streams.back().host_func([&log, i] { log.add(i); });
  }

  for (int i = count - 1; i >= 0; --i) {
    gates[static_cast<std::size_t>(i)].release();
    EXPECT_TRUE(eventually([&] { return streams[static_cast<std::size_t>(i)].ready(); }))
        << "stream " << i << " did not complete while streams 0.." << i - 1 << " were held";
    for (int j = 0; j < i; ++j)
      EXPECT_FALSE(streams[static_cast<std::size_t>(j)].ready()) << "held stream " << j;
  }
  for (auto& s : streams) s.synchronize();
  std::vector<int> expected;
  for (int i = count - 1; i >= 0; --i) expected.push_back(i);
  EXPECT_EQ(log.values(), expected);
}

// A held stream of any priority holds nobody else, whatever their priorities.
TEST(Independence, IND_1__a_held_stream_of_any_priority_holds_no_other) {
  const sluice::device dev{0};
  ASSERT_GE(independent_streams(dev, 4), 4) << "this test needs 4 independent streams";
  const sluice::priority levels[] = {sluice::priority::low, sluice::priority::normal,
                                     sluice::priority::high};
  for (const sluice::priority held_level : levels) {
    sluice::stream_options held_options;
    held_options.priority = held_level;
    sluice::stream held{dev, held_options};
    gate g;
    g.hold(held);
    held.host_func([] {});

    std::vector<sluice::stream> others;
    for (const sluice::priority level : levels) {
      sluice::stream_options o;
      o.priority = level;
      others.emplace_back(dev, o);
      others.back().host_func([] {});
    }
    for (std::size_t i = 0; i < others.size(); ++i)
      EXPECT_TRUE(eventually([&] { return others[i].ready(); }))
          << "a stream of level " << i << " waited for a held stream of level "
          << static_cast<int>(held_level);
    EXPECT_FALSE(held.ready());
    g.release();
    held.synchronize();
  }
}

// MAY: two streams' fills overlap in time (device timestamps of timing events,
// all measured from one reference event that completed before the release).
TEST(Independence, IND_2__independent_streams_run_concurrently) {
  const sluice::device dev{0};
  const sluice::event_options timing{true, false};
  constexpr std::size_t n = 8 * mib;
  constexpr int fills = 4;
  sluice::stream a{dev}, b{dev}, reference_stream{dev};
  sluice::device_buffer<byte> da{dev, n}, db{dev, n};
  sluice::event reference{dev, timing};
  sluice::event start_a{dev, timing}, stop_a{dev, timing}, start_b{dev, timing},
      stop_b{dev, timing};
  // warm-up: first records and fills may be slow
  start_a.record(a);
  sluice::fill(a, da.data(), 0, n);
  stop_a.record(a);
  a.synchronize();
  (void)sluice::elapsed(start_a, stop_a);

  for (int attempt = 0; attempt < 5; ++attempt) {
    gate g;
    g.hold(a);
    g.hold(b);
    start_a.record(a);
    start_b.record(b);
    for (int i = 0; i < fills; ++i) {
      sluice::fill(a, da.data(), static_cast<byte>(i), n);
      sluice::fill(b, db.data(), static_cast<byte>(i), n);
    }
    stop_a.record(a);
    stop_b.record(b);
    reference.record(reference_stream);
    reference.synchronize();
    g.release();
    a.synchronize();
    b.synchronize();

    const double a0 = sluice::elapsed(reference, start_a).count();
    const double a1 = sluice::elapsed(reference, stop_a).count();
    const double b0 = sluice::elapsed(reference, start_b).count();
    const double b1 = sluice::elapsed(reference, stop_b).count();
    EXPECT_LE(a0, a1);
    EXPECT_LE(b0, b1);
    if (std::max(a0, b0) < std::min(a1, b1)) return;  // the two intervals overlap
  }
  SLUICE_NOT_OBSERVED("fills on two streams never overlapped in 5 attempts");
}

TEST(Independence, IND_3__wait_stream_orders_after_the_others_earlier_work) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out{n};
  std::fill(out.begin(), out.end(), byte{0});

  gate g;
  g.hold(producer);
  sluice::fill(producer, d.data(), 0x42, n);
  EXPECT_TRUE(returns_while_held(g, [&] { consumer.wait(producer); }))
      << "wait(stream) must return to the host at once";
  sluice::copy(consumer, out.data(), d.data(), n);

  EXPECT_TRUE(stays_false([&] { return consumer.ready() || out[0] != 0; }));
  g.release();
  consumer.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x42), n);
  producer.synchronize();
}

// Only the work enqueued on `other` at the time of the call counts: work
// enqueued there afterwards (here: held by a gate) does not hold this stream.
TEST(Independence, IND_3__wait_stream_ignores_work_enqueued_later_on_the_other) {
  const sluice::device dev{0};
  sluice::stream other{dev}, s{dev};
  order_log log;
  other.host_func([&] { log.add(1); });
  s.wait(other);
  gate later;
  later.hold(other);
  other.host_func([&] { log.add(3); });
  s.host_func([&] { log.add(2); });

  EXPECT_TRUE(eventually([&] { return s.ready(); }))
      << "the stream waited for work enqueued on the other stream after wait()";
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2}));
  EXPECT_FALSE(other.ready());
  later.release();
  other.synchronize();
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 3}));
}

TEST(Independence, IND_3__wait_on_an_idle_stream_and_on_itself_is_harmless) {
  const sluice::device dev{0};
  sluice::stream idle{dev}, s{dev};
  s.wait(idle);
  s.wait(s);  // everything before is ordered already; must not deadlock
  s.host_func([] {});
  EXPECT_TRUE(eventually([&] { return s.ready(); }));
}

// wait(stream) composes: c waits on b, which waits on a held stream.
TEST(Independence, IND_3__waits_are_transitive) {
  const sluice::device dev{0};
  sluice::stream a{dev}, b{dev}, c{dev};
  order_log log;
  gate g;
  g.hold(a);
  a.host_func([&] { log.add(1); });
  b.wait(a);
  b.host_func([&] { log.add(2); });
  c.wait(b);
  c.host_func([&] { log.add(3); });

  EXPECT_TRUE(stays_false([&] { return b.ready() || c.ready(); }));
  g.release();
  c.synchronize();
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 3}));
}

TEST(IndependenceMultiDevice, IND_3__wait_on_a_stream_of_another_device) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  sluice::stream producer{d0}, consumer{d1};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> src{d0, n};
  sluice::pinned_buffer<byte> middle{n}, out{n};
  std::fill(middle.begin(), middle.end(), byte{0});
  std::fill(out.begin(), out.end(), byte{0});

  gate g;
  g.hold(producer);
  sluice::fill(producer, src.data(), 0x6B, n);
  sluice::copy(producer, middle.data(), src.data(), n);
  consumer.wait(producer);
  // Pinned memory is visible to every device: the consumer's copy is correct
  // only when it runs after the producer's copy.
  sluice::copy(consumer, out.data(), middle.data(), n);

  EXPECT_TRUE(stays_false([&] { return consumer.ready() || out[0] != 0; }));
  g.release();
  consumer.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x6B), n);
  producer.synchronize();
}
