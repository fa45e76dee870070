// PRIO: stream priorities (docs/semantics.md, PRIO-1 .. PRIO-4).
#include "native_ops.hpp"
#include "support.hpp"

#include <atomic>
#include <climits>
#include <cstddef>
#include <vector>

namespace sluice::conformance {
namespace {

sluice::stream make_stream(sluice::device d, sluice::priority level) {
  sluice::stream_options o;
  o.priority = level;
  return sluice::stream{d, o};
}

sluice::stream make_native_stream(sluice::device d, int native, sluice::priority level) {
  sluice::stream_options o;
  o.priority = level;
  o.native_priority = native;
  return sluice::stream{d, o};
}

int clamp_to(sluice::priority_range r, int native) {
  if (native < r.greatest) return r.greatest;
  if (native > r.least) return r.least;
  return native;
}

TEST(Priorities, PRIO_1__the_range_is_the_vendor_range) {
  for (int id = 0; id < sluice::device_count(); ++id) {
    const sluice::device dev{id};
    const sluice::priority_range r = sluice::stream_priority_range(dev);
    EXPECT_LE(r.greatest, r.least) << "device " << id << ": greatest is numerically smallest";
    EXPECT_LE(r.greatest, 0) << "device " << id;
    EXPECT_GE(r.least, 0) << "device " << id << ": the vendor default 0 is in the range";
    // The vendor's own query on this machine, not literal values: HIP gives
    // 1 / -1 on AMD GPUs and CUDA's range on its NVIDIA platform; CUDA 0 / -5
    // on Hopper, other architectures differ.
    int least = 0, greatest = 0;
    native_priority_range(dev, &least, &greatest);
    EXPECT_EQ(r.least, least) << "device " << id << ": the vendor's query says " << least;
    EXPECT_EQ(r.greatest, greatest) << "device " << id << ": the vendor's query says " << greatest;
    EXPECT_LT(r.greatest, r.least) << "device " << id << ": more than one level";
  }
}

TEST(Priorities, PRIO_1__the_range_is_the_same_on_every_call) {
  const sluice::device dev{0};
  const sluice::priority_range first = sluice::stream_priority_range(dev);
  sluice::stream s = make_stream(dev, sluice::priority::high);
  const sluice::priority_range again = sluice::stream_priority_range(dev);
  EXPECT_EQ(first.least, again.least);
  EXPECT_EQ(first.greatest, again.greatest);
}

TEST(Priorities, PRIO_2__portable_levels_map_monotonically) {
  for (int id = 0; id < sluice::device_count(); ++id) {
    const sluice::device dev{id};
    const sluice::priority_range r = sluice::stream_priority_range(dev);
    sluice::stream low = make_stream(dev, sluice::priority::low);
    sluice::stream normal = make_stream(dev, sluice::priority::normal);
    sluice::stream high = make_stream(dev, sluice::priority::high);
    EXPECT_EQ(high.native_priority(), r.greatest);
    EXPECT_EQ(normal.native_priority(), 0) << "normal is the vendor default";
    EXPECT_EQ(low.native_priority(), r.least);
    EXPECT_LE(high.native_priority(), normal.native_priority());
    EXPECT_LE(normal.native_priority(), low.native_priority());

    EXPECT_EQ(high.priority(), sluice::priority::high);
    EXPECT_EQ(normal.priority(), sluice::priority::normal);
    // The effective level follows the effective value: where the vendor's least
    // priority is its default (CUDA), low and normal are the same stream priority.
    EXPECT_EQ(low.priority(), r.least == 0 ? sluice::priority::normal : sluice::priority::low);
  }
}

TEST(Priorities, PRIO_2__the_default_stream_priority_is_normal) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  EXPECT_EQ(s.priority(), sluice::priority::normal);
  EXPECT_EQ(s.native_priority(), 0);
  const sluice::stream_ref ref = s;
  EXPECT_EQ(ref.priority(), sluice::priority::normal);
}

TEST(Priorities, PRIO_3__native_priorities_are_clamped_to_the_range) {
  const sluice::device dev{0};
  const sluice::priority_range r = sluice::stream_priority_range(dev);
  const int values[] = {INT_MIN,     r.greatest - 1000, r.greatest - 1,
                        r.least + 1, r.least + 1000,    INT_MAX};
  for (const int native : values) {
    sluice::stream s = make_native_stream(dev, native, sluice::priority::normal);
    EXPECT_EQ(s.native_priority(), clamp_to(r, native)) << "asked for " << native;
    const sluice::stream_ref ref = s;
    EXPECT_EQ(ref.native_priority(), clamp_to(r, native));
    s.host_func([] {});  // a clamped stream is an ordinary, working stream
    s.synchronize();
  }
  EXPECT_EQ(make_native_stream(dev, INT_MIN, sluice::priority::low).priority(),
            sluice::priority::high);
}

// Values inside the range are kept as they are, and the raw value wins over
// the portable level.
TEST(Priorities, PRIO_3__native_priorities_inside_the_range_are_kept) {
  const sluice::device dev{0};
  const sluice::priority_range r = sluice::stream_priority_range(dev);
  for (int native = r.greatest; native <= r.least; ++native) {
    sluice::stream s = make_native_stream(dev, native, sluice::priority::low);
    EXPECT_EQ(s.native_priority(), native);
  }
  EXPECT_EQ(make_native_stream(dev, r.greatest, sluice::priority::low).priority(),
            sluice::priority::high);
  EXPECT_EQ(make_native_stream(dev, 0, sluice::priority::high).priority(),
            sluice::priority::normal);
}

// MAY: a backlog of low-priority fills runs on several streams; work enqueued
// later on a high-priority stream completes before the backlog has drained.
// The high stream's host function reads how many low streams had finished
// (recorded as the test's property low_streams_done_when_high_finished).
//
// The checks after the probe are the stream order that the overtaking must
// keep, asserted because a wrong backend can fail them: each low stream's host
// function ran once (the count is 4, not 3 or 5) and each buffer holds its
// stream's last fill. Once every stream was synchronized, ORD-3 and HOST-1
// guarantee the count, but the ORD and HOST tests run streams of one priority;
// this is the suite's only test that checks results while a higher priority
// takes the workers away from a backlog and gives them back, the path where a
// scheduler can lose, repeat or reorder a stream's operations. A failure there
// is a broken MUST, so it fails the test whether or not the overtaking was
// observed.
//
// What an observation shows: the high work is 2 operations against 48 on each
// low stream, so a backend that ignores priorities but shares its workers
// round robin finishes it first too. It shows that high-priority work does not
// queue behind a low-priority backlog; the host backend's strict priority order
// is checked by the unit test HostScheduling.HighPriorityOvertakesLowBacklogStrictly.
TEST(Priorities, PRIO_4__high_priority_work_overtakes_a_low_priority_backlog) {
  const sluice::device dev{0};
  const sluice::priority_range r = sluice::stream_priority_range(dev);
  if (r.greatest == r.least) SLUICE_NOT_OBSERVED("the device has a single priority level");
  constexpr int low_streams = 4;
  constexpr int fills_per_stream = 48;
  std::vector<sluice::stream> lows;
  std::vector<sluice::device_buffer<byte>> buffers;
  std::atomic<int> lows_done{0};
  for (int i = 0; i < low_streams; ++i) {
    lows.push_back(make_stream(dev, sluice::priority::low));
    buffers.emplace_back(dev, 1 * mib);
  }
  sluice::stream high = make_stream(dev, sluice::priority::high);
  sluice::device_buffer<byte> high_buffer{dev, 1 * mib};
  // warm-up
  sluice::fill(high, high_buffer.data(), 0, 1 * mib);
  high.synchronize();

  gate g;
  for (int i = 0; i < low_streams; ++i) {
    auto& s = lows[static_cast<std::size_t>(i)];
    g.hold(s);
    for (int k = 0; k < fills_per_stream; ++k)
      sluice::fill(s, buffers[static_cast<std::size_t>(i)].data(), static_cast<byte>(k), 1 * mib);
    s.host_func([&] { lows_done.fetch_add(1); });
  }
  g.release();
  int lows_done_when_high_finished = -1;
  sluice::fill(high, high_buffer.data(), 1, 1 * mib);
  high.host_func([&] { lows_done_when_high_finished = lows_done.load(); });
  high.synchronize();
  for (auto& s : lows) s.synchronize();
  RecordProperty("low_streams_done_when_high_finished", lows_done_when_high_finished);
  EXPECT_EQ(lows_done.load(), low_streams) << "low-priority host functions lost or repeated";
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::vector<byte> got = read_back(buffers[i]);
    EXPECT_EQ(first_byte_not(got.data(), got.size(), static_cast<byte>(fills_per_stream - 1)),
              got.size())
        << "low-priority stream " << i << ": its last fill is not what its buffer holds";
  }
  const std::vector<byte> high_got = read_back(high_buffer);
  EXPECT_EQ(first_byte_not(high_got.data(), high_got.size(), 1), high_got.size())
      << "the high-priority fill is not what its buffer holds";

  if (lows_done_when_high_finished < low_streams) return;  // observed
  SLUICE_NOT_OBSERVED("the high-priority work finished after all " << low_streams
                                                                   << " low-priority streams");
}

}  // namespace
}  // namespace sluice::conformance
