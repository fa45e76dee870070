// GRAPH: what a launch runs, in which order (GRAPH-1..3, 6..10, 15, 16).
#include "graph_test.hpp"

#include <sluice/trace.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sluice::conformance {
namespace {

TEST(Graph, GRAPH_1__a_64_operation_chain_runs_once_per_launch_100_times) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t pairs = 32;  // a fill and the host function that reads it: 64 operations
  sluice::pinned_buffer<byte> p{pairs};
  std::memset(p.data(), 0, pairs);
  std::atomic<int> runs{0};
  std::atomic<int> wrong{0};
  sluice::capture cap{s};
  for (std::size_t i = 0; i < pairs; ++i) {
    sluice::fill(s, p.data() + i, static_cast<byte>(i + 1), 1);
    s.host_func([&, i] {
      runs.fetch_add(1);
      // The fill before it ran, the next one did not yet.
      if (p[i] != i + 1 || (i + 1 < pairs && p[i + 1] != 0)) wrong.fetch_add(1);
    });
  }
  const sluice::graph g = cap.end();
  ASSERT_EQ(g.size(), 2 * pairs);
  EXPECT_EQ(runs.load(), 0) << "a recorded host function ran at capture";
  EXPECT_EQ(count_not(p.data(), pairs, 0), 0U) << "a recorded fill ran at capture";
  const sluice::graph_exec exec = g.instantiate();
  for (int launch = 1; launch <= 100; ++launch) {
    std::memset(p.data(), 0, pairs);
    exec.launch(s);
    s.synchronize();
    ASSERT_EQ(runs.load(), launch * static_cast<int>(pairs)) << "launch " << launch;
    for (std::size_t i = 0; i < pairs; ++i) ASSERT_EQ(p[i], i + 1) << "launch " << launch;
    ASSERT_EQ(wrong.load(), 0) << "launch " << launch << " ran its chain out of order";
  }
}

// Copies and fills through device memory only (no host function): on CUDA a
// vendor graph (graph_exec::how() "native"), launched again and again.
TEST(Graph, GRAPH_1__copies_and_fills_through_device_memory_run_at_every_launch) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 4096;
  sluice::device_buffer<byte> x{dev, n}, y{dev, n};
  sluice::pinned_buffer<byte> out{n};
  sluice::capture cap{s};
  sluice::fill(s, x.data(), 7, n);
  sluice::copy(s, y.data(), x.data(), n / 2);
  sluice::fill(s, x.data(), 9, n);
  sluice::copy(s, y.data() + n / 2, x.data(), n / 2);
  sluice::copy(s, out.data(), y.data(), n);
  const sluice::graph g = cap.end();
  const sluice::graph_exec exec = g.instantiate();
  const std::string how = exec.how();
  for (int launch = 1; launch <= 20; ++launch) {
    std::memset(out.data(), 0, n);
    sluice::fill(s, y.data(), 0, n);
    exec.launch(s);
    s.synchronize();
    ASSERT_EQ(count_not(out.data(), n / 2, 7), 0U) << "launch " << launch << " (" << how << ")";
    ASSERT_EQ(count_not(out.data() + n / 2, n / 2, 9), 0U)
        << "launch " << launch << " (" << how << ")";
  }
}

TEST(Graph, GRAPH_2__a_launch_follows_earlier_work_and_later_work_waits_for_every_branch) {
  const sluice::device dev{0};
  sluice::stream s{dev}, s2{dev}, launcher{dev};
  sluice::pinned_buffer<byte> p{64};
  std::memset(p.data(), 0, 64);
  sluice::event fork{dev}, join{dev};
  host_latch latch;
  sluice::capture cap{s};
  sluice::fill(s, p.data(), 1, 32);
  fork.record(s);
  s2.wait(fork);
  s2.host_func(latch.waiter());
  sluice::fill(s2, p.data() + 32, 2, 32);
  join.record(s2);
  s.wait(join);
  const sluice::graph g = cap.end();
  const sluice::graph_exec exec = g.instantiate();
  sluice::flag after{0};
  gate before{launcher};
  exec.launch(launcher);
  launcher.write_value(after, 1);
  EXPECT_TRUE(stays_false([&] { return p[0] != 0 || latch.entered() != 0; }))
      << "the launch ran before the work enqueued before it";
  before.release();
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));
  EXPECT_TRUE(stays_false([&] { return after.load() != 0; }))
      << "work after the launch ran while a branch was held";
  latch.open();
  ASSERT_TRUE(eventually([&] { return after.load() == 1; }));
  EXPECT_EQ(count_not(p.data(), 32, 1), 0U);
  EXPECT_EQ(count_not(p.data() + 32, 32, 2), 0U);
}

TEST(Graph, GRAPH_3__launches_of_one_exec_never_overlap_even_on_two_streams) {
  const sluice::device dev{0};
  sluice::stream s{dev}, s1{dev}, s2{dev};
  sluice::pinned_buffer<byte> p{16};
  sluice::capture cap{s};
  sluice::fill(s, p.data(), 4, 16);
  const sluice::graph_exec exec = cap.end().instantiate();
  gate held{s1};
  exec.launch(s1);
  exec.launch(s2);
  EXPECT_TRUE(stays_false([&] { return s2.ready(); }))
      << "the second launch finished while the first one's stream was held";
  held.release();
  EXPECT_TRUE(eventually([&] { return s2.ready(); }));
  s1.synchronize();
}

// A launch that replays after launches of the vendor's graph (CUDA: an event
// the graph records was destroyed) still waits for them.
TEST(Graph, GRAPH_3__a_launch_that_replays_waits_for_the_launches_before_it) {
  const sluice::device dev{0};
  sluice::stream s{dev}, s1{dev}, s2{dev};
  sluice::pinned_buffer<byte> p{16};
  auto recorded = std::make_unique<sluice::event>(dev);
  sluice::capture cap{s};
  sluice::fill(s, p.data(), 4, 16);
  recorded->record(s);
  const sluice::graph_exec exec = cap.end().instantiate();
  const std::string how = exec.how();
  gate held{s1};
  exec.launch(s1);
  recorded.reset();
  exec.launch(s2);
  EXPECT_TRUE(stays_false([&] { return s2.ready(); }))
      << "the second launch finished while the first one's stream was held (first: " << how
      << ", second: " << exec.how() << ")";
  held.release();
  EXPECT_TRUE(eventually([&] { return s2.ready(); }));
  s1.synchronize();
  EXPECT_EQ(count_not(p.data(), 16, 4), 0U);
}

// update() gives later launches new arguments (on CUDA: a new vendor graph);
// a launch after it still waits for the launches made before it.
TEST(Graph, GRAPH_3__a_launch_after_update_waits_for_the_launches_before_it) {
  const sluice::device dev{0};
  sluice::stream s{dev}, s1{dev}, s2{dev};
  sluice::pinned_buffer<byte> p{16};
  const auto fill_with = [&](byte v) {
    sluice::capture cap{s};
    sluice::fill(s, p.data(), v, 16);
    return cap.end();
  };
  sluice::graph_exec exec = fill_with(4).instantiate();
  gate held{s1};
  exec.launch(s1);
  EXPECT_EQ(exec.update(fill_with(5)), update_status::ok);
  exec.launch(s2);
  EXPECT_TRUE(stays_false([&] { return s2.ready(); }))
      << "the launch after update() finished while the first one's stream was held (" << exec.how()
      << ")";
  held.release();
  EXPECT_TRUE(eventually([&] { return s2.ready(); }));
  s1.synchronize();
  EXPECT_EQ(count_not(p.data(), 16, 5), 0U) << "the launches ran out of order";
}

TEST(Graph, GRAPH_6__host_functions_run_once_per_launch_and_report_their_exception) {
  const sluice::device dev{0};
  sluice::stream s{dev}, t{dev};
  sluice::pinned_buffer<byte> p{8}, q{8};
  std::memset(p.data(), 0, 8);
  std::atomic<int> runs{0};
  std::atomic<bool> on_caller{false};
  std::atomic<int> saw_fill{0};
  std::atomic<int> self_wait_refused{0};
  const auto caller = std::this_thread::get_id();
  sluice::flag after{0};
  sluice::capture cap{s};
  sluice::fill(s, p.data(), 6, 8);
  s.host_func([&] {
    runs.fetch_add(1);
    if (std::this_thread::get_id() == caller) on_caller.store(true);
    if (p[7] == 6) saw_fill.fetch_add(1);
    sluice::fill(t, q.data(), 9, 8);  // it may call sluice
    t.synchronize();
    try {
      s.synchronize();  // its launch's stream: waiting for itself
    } catch (const sluice::error& e) {
      if (e.code() == errc::invalid_argument) self_wait_refused.fetch_add(1);
    }
  });
  s.write_value(after, 1);
  const sluice::graph_exec exec = cap.end().instantiate();
  for (int launch = 1; launch <= 3; ++launch) {
    std::memset(p.data(), 0, 8);
    exec.launch(s);
    s.synchronize();
    EXPECT_EQ(runs.load(), launch);
    EXPECT_EQ(saw_fill.load(), launch) << "it ran before its predecessor";
    EXPECT_EQ(after.load(), 1U);
    after.store(0);
  }
  EXPECT_FALSE(on_caller.load());
  EXPECT_EQ(self_wait_refused.load(), 3) << "synchronizing its launch's stream was not refused";
  EXPECT_EQ(count_not(q.data(), 8, 9), 0U);

  // A blocked one holds only its own graph's launch.
  sluice::stream s2{dev};
  std::atomic<int> other_runs{0};
  sluice::capture other_capture{s2};
  s2.host_func([&] { other_runs.fetch_add(1); });
  const sluice::graph_exec other = other_capture.end().instantiate();
  host_latch latch;
  sluice::capture blocked_capture{s};
  s.host_func(latch.waiter());
  const sluice::graph_exec blocked = blocked_capture.end().instantiate();
  blocked.launch(s);
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));
  other.launch(s2);
  EXPECT_TRUE(eventually([&] { return other_runs.load() == 1; })) << "another graph was held";
  latch.open();
  s.synchronize();

  // An exception is reported once by the launch stream; later work runs.
  sluice::capture throwing_capture{s};
  s.host_func([] { throw std::runtime_error("graph host function failed"); });
  const sluice::graph_exec throwing = throwing_capture.end().instantiate();
  sluice::stream launcher{dev};
  throwing.launch(launcher);
  try {
    launcher.synchronize();
    ADD_FAILURE() << "the exception was lost";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), errc::host_function_failed);
    EXPECT_NE(std::string(e.what()).find("graph host function failed"), std::string::npos);
  }
  sluice::fill(launcher, q.data(), 1, 8);
  EXPECT_NO_THROW(launcher.synchronize());
  EXPECT_EQ(q[0], 1);
}

TEST(Graph, GRAPH_7__every_launch_records_the_graphs_events_again) {
  const sluice::device dev{0};
  sluice::stream s{dev}, t{dev};
  sluice::event start{dev, {true, false}}, stop{dev, {true, false}};
  sluice::flag hold{0}, seen{0};
  sluice::capture cap{s};
  start.record(s);
  s.wait_value(hold, 1);
  stop.record(s);
  const sluice::graph_exec exec = cap.end().instantiate();
  for (std::uint32_t launch = 1; launch <= 3; ++launch) {
    hold.store(0);
    exec.launch(s);
    t.wait(stop);  // waits for this launch's point
    t.write_value(seen, launch);
    EXPECT_TRUE(stays_false([&] { return seen.load() == launch || stop.ready(); }))
        << "launch " << launch << ": a wait on the graph's event did not wait for the launch";
    hold.store(1);
    ASSERT_TRUE(eventually([&] { return seen.load() == launch; }));
    s.synchronize();
    EXPECT_TRUE(start.ready() && stop.ready()) << "the launch completed before its records";
    EXPECT_GE(sluice::elapsed(start, stop).count(), 0.0);
  }
}

// The same for a graph of fills and records only (on CUDA a vendor graph: its
// record nodes), the launch stream held before the launch.
TEST(Graph, GRAPH_7__a_wait_after_the_launch_waits_for_the_launchs_record) {
  const sluice::device dev{0};
  sluice::stream s{dev}, t{dev};
  sluice::device_buffer<byte> x{dev, 256};
  sluice::event start{dev, {true, false}}, stop{dev, {true, false}};
  sluice::flag hold{0}, seen{0};
  sluice::capture cap{s};
  start.record(s);
  sluice::fill(s, x.data(), 1, 256);
  stop.record(s);
  const sluice::graph_exec exec = cap.end().instantiate();
  const std::string how = exec.how();
  for (std::uint32_t launch = 1; launch <= 3; ++launch) {
    hold.store(0);
    s.wait_value(hold, 1);  // outside the graph: the launch waits behind it
    exec.launch(s);
    t.wait(stop);  // waits for this launch's point
    t.write_value(seen, launch);
    EXPECT_TRUE(stays_false([&] { return seen.load() == launch || stop.ready(); }))
        << "launch " << launch << " (" << how
        << "): a wait on the graph's event did not wait for the launch";
    hold.store(1);
    ASSERT_TRUE(eventually([&] { return seen.load() == launch; }));
    s.synchronize();
    EXPECT_TRUE(start.ready() && stop.ready()) << "the launch completed before its records";
    EXPECT_GE(sluice::elapsed(start, stop).count(), 0.0);
  }
}

TEST(Graph, GRAPH_8__flags_are_written_and_waited_for_on_every_launch) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::flag go{0}, done{0};
  sluice::capture cap{s};
  s.wait_value(go, 5);
  s.write_value(done, 7);
  const sluice::graph_exec exec = cap.end().instantiate();
  EXPECT_EQ(done.load(), 0U);
  for (int launch = 0; launch < 3; ++launch) {
    go.store(0);
    done.store(0);
    exec.launch(s);
    EXPECT_TRUE(stays_false([&] { return done.load() != 0; })) << "the graph did not wait";
    go.store(5);
    ASSERT_TRUE(eventually([&] { return done.load() == 7; }));
    s.synchronize();
  }
}

sluice::graph fill_then_copy(sluice::stream_ref s, byte* from, byte* to, byte v, std::size_t n) {
  sluice::capture cap{s};
  sluice::fill(s, from, v, n);
  sluice::copy(s, to, from, n);
  return cap.end();
}

TEST(Graph, GRAPH_9__update_takes_new_arguments_or_changes_nothing) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 256;
  sluice::pinned_buffer<byte> a{n}, b{n}, c{n}, d{n};
  for (auto* p : {a.data(), b.data(), c.data(), d.data()}) std::memset(p, 0, n);
  const sluice::graph g1 = fill_then_copy(s, a.data(), b.data(), 1, n);
  const sluice::graph g2 = fill_then_copy(s, c.data(), d.data(), 2, n / 2);
  sluice::graph_exec exec = g1.instantiate();
  // A launch already enqueued keeps g1's arguments.
  {
    gate held{s};
    exec.launch(s);
    EXPECT_EQ(exec.update(g2), update_status::ok);
  }
  s.synchronize();
  EXPECT_EQ(count_not(b.data(), n, 1), 0U) << "update() changed a launch already enqueued";
  EXPECT_EQ(count_not(d.data(), n, 0), 0U);
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(count_not(d.data(), n / 2, 2), 0U) << "the launch after update() used old arguments";
  EXPECT_EQ(count_not(d.data() + n / 2, n / 2, 0), 0U) << "the new size was not used";

  sluice::capture longer{s};
  sluice::fill(s, a.data(), 3, n);
  sluice::copy(s, b.data(), a.data(), n);
  sluice::fill(s, a.data(), 3, n);
  EXPECT_EQ(exec.update(longer.end()), update_status::topology_changed);
  sluice::capture other_kind{s};
  sluice::fill(s, a.data(), 3, n);
  sluice::fill(s, b.data(), 3, n);
  EXPECT_EQ(exec.update(other_kind.end()), update_status::kind_changed);
  sluice::device_buffer<byte> on_device{dev, n};
  EXPECT_EQ(exec.update(fill_then_copy(s, on_device.data(), d.data(), 4, n)),
            update_status::not_updatable)
      << "another memory kind (and direction) was accepted";
  std::memset(d.data(), 0, n);
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(count_not(d.data(), n / 2, 2), 0U) << "a refused update() changed the exec";
  EXPECT_EQ(count_not(b.data(), n, 1), 0U);
}

// The same through device memory (on CUDA a vendor graph, made again by
// update()): every later launch has the new arguments.
TEST(Graph, GRAPH_9__update_of_device_copies_takes_new_arguments_at_every_later_launch) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 1024;
  sluice::device_buffer<byte> a{dev, n}, b{dev, n};
  sluice::pinned_buffer<byte> out{n};
  const auto program = [&](byte v, std::size_t bytes) {
    sluice::capture cap{s};
    sluice::fill(s, a.data(), v, bytes);
    sluice::copy(s, b.data(), a.data(), bytes);
    return cap.end();
  };
  sluice::graph_exec exec = program(1, n).instantiate();
  ASSERT_EQ(exec.update(program(2, n / 2)), update_status::ok);
  for (int launch = 1; launch <= 5; ++launch) {
    sluice::fill(s, b.data(), 0, n);
    exec.launch(s);
    sluice::copy(s, out.data(), b.data(), n);
    s.synchronize();
    ASSERT_EQ(count_not(out.data(), n / 2, 2), 0U)
        << "launch " << launch << " (" << exec.how() << ")";
    ASSERT_EQ(count_not(out.data() + n / 2, n / 2, 0), 0U) << "launch " << launch;
  }
}

//! launch() and update(g) of exec each throw errc::invalid_handle, with
//! nothing enqueued on s: the graph uses `gone`.
void expect_launch_and_update_refused(sluice::graph_exec& exec, const sluice::graph& g,
                                      sluice::stream_ref s, const char* gone) {
  for (int call = 0; call < 2; ++call) {
    try {
      if (call == 0)
        exec.launch(s);
      else
        (void)exec.update(g);
      ADD_FAILURE() << (call == 0 ? "launch()" : "update()") << " used " << gone;
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_handle) << e.what();
    }
  }
  EXPECT_TRUE(s.ready()) << "something was enqueued";
}

TEST(Graph, GRAPH_9__a_destroyed_buffer_makes_launch_and_update_throw_invalid_handle) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::pinned_buffer<byte> p{64};
  auto d = std::make_unique<sluice::device_buffer<byte>>(dev, 64);
  sluice::capture cap{s};
  sluice::fill(s, d->data(), 1, 64);
  sluice::copy(s, p.data(), d->data(), 64);
  const sluice::graph g = cap.end();
  sluice::graph_exec exec = g.instantiate();
  exec.launch(s);
  d.reset();  // the launch already enqueued completes first
  s.synchronize();
  EXPECT_EQ(count_not(p.data(), 64, 1), 0U);
  expect_launch_and_update_refused(exec, g, s, "a destroyed buffer");
}

// The same for registered host memory: unregistered before a launch, the
// range is gone for the graph too.
TEST(Graph, GRAPH_9__an_unregistered_range_makes_launch_and_update_throw_invalid_handle) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::vector<byte> user(4096, 0);
  sluice::device_buffer<byte> d{dev, user.size()};
  auto reg = std::make_unique<sluice::registered_host_memory>(user.data(), user.size());
  sluice::capture cap{s};
  sluice::fill(s, d.data(), 5, user.size());
  sluice::copy(s, user.data(), d.data(), user.size());
  const sluice::graph g = cap.end();
  sluice::graph_exec exec = g.instantiate();
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(count_not(user.data(), user.size(), 5), 0U);
  reg.reset();
  expect_launch_and_update_refused(exec, g, s, "an unregistered range");
}

TEST(Graph, GRAPH_10__a_peer_copy_moves_the_right_bytes_by_its_path_on_every_launch) {
  const sluice::device a{0};
  const sluice::device b{sluice::device_count() > 1 ? 1 : 0};
  sluice::stream s{a}, on_b{b};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> src{a, n}, dst{b, n};
  sluice::pinned_buffer<byte> in{n}, out{n};
  sluice::capture cap{s};
  const sluice::copy_path path = sluice::copy_peer(s, dst.data(), b, src.data(), a, n);
  const sluice::graph g = cap.end();
  EXPECT_NE(g.to_dot().find(std::string("path=\"") + to_string(path) + "\""), std::string::npos)
      << g.to_dot();
  const sluice::graph_exec exec = g.instantiate();
  for (int launch = 0; launch < 3; ++launch) {
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<byte>(i * 7 + launch);
    sluice::copy(s, src.data(), in.data(), n);
    exec.launch(s);
    on_b.wait(s);
    sluice::copy(on_b, out.data(), dst.data(), n);
    on_b.synchronize();
    ASSERT_EQ(std::memcmp(in.data(), out.data(), n), 0) << "launch " << launch;
  }
}

// A peer copy captured without peer access reports the staged path; peer
// access enabled after the capture changes the path of new copies but not the
// graph's: each launch copies by the path reported at capture (the trace of a
// launch names it), and the bytes are right.
TEST(Graph, GRAPH_10__a_launch_copies_by_the_path_reported_at_capture) {
  std::optional<std::pair<int, int>> pair;
  for (int i = 0; i < sluice::device_count() && !pair; ++i)
    for (int j = 0; j < sluice::device_count() && !pair; ++j)
      if (i != j && sluice::link(sluice::device{i}, sluice::device{j}).peer_access_possible &&
          !sluice::peer_access_enabled(sluice::device{i}, sluice::device{j}))
        pair.emplace(i, j);
  if (!pair) GTEST_SKIP() << "no two devices with peer access possible and not enabled yet";
  const sluice::device a{pair->first}, b{pair->second};
  sluice::stream s{a}, on_b{b};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> src{a, n}, dst{b, n};
  sluice::pinned_buffer<byte> in{n}, out{n};
  sluice::capture cap{s};
  const sluice::copy_path captured = sluice::copy_peer(s, dst.data(), b, src.data(), a, n);
  const sluice::graph_exec exec = cap.end().instantiate();
  ASSERT_EQ(captured, sluice::copy_path::staged);
  sluice::enable_peer_access(a, b);
  const sluice::copy_path now = sluice::copy_peer(s, dst.data(), b, src.data(), a, n);
  s.synchronize();
  if (now == captured) GTEST_SKIP() << "peer access did not change the path of a new copy here";
  const std::string file = ::testing::TempDir() + "graph_10_path.trace.json";
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<byte>(i * 5 + 3);
  sluice::copy(s, src.data(), in.data(), n);
  try {
    sluice::trace_begin(file);
  } catch (const sluice::error& e) {
    if (e.code() != errc::not_supported) throw;
    GTEST_SKIP() << "tracing is compiled out here: the launch's path cannot be seen";
  }
  exec.launch(s);
  s.synchronize();
  (void)sluice::trace_end();
  on_b.wait(s);
  sluice::copy(on_b, out.data(), dst.data(), n);
  on_b.synchronize();
  EXPECT_EQ(std::memcmp(in.data(), out.data(), n), 0);
  std::ifstream f(file);
  const std::string trace((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(file.c_str());
  const std::string staged = "\"path\": \"staged\"",
                    other = std::string("\"path\": \"") + to_string(now) + "\"";
  EXPECT_NE(trace.find(staged), std::string::npos) << "the launch's copy took no staged path";
  EXPECT_EQ(trace.find(other), std::string::npos)
      << "the launch's copy took the path of a new copy (" << to_string(now) << ")";
}

TEST(Graph, GRAPH_15__independent_branches_run_concurrently) {
  const sluice::device dev{0};
  sluice::stream s{dev}, s2{dev};
  sluice::event fork{dev}, join{dev};
  std::atomic<int> inside{0};
  std::atomic<bool> met{false};
  auto meet = [&] {
    inside.fetch_add(1);
    if (eventually([&] { return inside.load() == 2; }, std::chrono::seconds(2))) met.store(true);
  };
  sluice::capture cap{s};
  fork.record(s);
  s2.wait(fork);
  s2.host_func(meet);
  s.host_func(meet);
  join.record(s2);
  s.wait(join);
  const sluice::graph_exec exec = cap.end().instantiate();
  exec.launch(s);
  s.synchronize();
  if (!met.load()) SLUICE_NOT_OBSERVED("the two branches did not run at the same time");
}

TEST(Graph, GRAPH_16__a_launch_costs_the_caller_less_than_its_operations) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr int ops = 256;
  sluice::pinned_buffer<byte> p{ops};
  sluice::capture cap{s};
  for (int i = 0; i < ops; ++i) sluice::fill(s, p.data() + i, 1, 1);
  const sluice::graph_exec exec = cap.end().instantiate();
  exec.launch(s);  // warm up
  s.synchronize();
  gate held{s};
  const auto t0 = clock::now();
  exec.launch(s);
  const auto t1 = clock::now();
  for (int i = 0; i < ops; ++i) sluice::fill(s, p.data() + i, 1, 1);
  const auto t2 = clock::now();
  held.release();
  s.synchronize();
  if (t1 - t0 >= t2 - t1) SLUICE_NOT_OBSERVED("a launch cost the caller as much as its operations");
}

}  // namespace
}  // namespace sluice::conformance
