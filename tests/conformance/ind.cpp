// IND: independence across streams (docs/semantics.md, IND-1 .. IND-4).
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

//! How many streams a test may keep live on d without exceeding what the
//! backend guarantees to be independent.
int independent_streams(sluice::device d, int wanted) {
  return std::min(sluice::independent_stream_limit(d), wanted);
}

TEST(Independence, IND_1__a_stream_completes_while_another_is_held) {
  const sluice::device dev{0};
  ASSERT_GE(sluice::independent_stream_limit(dev), 2)
      << "a device whose streams all serialize cannot keep IND-1";
  sluice::stream held{dev};
  gate g{held};
  sluice::device_buffer<byte> held_data{dev, 64 * kib};
  sluice::fill(held, held_data.data(), 1, held_data.size());

  // Created after the hold: no legacy default-stream behaviour may tie it to `held`.
  sluice::stream other{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
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
      sluice::pinned_buffer<byte> staging = filled_pinned_bytes(n, static_cast<byte>(round));
      sluice::copy(other, d.data(), staging.data(), n);
      other.synchronize();
    }  // freed here, while the next stream is being held
    sluice::stream held{dev};
    gate g{held};
    std::atomic<bool> ran{false};
    held.host_func([&ran] { ran.store(true); });
    std::vector<byte> page(n, 0xFF);
    EXPECT_TRUE(blocks_until_released(g, [&] { sluice::copy(held, page.data(), d.data(), n); }))
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
    gate g{held};
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
//
// What stream order guarantees is an observation here, not an assertion.
// start_x and stop_x are recorded on the same stream x, so stop_x completes
// after start_x (ORD-1) and its timestamp is not earlier: EVT-9 checks that as
// a MUST, across a gate held for a known time. An EXPECT_LE(start, stop) here
// could fail only where those MUST tests fail too, and would report the MAY
// rule IND-2 as FAIL for another rule's fault. An attempt whose stop comes out
// before its start cannot show an overlap: it is printed as a note, counted in
// the test's property unusable_attempts and left out, and NOT OBSERVED says
// how many attempts were unusable.
//
// What an observation shows: the two intervals overlap also when a single
// worker runs the two streams' operations one at a time, interleaved (the host
// backend with SLUICE_HOST_SLOTS=1 reports the overlap), so it shows that the
// two streams made progress together, not that two fills ran at the same
// instant.
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

  constexpr int attempts = 5;
  int unusable = 0;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    gate g{a, b};
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
    if (a1 < a0 || b1 < b0) {  // not a verdict: ORD-1 and EVT-9 are checked elsewhere
      ++unusable;
      std::printf(
          "note: IND-2 attempt %d left out: a stop timestamp is before its start "
          "(a: %.3f .. %.3f ms, b: %.3f .. %.3f ms after the reference)\n",
          attempt + 1, a0, a1, b0, b1);
      continue;
    }
    if (std::max(a0, b0) < std::min(a1, b1)) {  // the two intervals overlap
      RecordProperty("unusable_attempts", unusable);
      return;
    }
  }
  RecordProperty("unusable_attempts", unusable);
  if (unusable == 0)
    SLUICE_NOT_OBSERVED("fills on two streams never overlapped in " << attempts << " attempts");
  SLUICE_NOT_OBSERVED("fills on two streams never overlapped in "
                      << attempts << " attempts, " << unusable
                      << " of them unusable (a stop timestamp before its start)");
}

TEST(Independence, IND_3__wait_stream_orders_after_the_others_earlier_work) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);

  gate g{producer};
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
  gate later{other};
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
  gate g{a};
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
  sluice::pinned_buffer<byte> middle = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);

  gate g{producer};
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

// IND-4: creating or destroying anything never waits for other streams' work.
// On CUDA 13 (H200, driver 580.159.04) cudaStreamCreate* waited for the
// device's pending work once the context held about 33 streams: a program that
// held one stream and then created more deadlocked in the 34th creation
// (docs/vendor-differences.md). Every test here makes its calls while a stream
// is held, on a thread of its own: a call that waits for the held stream is
// named after the deadline, the gate is released so that the test ends, and
// the test fails.

//! 64 creations per kind, the count of the original report, and more than
//! twice the ~33 streams past which CUDA's creation waited.
constexpr int churn = 64;

TEST(Independence, IND_4__streams_are_created_and_destroyed_while_another_is_held) {
  const sluice::device dev{0};
  held_stream held{dev};
  // One flag per stream, written once the stream passed its wait. (Not a host
  // function: CUDA 13 blocks cudaLaunchHostFunc once about 56 host functions
  // wait behind held work on the device, docs/vendor-differences.md, a
  // different limit from the one this rule is about.)
  std::deque<sluice::flag> done(churn);
  std::deque<sluice::stream> kept;
  // 64 streams: 48 of normal priority and 8 each of high and low (on CUDA low
  // is normal), each waiting behind the hold; every other one destroyed at
  // once with its work pending (LIFE-1).
  const auto create = [&] {
    std::vector<sluice::stream_options> options(churn - 16);
    for (const auto p : {sluice::priority::high, sluice::priority::low})
      for (int i = 0; i < 8; ++i) options.push_back(sluice::stream_options{p, std::nullopt});
    for (std::size_t i = 0; i < options.size(); ++i) {
      sluice::stream s{dev, options[i]};
      s.wait(held.behind);
      s.write_value(done[i], 1);
      if (i % 2 == 0) kept.push_back(std::move(s));
    }
  };
  ASSERT_TRUE(returns_while_held(held.g, create));
  const auto written = [&] {
    return static_cast<int>(std::count_if(done.begin(), done.end(),
                                          [](const sluice::flag& f) { return f.load() == 1; }));
  };
  EXPECT_TRUE(stays_false([&] { return written() > 0; }))
      << "a stream created while another was held ran past its wait on the held stream";
  held.g.release();
  EXPECT_TRUE(eventually([&] { return written() == churn; }))
      << written() << " of " << churn << " streams finished after the release";
  for (auto& s : kept) s.synchronize();
  held.s.synchronize();
}

TEST(Independence, IND_4__streams_are_created_and_destroyed_again_and_again_while_held) {
  const sluice::device dev{0};
  held_stream held{dev};
  std::atomic<int> ran{0};
  // 4 x 64 streams that live one at a time: the same and new vendor streams.
  const auto churn_streams = [&] {
    for (int i = 0; i < 4 * churn; ++i) {
      sluice::stream s{dev};
      sluice::device_buffer<byte> b{s, 4 * kib};
      sluice::fill(s, b.data(), static_cast<byte>(i), b.size());
      s.host_func([&ran] { ran.fetch_add(1); });
      s.synchronize();  // an unheld stream completes while the other is held (IND-1)
    }
  };
  ASSERT_TRUE(returns_while_held(held.g, churn_streams));
  EXPECT_EQ(ran.load(), 4 * churn);
  EXPECT_FALSE(held.s.ready());
  held.g.release();
  held.s.synchronize();
}

TEST(Independence, IND_4__events_are_created_and_destroyed_while_a_stream_is_held) {
  const sluice::device dev{0};
  held_stream held{dev};
  sluice::stream other{dev};
  std::deque<sluice::event> behind_hold;
  const auto create = [&] {
    sluice::event_options timed;
    timed.timing = true;
    for (int i = 0; i < churn; ++i) {
      sluice::event plain{dev};
      sluice::event timing{dev, timed};
      plain.record(other);
      timing.record(other);
      sluice::event on_held{dev, i % 2 == 0 ? timed : sluice::event_options{}};
      on_held.record(held.s);  // destroyed below with its record pending, or kept
      if (i % 2 == 0) behind_hold.push_back(std::move(on_held));
    }
    other.synchronize();
  };
  ASSERT_TRUE(returns_while_held(held.g, create));
  for (const auto& e : behind_hold) EXPECT_FALSE(e.ready());
  held.g.release();
  held.s.synchronize();
  for (const auto& e : behind_hold) EXPECT_TRUE(e.ready());
}

TEST(Independence, IND_4__flags_are_created_and_destroyed_while_a_stream_is_held) {
  const sluice::device dev{0};
  held_stream held{dev};
  sluice::stream other{dev};
  // 600 flags: more than one block of host-mapped words (512), so new
  // host-mapped memory is allocated while the stream is held.
  std::deque<sluice::flag> flags;
  const auto create = [&] {
    for (int i = 0; i < 600; ++i) {
      flags.emplace_back(0);
      other.write_value(flags.back(), static_cast<std::uint32_t>(i + 1));
    }
    other.synchronize();
    for (int i = 0; i < 600; ++i)
      if (flags[static_cast<std::size_t>(i)].load() != static_cast<std::uint32_t>(i + 1))
        throw std::runtime_error("flag " + std::to_string(i) + " was not written");
    // A flag the held stream waits on, destroyed while it waits.
    for (int i = 0; i < churn; ++i) {
      sluice::flag f{0};
      held.s.write_value(f, 1);
    }
    flags.clear();
  };
  ASSERT_TRUE(returns_while_held(held.g, create));
  EXPECT_FALSE(held.s.ready());
  held.g.release();
  held.s.synchronize();
}

TEST(Independence, IND_4__buffers_are_allocated_and_freed_while_a_stream_is_held) {
  const sluice::device dev{0};
  held_stream held{dev};
  sluice::stream other{dev};
  const auto churn_buffers = [&] {
    for (int i = 0; i < churn; ++i) {
      const std::size_t n = (i % 8 + 1) * 64 * kib;
      sluice::device_buffer<byte> sync{dev, n};       // synchronous allocation
      sluice::device_buffer<byte> ordered{other, n};  // stream-ordered on an unheld stream
      sluice::pinned_buffer<byte> pinned{n + static_cast<std::size_t>(i) * 4 * kib};
      sluice::fill(other, sync.data(), static_cast<byte>(i), n);
      sluice::copy(other, ordered.data(), sync.data(), n);
      sluice::copy(other, pinned.data(), ordered.data(), n);
      other.synchronize();
      if (first_byte_not(pinned.data(), n, static_cast<byte>(i)) != n)
        throw std::runtime_error("buffer round " + std::to_string(i) + " copied wrong data");
      // A buffer the held stream will still use, freed while it is held.
      sluice::device_buffer<byte> used{dev, n};
      sluice::fill(held.s, used.data(), 1, n);
      used.record_stream(held.s);
    }
  };
  ASSERT_TRUE(returns_while_held(held.g, churn_buffers));
  EXPECT_FALSE(held.s.ready());
  held.g.release();
  held.s.synchronize();
}

TEST(IndependenceMultiDevice, IND_4__peer_calls_and_streams_of_another_device_while_held) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  held_stream held0{d0};
  held_stream held1{d1};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> a{d0, n}, b{d1, n};
  sluice::pinned_buffer<byte> out{n};
  const auto calls = [&] {
    (void)sluice::peer_access_enabled(d0, d1);
    try {
      sluice::enable_peer_access(d0, d1);
      sluice::enable_peer_access(d1, d0);
    } catch (const sluice::error& e) {
      if (e.code() != sluice::errc::peer_access_unavailable) throw;  // staged copies then
    }
    for (int i = 0; i < churn; ++i) {
      sluice::stream s0{d0}, s1{d1};
      sluice::fill(s0, a.data(), static_cast<byte>(i), n);
      (void)sluice::copy_peer(s0, b.data(), d1, a.data(), d0, n);  // push
      s0.synchronize();
      (void)sluice::copy_peer(s1, a.data(), d0, b.data(), d1, n);  // pull
      sluice::copy(s1, out.data(), b.data(), n);
      s1.synchronize();
      if (first_byte_not(out.data(), n, static_cast<byte>(i)) != n)
        throw std::runtime_error("peer round " + std::to_string(i) + " copied wrong data");
    }
  };
  ASSERT_TRUE(returns_before_unblocked(calls, [&] {
    held0.g.release();
    held1.g.release();
  }));
  EXPECT_FALSE(held0.s.ready());
  EXPECT_FALSE(held1.s.ready());
  held0.g.release();
  held1.g.release();
  held0.s.synchronize();
  held1.s.synchronize();
}

TEST(Independence, IND_4__reserve_streams_checks_its_count) {
  const sluice::device dev{0};
  EXPECT_NO_THROW(sluice::reserve_streams(dev, 0));
  EXPECT_NO_THROW(sluice::reserve_streams(dev, 8, {sluice::priority::high, std::nullopt}));
  for (const int bad : {-1, 4097}) {
    try {
      sluice::reserve_streams(dev, bad);
      ADD_FAILURE() << "reserve_streams accepted count " << bad;
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::invalid_argument) << e.what();
    }
  }
}

}  // namespace
}  // namespace sluice::conformance
