// XDEV: several devices (docs/semantics.md, XDEV-1 .. XDEV-3).
#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace sluice::conformance {
namespace {

TEST(XdevMultiDevice, XDEV_1__a_stream_waits_on_an_event_of_another_device) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device a{0}, b{1};
  sluice::stream producer{a}, consumer{b};
  constexpr std::size_t n = 128 * kib;
  sluice::device_buffer<byte> d{a, n};
  sluice::pinned_buffer<byte> middle = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  sluice::event e{a};

  gate g{producer};
  sluice::fill(producer, d.data(), 0x29, n);
  sluice::copy(producer, middle.data(), d.data(), n);
  e.record(producer);
  EXPECT_TRUE(returns_while_held(g, [&] { consumer.wait(e); }));
  sluice::copy(consumer, out.data(), middle.data(), n);  // pinned memory: visible to both devices

  EXPECT_TRUE(stays_false([&] { return consumer.ready() || out[0] != 0; }));
  g.release();
  consumer.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x29), n);
  producer.synchronize();
}

// Every ordered pair of devices at once: one held producer per pair, one
// consumer per pair on the other device; all stay pending until the release.
TEST(XdevMultiDevice, XDEV_1__every_pair_of_devices) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = std::min(sluice::device_count(), 4);
  constexpr std::size_t n = 16 * kib;
  gate g;
  std::vector<sluice::stream> producers, consumers;
  std::deque<sluice::event> events;
  std::vector<sluice::pinned_buffer<byte>> middles, outs;
  std::vector<unsigned> seeds;
  for (int from = 0; from < count; ++from)
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      const auto seed = static_cast<unsigned>(from * 16 + to);
      producers.emplace_back(sluice::device{from});
      consumers.emplace_back(sluice::device{to});
      events.emplace_back(sluice::device{from});
      middles.push_back(filled_pinned_bytes(n, 0));
      outs.push_back(filled_pinned_bytes(n, 0));
      seeds.push_back(seed);
    }
  // The pattern source is written once by the host; each producer copies it
  // into its middle buffer behind the gate.
  sluice::pinned_buffer<byte> sources{n * seeds.size()};
  for (std::size_t i = 0; i < seeds.size(); ++i) write_pattern(sources.data() + i * n, n, seeds[i]);

  for (std::size_t i = 0; i < seeds.size(); ++i) {
    g.hold(producers[i]);
    sluice::copy(producers[i], middles[i].data(), sources.data() + i * n, n);
    events[i].record(producers[i]);
    consumers[i].wait(events[i]);
    sluice::copy(consumers[i], outs[i].data(), middles[i].data(), n);
  }
  EXPECT_TRUE(stays_false([&] {
    return std::any_of(consumers.begin(), consumers.end(),
                       [](const sluice::stream& s) { return s.ready(); });
  }));
  g.release();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    consumers[i].synchronize();
    EXPECT_EQ(first_pattern_mismatch(outs[i].data(), n, seeds[i]), n)
        << "pair " << producers[i].device().id() << " -> " << consumers[i].device().id();
    producers[i].synchronize();
  }
}

// Every call, made for objects of device 0 while the calling thread's current
// device is 1, works and leaves the current device at 1.
TEST(XdevMultiDevice, XDEV_2__calls_work_and_keep_the_current_device) {
  SLUICE_REQUIRE_DEVICES(2);
  current_device_guard guard;
  const sluice::device d0{0}, d1{1};
  d1.make_current();
  ASSERT_EQ(sluice::device::current(), d1);
  const auto unchanged = [&](const char* call) {
    EXPECT_EQ(sluice::device::current(), d1) << call << " changed the current device";
  };

  constexpr std::size_t n = 64 * kib;
  sluice::stream s{d0};
  unchanged("stream(device)");
  EXPECT_EQ(s.device(), d0);
  sluice::stream t{d0, sluice::stream_options{sluice::priority::high, std::nullopt}};
  unchanged("stream(device, options)");
  (void)t.priority();
  (void)t.native_priority();
  unchanged("stream_ref::priority / native_priority");
  sluice::event e{d0, sluice::event_options{true, false}},
      e2{d0, sluice::event_options{true, false}};
  unchanged("event(device)");
  EXPECT_EQ(e.device(), d0);
  sluice::device_buffer<byte> dev_mem{d0, n};
  unchanged("device_buffer(device, n)");
  EXPECT_EQ(dev_mem.device(), d0);
  sluice::device_buffer<byte> ordered_mem{s, n};
  unchanged("device_buffer(stream, n)");
  EXPECT_EQ(ordered_mem.device(), d0);
  sluice::pinned_buffer<byte> host_mem{n};
  unchanged("pinned_buffer");
  sluice::flag f{0};
  unchanged("flag");

  e.record(s);
  unchanged("event::record");
  sluice::fill(s, dev_mem.data(), 0x12, n);
  unchanged("fill");
  sluice::copy(s, ordered_mem.data(), dev_mem.data(), n);
  sluice::copy(s, host_mem.data(), ordered_mem.data(), n);
  unchanged("copy");
  ordered_mem.record_stream(t);
  unchanged("device_buffer::record_stream");
  s.write_value(f, 1);
  unchanged("write_value");
  t.wait_value(f, 1);
  unchanged("wait_value");
  t.wait(s);
  unchanged("wait(stream)");
  t.wait(e);
  unchanged("wait(event)");
  int host_function_ran = 0;
  t.host_func([&] { host_function_ran = 1; });
  unchanged("host_func");
  e2.record(t);
  (void)s.ready();
  (void)e.ready();
  unchanged("ready");
  s.synchronize();
  t.synchronize();
  e2.synchronize();
  unchanged("synchronize");
  EXPECT_GE(sluice::elapsed(e, e2).count(), 0.0);
  unchanged("elapsed");
  d0.synchronize();
  unchanged("device::synchronize");
  (void)d0.name();
  unchanged("device::name");
  (void)sluice::stream_priority_range(d0);
  (void)sluice::independent_stream_limit(d0);
  unchanged("stream_priority_range / independent_stream_limit");
  EXPECT_EQ(host_function_ran, 1);
  EXPECT_EQ(first_byte_not(host_mem.data(), n, 0x12), n);

  (void)sluice::link(d0, d0);
  unchanged("link");
  (void)sluice::peer_access_enabled(d0, d0);
  unchanged("peer_access_enabled");
  sluice::device_buffer<byte> far{d1, n};
  const sluice::copy_path path = sluice::copy_peer(s, far.data(), d1, dev_mem.data(), d0, n);
  (void)path;
  unchanged("copy_peer");
  s.synchronize();

  // Failing calls leave the current device unchanged too.
  sluice::stream s1{d1};
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { e.record(s1); }));
  unchanged("event::record (rejected)");
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::fill(s, nullptr, 0, 8); }));
  unchanged("fill (rejected)");
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::enable_peer_access(d0, d0); }));
  unchanged("enable_peer_access (rejected)");
}

// Default arguments follow the current device, which is a per-thread setting.
TEST(XdevMultiDevice, XDEV_2__the_current_device_is_per_thread_and_the_default) {
  SLUICE_REQUIRE_DEVICES(2);
  current_device_guard guard;
  const sluice::device d1{1};
  d1.make_current();
  sluice::stream s;
  sluice::event e;
  EXPECT_EQ(s.device(), d1);
  EXPECT_EQ(e.device(), d1);

  int other_thread_current = -1;
  std::thread other([&] { other_thread_current = sluice::device::current().id(); });
  other.join();
  EXPECT_EQ(other_thread_current, 0) << "a new thread's current device is device 0";
  EXPECT_EQ(sluice::device::current(), d1) << "another thread changed this thread's device";
}

// device::synchronize() waits for every stream of the device, including host
// functions still running.
TEST(Xdev, XDEV_3__device_synchronize_waits_for_every_stream_of_the_device) {
  const sluice::device dev{0};
  sluice::stream a{dev}, b{dev}, c{dev};
  gate ga{a}, gb{b};
  a.host_func([] {});
  b.host_func([] {});
  host_latch latch;
  c.host_func(latch.waiter());
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));

  background_call call{[&] { dev.synchronize(); }};
  EXPECT_TRUE(stays_false([&] { return call.done(); })) << "returned with all three held";
  ga.release();
  EXPECT_TRUE(stays_false([&] { return call.done(); })) << "returned with b and c held";
  latch.open();
  EXPECT_TRUE(stays_false([&] { return call.done(); })) << "returned with b held";
  gb.release();
  EXPECT_TRUE(eventually([&] { return call.done(); }));
  call.finish();
  EXPECT_TRUE(a.ready() && b.ready() && c.ready());
}

TEST(XdevMultiDevice, XDEV_3__device_synchronize_ignores_other_devices) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  sluice::stream held{d1}, busy{d0};
  gate g{held};
  held.host_func([] {});
  sluice::device_buffer<byte> d{d0, 256 * kib};
  sluice::fill(busy, d.data(), 3, d.size());

  EXPECT_TRUE(returns_while_held(g, [&] { d0.synchronize(); }))
      << "device 0's synchronize() waited for device 1";
  EXPECT_TRUE(busy.ready()) << "device::synchronize() returned before device 0's work completed";
  EXPECT_FALSE(held.ready());
  EXPECT_TRUE(blocks_until_released(g, [&] { d1.synchronize(); }));
}

}  // namespace
}  // namespace sluice::conformance
