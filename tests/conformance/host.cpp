// HOST: host functions (docs/semantics.md, HOST-1 .. HOST-4).
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

//! Polls ready() until it is true; counts and keeps the errors it threw on the way.
struct ready_poll {
  int thrown = 0;
  std::optional<sluice::error> first_error;
  bool completed = false;
};
ready_poll poll_ready(sluice::stream_ref s) {
  ready_poll result;
  result.completed = eventually([&] {
    try {
      return s.ready();
    } catch (const sluice::error& e) {
      if (!result.first_error) result.first_error = e;
      ++result.thrown;
      return false;
    }
  });
  return result;
}

TEST(HostFunctions, HOST_1__runs_once_after_the_work_before_it) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  std::atomic<int> runs{0};
  std::size_t intact = 0;

  gate g{s};
  sluice::fill(s, d.data(), 0x66, n);
  sluice::copy(s, p.data(), d.data(), n);
  s.host_func([&] {
    runs.fetch_add(1);
    intact = first_byte_not(p.data(), n, 0x66);
  });
  EXPECT_TRUE(stays_false([&] { return runs.load() != 0; })) << "ran before the work before it";
  g.release();
  s.synchronize();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(intact, n) << "the host function did not see the copy before it";

  // More work and more synchronization never run it again.
  sluice::fill(s, d.data(), 0x67, n);
  s.host_func([] {});
  s.synchronize();
  s.synchronize();
  EXPECT_EQ(runs.load(), 1);
}

TEST(HostFunctions, HOST_1__later_work_waits_until_it_returns) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::flag f{0};
  sluice::event e{dev};
  host_latch latch;
  s.host_func(latch.waiter());
  s.write_value(f, 1);
  e.record(s);

  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));
  EXPECT_TRUE(stays_false([&] { return f.load() != 0 || e.ready() || s.ready(); }));
  latch.open();
  EXPECT_TRUE(eventually([&] { return f.load() == 1 && e.ready(); }));
  s.synchronize();
}

TEST(HostFunctions, HOST_1__many_functions_each_run_exactly_once) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t count = 1000;
  std::vector<std::atomic<int>> runs(count);
  for (auto& r : runs) r.store(0);
  for (std::size_t i = 0; i < count; ++i) s.host_func([&runs, i] { runs[i].fetch_add(1); });
  s.synchronize();
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << "function " << i;
}

// Move-only callables (a unique_ptr capture) and lvalue callables both work;
// the callable's state reaches the call.
TEST(HostFunctions, HOST_1__move_only_and_lvalue_callables) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> sum{0};
  auto owned = std::make_unique<int>(40);
  s.host_func([p = std::move(owned), &sum] { sum.fetch_add(*p); });
  struct adder {
    std::atomic<int>* target;
    int amount;
    void operator()() const { target->fetch_add(amount); }
  };
  const adder two{&sum, 2};
  s.host_func(two);
  s.synchronize();
  EXPECT_EQ(sum.load(), 42);
}

// A host function blocked on a latch holds only its own stream: host
// functions and device work of other streams still run.
TEST(HostFunctions, HOST_2__a_blocked_host_function_delays_only_its_stream) {
  const sluice::device dev{0};
  sluice::stream blocked{dev}, other{dev}, device_work{dev};
  host_latch latch;
  blocked.host_func(latch.waiter());
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));

  std::atomic<int> ran{0};
  other.host_func([&] { ran.fetch_add(1); });
  other.host_func([&] { ran.fetch_add(1); });
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  sluice::fill(device_work, d.data(), 0x14, n);
  sluice::copy(device_work, p.data(), d.data(), n);

  EXPECT_TRUE(eventually([&] { return ran.load() == 2 && other.ready(); }))
      << "host functions of another stream waited for the blocked one";
  EXPECT_TRUE(eventually([&] { return device_work.ready(); }));
  EXPECT_EQ(first_byte_not(p.data(), n, 0x14), n);
  EXPECT_FALSE(blocked.ready());
  latch.open();
  blocked.synchronize();
}

// Host functions of many streams blocked at the same time: all of them must
// have started, so they cannot share one thread (CUDA runs them on one).
// Back-to-back host functions followed by other work, then a host function
// that blocks: the work waits for the functions before it (HOST-1) and for
// none after it. (GPU backends run back-to-back host functions as one batch
// behind one vendor callback; any other operation must end the batch.)
TEST(HostFunctions, HOST_1__work_after_back_to_back_host_functions_waits_for_no_later_one) {
  const sluice::device dev{0};
  const char* const kinds[] = {"event::record", "write_value", "wait(stream) by another stream",
                               "copy, then event::record"};
  for (const char* kind : kinds) {
    SCOPED_TRACE(kind);
    sluice::stream s{dev}, other{dev};
    sluice::event e{dev};
    sluice::flag f{0};
    sluice::device_buffer<byte> d{dev, 64};
    sluice::pinned_buffer<byte> p{64};
    order_log log;
    host_latch latch;
    gate g{s};
    s.host_func([&] { log.add(1); });
    s.host_func([&] { log.add(2); });
    // The operation, and how to see that it completed.
    std::function<bool()> done;
    const std::string k = kind;
    if (k == "event::record") {
      e.record(s);
      done = [&] { return e.ready(); };
    } else if (k == "write_value") {
      s.write_value(f, 1);
      done = [&] { return f.load() == 1; };
    } else if (k == "wait(stream) by another stream") {
      other.wait(s);
      done = [&] { return other.ready(); };
    } else {
      sluice::copy(s, p.data(), d.data(), 64);
      e.record(s);
      done = [&] { return e.ready(); };
    }
    s.host_func(latch.waiter());
    s.host_func([&] { log.add(4); });
    EXPECT_TRUE(stays_false(done)) << "completed while the stream was held";
    g.release();
    EXPECT_TRUE(eventually(done)) << "waited for a host function enqueued after it";
    EXPECT_EQ(log.values(), (std::vector<int>{1, 2}));
    latch.open();
    s.synchronize();
    EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 4}));
  }
}

TEST(HostFunctions, HOST_2__host_functions_of_many_streams_block_at_the_same_time) {
  const sluice::device dev{0};
  // Streams beyond the independence bound may share a hardware queue (IND-1):
  // one blocked host function may then hold another stream's.
  const int count = std::min(12, sluice::independent_stream_limit(dev));
  ASSERT_GE(count, 2) << "a device whose streams all serialize cannot show HOST-2";
  host_latch latch;
  std::vector<sluice::stream> streams;
  for (int i = 0; i < count; ++i) {
    streams.emplace_back(dev);
    streams.back().host_func(latch.waiter());
  }
  EXPECT_TRUE(eventually([&] { return latch.entered() == count; }))
      << latch.entered() << " of " << count << " blocked host functions started";
  latch.open();
  for (auto& s : streams) s.synchronize();
}

// HOST-2 again with more live streams than the device has independent
// queues, as the tests before it in a whole-suite run may leave: the blocked
// streams then share hardware queues with the others (GPU backends: the
// stream pool puts the later ones on queues that already have a live stream).
// On 2x H100 the whole suite once failed HOST-2 this way (11 of 12 started)
// where HOST-2 alone passed; GPU backends now give a stream that shares a
// queue the vendor's callback (docs/design.md, "Which host functions use the
// word watcher"). The other streams have run work and stay alive, idle.
TEST(HostFunctions, HOST_2__host_functions_block_at_the_same_time_beside_more_streams_than_queues) {
  const sluice::device dev{0};
  const int limit = sluice::independent_stream_limit(dev);
  const int count = std::min(12, limit);
  ASSERT_GE(count, 2) << "a device whose streams all serialize cannot show HOST-2";
  // One more than the limit (at most 64: the host backend has no limit).
  const int others_count = std::min(limit, 63) + 1;
  std::vector<sluice::stream> others;
  std::atomic<int> others_ran{0};
  for (int i = 0; i < others_count; ++i) {
    others.emplace_back(dev);
    others.back().host_func([&others_ran] { others_ran.fetch_add(1); });
  }
  for (auto& s : others) s.synchronize();
  ASSERT_EQ(others_ran.load(), others_count);
  host_latch latch;
  std::vector<sluice::stream> streams;
  for (int i = 0; i < count; ++i) {
    streams.emplace_back(dev);
    streams.back().host_func(latch.waiter());
  }
  EXPECT_TRUE(eventually([&] { return latch.entered() == count; }))
      << latch.entered() << " of " << count << " blocked host functions started beside "
      << others_count << " other live streams";
  latch.open();
  for (auto& s : streams) s.synchronize();
}

TEST(HostFunctionsMultiDevice, HOST_2__a_blocked_host_function_delays_no_other_device) {
  SLUICE_REQUIRE_DEVICES(2);
  sluice::stream blocked{sluice::device{0}}, other{sluice::device{1}};
  host_latch latch;
  blocked.host_func(latch.waiter());
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));
  std::atomic<bool> ran{false};
  other.host_func([&] { ran.store(true); });
  EXPECT_TRUE(eventually([&] { return ran.load() && other.ready(); }));
  latch.open();
  blocked.synchronize();
}

// Inside f: enqueue work and record an event on another stream, and
// synchronize that stream; the results are there when f returns.
TEST(HostFunctions, HOST_3__a_host_function_may_enqueue_record_and_synchronize_others) {
  const sluice::device dev{0};
  sluice::stream s{dev}, other{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  sluice::event e{dev};
  std::size_t seen_inside = 0;
  bool event_ready_inside = false;
  std::optional<sluice::error> failure;

  s.host_func([&] {
    failure = error_of([&] {
      sluice::fill(other, d.data(), 0x58, n);
      sluice::copy(other, p.data(), d.data(), n);
      e.record(other);
      other.synchronize();
      seen_inside = first_byte_not(p.data(), n, 0x58);
      e.synchronize();
      event_ready_inside = e.ready();
    });
  });
  s.synchronize();
  ASSERT_FALSE(failure.has_value()) << failure->what();
  EXPECT_EQ(seen_inside, n);
  EXPECT_TRUE(event_ready_inside);
}

// Work a host function enqueues onto its own stream goes to the end of that
// stream: after what was already enqueued behind f.
TEST(HostFunctions, HOST_3__a_host_function_may_enqueue_onto_its_own_stream) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  order_log log;
  std::optional<sluice::error> failure;
  gate g{s};
  s.host_func([&] {
    log.add(1);
    failure = error_of([&] { s.host_func([&] { log.add(3); }); });
  });
  s.host_func([&] { log.add(2); });
  g.release();
  // The nested function is enqueued while f runs, before the second function
  // completes, so the second synchronize() covers it.
  s.synchronize();
  s.synchronize();
  ASSERT_FALSE(failure.has_value()) << failure->what();
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 3}));
}

TEST(HostFunctions, HOST_3__synchronizing_its_own_stream_throws_invalid_argument) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::stream_ref same = s;  // a copy of the reference is the same stream
  std::optional<sluice::error> from_stream, from_ref;
  std::atomic<int> later{0};
  s.host_func([&] { from_stream = error_of([&] { s.synchronize(); }); });
  s.host_func([&] { from_ref = error_of([&] { same.synchronize(); }); });
  s.host_func([&] { later.fetch_add(1); });

  // A deadlock here (the function waiting for itself) fails by the deadline.
  ASSERT_TRUE(eventually([&] { return later.load() == 1; }))
      << "synchronizing its own stream inside a host function deadlocked";
  s.synchronize();
  ASSERT_TRUE(from_stream.has_value()) << "synchronize() of its own stream did not throw";
  EXPECT_EQ(from_stream->code(), errc::invalid_argument) << from_stream->what();
  EXPECT_FALSE(std::string(from_stream->what()).empty());
  ASSERT_TRUE(from_ref.has_value());
  EXPECT_EQ(from_ref->code(), errc::invalid_argument) << from_ref->what();
}

// The same self-wait through an event recorded behind f, and through the
// device's synchronize(): both would wait for f itself (event.hpp, device.hpp).
TEST(HostFunctions, HOST_3__waiting_for_itself_through_an_event_or_the_device_throws) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event after{dev};
  std::optional<sluice::error> from_event, from_device;
  gate g{s};  // f runs only after the record below has been made
  s.host_func([&] {
    from_event = error_of([&] { after.synchronize(); });
    from_device = error_of([&] { dev.synchronize(); });
  });
  after.record(s);
  g.release();
  ASSERT_TRUE(eventually([&] { return after.ready(); })) << "a host function waited for itself";
  s.synchronize();
  ASSERT_TRUE(from_event.has_value()) << "event::synchronize() of a later record did not throw";
  EXPECT_EQ(from_event->code(), errc::invalid_argument) << from_event->what();
  ASSERT_TRUE(from_device.has_value()) << "device::synchronize() of its own device did not throw";
  EXPECT_EQ(from_device->code(), errc::invalid_argument) << from_device->what();
}

TEST(HostFunctions, HOST_4__an_exception_is_reported_once_by_synchronize) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> later{0};
  s.host_func([] { throw std::runtime_error("host function failed: code 4711"); });
  s.host_func([&] { later.fetch_add(1); });

  const auto reported = error_of([&] { s.synchronize(); });
  ASSERT_TRUE(reported.has_value()) << "the exception was lost";
  EXPECT_EQ(reported->code(), errc::host_function_failed);
  EXPECT_TRUE(contains(reported->what(), "code 4711")) << reported->what();
  EXPECT_FALSE(reported->sticky());
  EXPECT_EQ(later.load(), 1) << "work after the failed host function did not run";

  EXPECT_TRUE(s.ready()) << "reported a second time (by ready())";
  s.synchronize();  // and not a third time
  s.host_func([&] { later.fetch_add(1); });
  s.synchronize();
  EXPECT_EQ(later.load(), 2);
}

TEST(HostFunctions, HOST_4__an_exception_is_reported_once_by_ready) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  s.host_func([] { throw std::runtime_error("reported by ready"); });
  const ready_poll poll = poll_ready(s);
  ASSERT_TRUE(poll.completed);
  ASSERT_EQ(poll.thrown, 1);
  EXPECT_EQ(poll.first_error->code(), errc::host_function_failed);
  EXPECT_TRUE(contains(poll.first_error->what(), "reported by ready")) << poll.first_error->what();
  s.synchronize();  // already reported
  EXPECT_TRUE(s.ready());
}

TEST(HostFunctions, HOST_4__later_device_work_and_events_still_run) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  sluice::event e{dev};
  s.host_func([] { throw std::logic_error("bad"); });
  sluice::fill(s, d.data(), 0x0F, n);
  sluice::copy(s, p.data(), d.data(), n);
  e.record(s);
  e.synchronize();  // the event is not where the failure is reported
  EXPECT_TRUE(throws_code(errc::host_function_failed, [&] { s.synchronize(); }));
  EXPECT_EQ(first_byte_not(p.data(), n, 0x0F), n);
}

// A non-standard exception is not lost either; a second failure after the
// first was reported is reported again; other streams never see either.
TEST(HostFunctions, HOST_4__every_failure_reaches_only_its_own_stream) {
  const sluice::device dev{0};
  sluice::stream s{dev}, other{dev};
  s.host_func([] { throw 42; });
  other.host_func([] {});
  EXPECT_TRUE(throws_code(errc::host_function_failed, [&] { s.synchronize(); }));
  other.synchronize();
  EXPECT_TRUE(other.ready());

  s.host_func([] { throw std::runtime_error("second failure"); });
  const auto second = error_of([&] { s.synchronize(); });
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->code(), errc::host_function_failed);
  EXPECT_TRUE(contains(second->what(), "second failure")) << second->what();
  s.synchronize();
}

}  // namespace
}  // namespace sluice::conformance
