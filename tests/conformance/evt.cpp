// EVT: events (docs/semantics.md, EVT-1 .. EVT-10).
#include "support.hpp"

#include <time.h>  // clock_gettime(CLOCK_THREAD_CPUTIME_ID): the CPU time of one thread (EVT-10)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sluice::conformance {
namespace {

const sluice::event_options timing{true, false};

TEST(Events, EVT_1__wait_returns_at_once_and_later_work_waits) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  constexpr std::size_t n = 128 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  sluice::event e{dev};

  gate g{producer};
  sluice::fill(producer, d.data(), 0x31, n);
  e.record(producer);
  EXPECT_TRUE(returns_while_held(g, [&] { consumer.wait(e); }));
  sluice::copy(consumer, out.data(), d.data(), n);

  EXPECT_TRUE(stays_false([&] { return consumer.ready() || out[0] != 0; }));
  g.release();
  consumer.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x31), n);
  producer.synchronize();
}

// The wait holds only what is enqueued after it, not what came before.
TEST(Events, EVT_1__work_before_the_wait_is_not_held) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  sluice::event e{dev};
  order_log log;
  gate g{producer};
  e.record(producer);
  consumer.host_func([&] { log.add(1); });
  consumer.wait(e);
  consumer.host_func([&] { log.add(2); });

  EXPECT_TRUE(eventually([&] { return log.size() == 1; }));
  EXPECT_TRUE(stays_false([&] { return log.size() != 1; }));
  g.release();
  consumer.synchronize();
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2}));
}

TEST(Events, EVT_1__wait_on_a_completed_event_does_not_hold) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  sluice::event e{dev};
  e.record(producer);
  e.synchronize();
  EXPECT_TRUE(e.ready());
  consumer.wait(e);
  consumer.host_func([] {});
  EXPECT_TRUE(eventually([&] { return consumer.ready(); }));
}

// Re-recording e onto an idle stream after the wait must not release the wait,
// which still refers to the held capture.
TEST(Events, EVT_2__rerecord_after_a_wait_does_not_release_it) {
  const sluice::device dev{0};
  sluice::stream held{dev}, idle{dev}, consumer{dev};
  sluice::event e{dev};
  gate g{held};
  e.record(held);
  consumer.wait(e);
  consumer.host_func([] {});
  e.record(idle);
  EXPECT_TRUE(eventually([&] { return e.ready(); })) << "EVT-4: e now refers to the idle stream";

  EXPECT_TRUE(stays_false([&] { return consumer.ready(); }))
      << "re-recording changed a wait that was already issued";
  g.release();
  consumer.synchronize();
  held.synchronize();
}

// The opposite: a wait issued on a completed capture does not start waiting
// for a later record onto a held stream.
TEST(Events, EVT_2__rerecord_after_a_wait_does_not_extend_it) {
  const sluice::device dev{0};
  sluice::stream idle{dev}, held{dev}, consumer{dev};
  sluice::event e{dev};
  e.record(idle);
  e.synchronize();
  consumer.wait(e);
  gate g{held};
  e.record(held);
  consumer.host_func([] {});

  EXPECT_TRUE(eventually([&] { return consumer.ready(); }))
      << "a wait issued before the record waited for the record";
  EXPECT_FALSE(e.ready());
  g.release();
  held.synchronize();
}

// Two waits on one event with different captures: each follows its own.
TEST(Events, EVT_2__each_wait_keeps_its_own_capture) {
  const sluice::device dev{0};
  sluice::stream first_held{dev}, second_held{dev}, first_consumer{dev}, second_consumer{dev};
  sluice::event e{dev};
  gate g1{first_held}, g2{second_held};
  e.record(first_held);
  first_consumer.wait(e);
  first_consumer.host_func([] {});
  e.record(second_held);
  second_consumer.wait(e);
  second_consumer.host_func([] {});

  EXPECT_TRUE(stays_false([&] { return first_consumer.ready() || second_consumer.ready(); }));
  g2.release();
  EXPECT_TRUE(eventually([&] { return second_consumer.ready(); }));
  EXPECT_TRUE(eventually([&] { return e.ready(); }));
  EXPECT_TRUE(stays_false([&] { return first_consumer.ready(); }))
      << "the first wait followed the second record";
  g1.release();
  first_consumer.synchronize();
  first_held.synchronize();
  second_held.synchronize();
}

TEST(Events, EVT_3__a_never_recorded_event_is_ready_and_waiting_on_it_is_a_no_op) {
  const sluice::device dev{0};
  sluice::event plain{dev}, timed{dev, timing};
  EXPECT_TRUE(plain.ready());
  EXPECT_TRUE(timed.ready());

  sluice::stream s{dev};
  gate unrelated;  // nothing waits on it: synchronize() must not need anything
  EXPECT_TRUE(returns_while_held(unrelated, [&] {
    plain.synchronize();
    timed.synchronize();
  }));

  s.wait(plain);
  s.wait(timed);
  s.host_func([] {});
  EXPECT_TRUE(eventually([&] { return s.ready(); }));
}

// A never-recorded event does not pick up work from anywhere: work on other
// streams (held ones too) does not make it pending.
TEST(Events, EVT_3__a_never_recorded_event_stays_ready_while_streams_are_held) {
  const sluice::device dev{0};
  sluice::stream held{dev}, consumer{dev};
  gate g{held};
  held.host_func([] {});
  sluice::event e{dev};
  EXPECT_TRUE(e.ready());
  consumer.wait(e);
  consumer.host_func([] {});
  EXPECT_TRUE(eventually([&] { return consumer.ready(); }));
  g.release();
  held.synchronize();
}

TEST(Events, EVT_4__rerecord_onto_idle_work_replaces_a_pending_capture) {
  const sluice::device dev{0};
  sluice::stream held{dev}, idle{dev};
  sluice::event e{dev};
  gate g{held};
  e.record(held);
  EXPECT_TRUE(stays_false([&] { return e.ready(); }));
  e.record(idle);
  EXPECT_TRUE(eventually([&] { return e.ready(); }));
  EXPECT_TRUE(returns_while_held(g, [&] { e.synchronize(); }))
      << "synchronize() waited for the replaced capture";
  g.release();
  held.synchronize();
}

TEST(Events, EVT_4__rerecord_onto_pending_work_replaces_a_completed_capture) {
  const sluice::device dev{0};
  sluice::stream idle{dev}, held{dev};
  sluice::event e{dev};
  e.record(idle);
  e.synchronize();
  ASSERT_TRUE(e.ready());
  gate g{held};
  e.record(held);
  EXPECT_TRUE(stays_false([&] { return e.ready(); }));
  EXPECT_TRUE(blocks_until_released(g, [&] { e.synchronize(); }));
  EXPECT_TRUE(e.ready());
}

// Recording the same event again and again on one stream: it always refers to
// the newest record, one step behind the gate of that step.
TEST(Events, EVT_4__repeated_records_on_one_stream_follow_the_latest) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event e{dev};
  sluice::flag f{0};
  for (std::uint32_t step = 1; step <= 5; ++step) {
    s.wait_value(f, step);
    e.record(s);
    EXPECT_FALSE(e.ready()) << "step " << step;
    f.store(step);
    EXPECT_TRUE(eventually([&] { return e.ready(); })) << "step " << step;
  }
  s.synchronize();
}

TEST(EventsMultiDevice, EVT_5__record_on_a_stream_of_another_device_is_rejected) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  sluice::stream s0{d0}, s1{d1};
  sluice::event e{d0};

  const auto rejected = error_of([&] { e.record(s1); });
  ASSERT_TRUE(rejected.has_value()) << "record of a device-0 event on a device-1 stream";
  EXPECT_EQ(rejected->code(), errc::invalid_argument);
  const std::string message = rejected->what();
  EXPECT_TRUE(contains(message, "record") || contains(rejected->api(), "record")) << message;
  EXPECT_TRUE(contains(message, "0") && contains(message, "1"))
      << "the message should name both devices: " << message;
  EXPECT_TRUE(e.ready()) << "the rejected record changed the never-recorded event";
  EXPECT_TRUE(s1.ready()) << "the rejected record left work on the stream";

  // With a pending capture: the rejected record must not replace it.
  gate g{s0};
  e.record(s0);
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { e.record(s1); }));
  EXPECT_TRUE(stays_false([&] { return e.ready(); }))
      << "the rejected record replaced the pending capture";
  g.release();
  EXPECT_TRUE(eventually([&] { return e.ready(); }));
  s0.synchronize();
}

// ready()/synchronize() of events and streams of one device, called while the
// calling thread's current device is another one (both ways round).
TEST(EventsMultiDevice, EVT_6__ready_and_synchronize_work_whatever_the_current_device) {
  SLUICE_REQUIRE_DEVICES(2);
  current_device_guard guard;
  const int pairs[2][2] = {{0, 1}, {1, 0}};  // {device of the event, current device}
  for (const auto& pair : pairs) {
    const sluice::device owner{pair[0]}, current{pair[1]};
    current.make_current();
    sluice::stream s{owner};
    sluice::event e{owner};
    gate g{s};
    e.record(s);
    EXPECT_FALSE(e.ready());
    EXPECT_FALSE(s.ready());
    EXPECT_EQ(sluice::device::current(), current);

    int current_after = -1;
    EXPECT_TRUE(blocks_until_released(g, [&] {
      current.make_current();  // the helper thread starts with its own current device
      e.synchronize();
      s.synchronize();
      current_after = sluice::device::current().id();
    }));
    EXPECT_EQ(current_after, current.id()) << "synchronize() changed the current device";
    EXPECT_TRUE(e.ready());
    EXPECT_TRUE(s.ready());
    e.synchronize();
    EXPECT_EQ(sluice::device::current(), current);
  }
}

TEST(Events, EVT_7__destroying_an_event_with_a_pending_record_returns_at_once) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);

  gate g{producer};
  sluice::fill(producer, d.data(), 0x4D, n);
  auto e = std::make_unique<sluice::event>(dev);
  e->record(producer);
  consumer.wait(*e);
  sluice::copy(consumer, out.data(), d.data(), n);

  EXPECT_TRUE(returns_while_held(g, [&] { e.reset(); }));
  EXPECT_TRUE(stays_false([&] { return consumer.ready() || out[0] != 0; }))
      << "destroying the event released a wait on it";
  g.release();
  consumer.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x4D), n);
  producer.synchronize();
}

// Replacing a pending event by move assignment destroys the old one: also at once.
TEST(Events, EVT_7__move_assigning_over_a_pending_event_returns_at_once) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, consumer{dev};
  sluice::event e{dev};
  gate g{producer};
  e.record(producer);
  consumer.wait(e);
  consumer.host_func([] {});
  EXPECT_TRUE(returns_while_held(g, [&] { e = sluice::event{dev}; }));
  EXPECT_TRUE(e.ready()) << "the new event was never recorded";
  EXPECT_TRUE(stays_false([&] { return consumer.ready(); }));
  g.release();
  consumer.synchronize();
  producer.synchronize();
}

TEST(Events, EVT_8__elapsed_needs_timing_events) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event plain{dev}, timed{dev, timing};
  plain.record(s);
  timed.record(s);
  s.synchronize();
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(plain, timed); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(timed, plain); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(plain, plain); }));
}

TEST(Events, EVT_8__elapsed_needs_recorded_events) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event never_a{dev, timing}, never_b{dev, timing}, recorded{dev, timing};
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(never_a, never_b); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(never_a, never_a); }));
  recorded.record(s);
  s.synchronize();
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(recorded, never_a); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(never_a, recorded); }));
}

TEST(Events, EVT_8__elapsed_of_an_incomplete_record_is_not_ready) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event start{dev, timing}, stop{dev, timing};
  start.record(s);
  gate g{s};
  stop.record(s);
  EXPECT_TRUE(throws_code(errc::not_ready, [&] { (void)sluice::elapsed(start, stop); }));
  EXPECT_TRUE(throws_code(errc::not_ready, [&] { (void)sluice::elapsed(stop, start); }));
  g.release();
  stop.synchronize();
  EXPECT_GE(sluice::elapsed(start, stop).count(), 0.0) << "not_ready must not be sticky (ERR-3)";
}

TEST(Events, EVT_8__elapsed_of_an_event_with_itself_is_zero_and_never_negative) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event a{dev, timing}, b{dev, timing};
  a.record(s);
  b.record(s);
  s.synchronize();
  EXPECT_EQ(sluice::elapsed(a, a).count(), 0.0);
  EXPECT_EQ(sluice::elapsed(b, b).count(), 0.0);
  // Recorded back to back (b possibly at the same timestamp as a), and the
  // wrong way round: never negative.
  for (int i = 0; i < 50; ++i) {
    a.record(s);
    b.record(s);
    s.synchronize();
    ASSERT_GE(sluice::elapsed(a, b).count(), 0.0) << "iteration " << i;
    ASSERT_GE(sluice::elapsed(b, a).count(), 0.0) << "iteration " << i;
  }
}

TEST(EventsMultiDevice, EVT_8__elapsed_of_events_of_two_devices_is_rejected) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  sluice::stream s0{d0}, s1{d1};
  sluice::event a{d0, timing}, b{d1, timing};
  a.record(s0);
  b.record(s1);
  s0.synchronize();
  s1.synchronize();
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(a, b); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { (void)sluice::elapsed(b, a); }));
}

// The gate is held for T host-measured milliseconds, counted from the moment
// the start event was seen complete (so the start timestamp is before it).
TEST(Events, EVT_9__elapsed_across_a_held_gate_is_at_least_the_hold_time) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event start{dev, timing}, stop{dev, timing};
  start.record(s);  // warm-up
  stop.record(s);
  s.synchronize();
  (void)sluice::elapsed(start, stop);

  for (const auto hold : {5ms, 25ms}) {
    gate g;
    start.record(s);
    g.hold(s);
    stop.record(s);
    ASSERT_TRUE(eventually([&] { return start.ready(); }));
    const auto held_since = clock::now();
    busy_for(hold);
    const std::chrono::duration<double, std::milli> host_ms = clock::now() - held_since;
    g.release();
    stop.synchronize();
    const double device_ms = sluice::elapsed(start, stop).count();
    EXPECT_GE(device_ms, host_ms.count() - 1.0)
        << "gate held " << host_ms.count() << " ms, elapsed() says " << device_ms << " ms";
  }
}

// The same with a host function that blocks the stream for T ms between the
// two records.
TEST(Events, EVT_9__elapsed_across_a_blocked_host_function_is_at_least_the_block_time) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event start{dev, timing}, stop{dev, timing};
  start.record(s);  // warm-up
  stop.record(s);
  s.synchronize();

  constexpr auto hold = 15ms;
  host_latch latch;
  start.record(s);
  s.host_func(latch.waiter());
  stop.record(s);
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1 && start.ready(); }));
  const auto held_since = clock::now();
  busy_for(hold);
  const std::chrono::duration<double, std::milli> host_ms = clock::now() - held_since;
  latch.open();
  stop.synchronize();
  const double device_ms = sluice::elapsed(start, stop).count();
  EXPECT_GE(device_ms, host_ms.count() - 1.0) << "host function blocked " << host_ms.count()
                                              << " ms, elapsed() says " << device_ms << " ms";
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// MAY: a thread blocked in synchronize() of a blocking_sync event uses (much)
// less CPU time than the wall time it waits.
TEST(Events, EVT_10__blocking_sync_yields_the_cpu) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event e{dev, sluice::event_options{false, true}};
  constexpr auto hold = 200ms;
  gate g{s};
  e.record(s);

  std::atomic<bool> done{false};
  double cpu_ms = 0;
  std::thread waiter([&] {
    const double before = thread_cpu_ms();
    e.synchronize();
    cpu_ms = thread_cpu_ms() - before;
    done.store(true);
  });
  const bool blocked = stays_false([&] { return done.load(); }, hold);
  g.release();
  waiter.join();
  EXPECT_TRUE(blocked) << "synchronize() returned before the record completed";

  const double wall_ms = std::chrono::duration<double, std::milli>(hold).count();
  if (cpu_ms < 0.5 * wall_ms) return;  // observed
  SLUICE_NOT_OBSERVED("synchronize() used " << cpu_ms << " ms of CPU time while waiting " << wall_ms
                                            << " ms");
}

}  // namespace
}  // namespace sluice::conformance
