// The activity tracer's logic (backends/cuda_hip/trace/activity_tracer.hpp) against
// a fake activity source: the source CUPTI is on a GPU, scripted
// here. It checks that each operation is tied to its activities through the
// external ids pushed around its enqueue, that device times come back on the
// host clock, that the user's own kernels land on their stream's track with
// their demangled name, and that nothing is lost silently.
#include "trace/activity_tracer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using sluice::detail::activity_batch;
using sluice::detail::activity_record;
using sluice::detail::activity_source;
using sluice::detail::activity_summary;
using sluice::detail::activity_tracer;
namespace trace = sluice::detail::trace;

constexpr std::uint64_t clock_offset = 1700000000000000000ULL;  // a realtime-like epoch

//! A scripted source: its clock is the host's plus an offset; the test says
//! which activities the "device" ran.
class fake_source final : public activity_source {
 public:
  bool refuse = false;
  std::vector<std::uint64_t> stack;   // external ids pushed, not yet popped
  std::vector<std::uint64_t> pushed;  // every push, in order
  int pops = 0;
  bool started = false, stopped = false;
  activity_batch batch;
  std::uint32_t next_correlation = 100;

  bool start(std::string* why) override {
    if (refuse) {
      *why = "CUPTI is already in use by another tool";
      return false;
    }
    started = true;
    return true;
  }
  void push(std::uint64_t external) noexcept override {
    stack.push_back(external);
    pushed.push_back(external);
  }
  void pop() noexcept override {
    ++pops;
    if (!stack.empty()) stack.pop_back();
  }
  bool stream_id(void* native, std::uint32_t* id) noexcept override {
    *id = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(native));
    return true;
  }
  std::uint64_t timestamp() noexcept override {
    return static_cast<std::uint64_t>(trace::now_ns()) + clock_offset;
  }
  void stop(activity_batch* out) override {
    stopped = true;
    *out = std::move(batch);
  }

  //! The device ran an activity of the innermost pushed operation (as the
  //! vendor call made while it is pushed would): host times [start, end].
  void ran(activity_record::type what, std::uint32_t stream, std::int64_t start, std::int64_t end,
           std::uint64_t external) {
    const std::uint32_t c = next_correlation++;
    activity_record a;
    a.what = what;
    a.correlation = c;
    a.stream = stream;
    a.start = static_cast<std::uint64_t>(start) + clock_offset;
    a.end = static_cast<std::uint64_t>(end) + clock_offset;
    batch.activities.push_back(a);
    batch.correlations.emplace_back(c, external);
  }
  //! The user's own kernel on a stream (no external id).
  void user_kernel(std::uint32_t stream, std::int64_t start, std::int64_t end, const char* name) {
    activity_record a;
    a.what = activity_record::type::kernel;
    a.correlation = next_correlation++;
    a.stream = stream;
    a.start = static_cast<std::uint64_t>(start) + clock_offset;
    a.end = static_cast<std::uint64_t>(end) + clock_offset;
    a.name = name;
    batch.activities.push_back(a);
  }
};

//! open() and close() as the backend calls them (the source pushed to travels
//! with the op); the record is filled into the op's slot before it is closed.
struct opened {
  activity_tracer::slot* slot = nullptr;
  std::uint64_t id = 0;
  activity_source* pushed = nullptr;
};
opened open_op(activity_tracer& t) {
  opened o;
  o.slot = t.open(&o.pushed);
  o.id = o.slot->id;
  return o;
}
void close_op(const opened& o, trace::record r) {
  o.slot->r = std::move(r);
  activity_tracer::close(o.slot, o.pushed);
}

void* native(std::uint32_t id) { return reinterpret_cast<void*>(std::uintptr_t{id}); }

trace::record op(const char* kind, std::uint64_t stream, std::uint64_t seq, std::int64_t enqueue) {
  trace::record r;
  r.kind = kind;
  r.stream = stream;
  r.seq = seq;
  r.host_thread = 1;
  r.enqueue_ns = enqueue;
  return r;
}

const trace::record* find(const std::vector<trace::record>& v, std::uint64_t stream,
                          std::uint64_t seq) {
  for (const auto& r : v)
    if (r.stream == stream && r.seq == seq && r.host_thread != 0) return &r;
  return nullptr;
}

TEST(ActivityTracer, OperationsAreTimedByTheirActivitiesOnTheHostClock) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why)) << why;
  EXPECT_TRUE(t.active());
  t.add_stream(native(7), 1, 0, -2);
  const std::int64_t base = trace::now_ns();
  // A copy made of two activities (a staged copy's chunks), then a fill.
  const opened copy = open_op(t);
  ASSERT_EQ(src.stack, std::vector<std::uint64_t>{copy.id});
  src.ran(activity_record::type::copy, 7, base + 1000, base + 5000, copy.id);
  src.ran(activity_record::type::copy, 7, base + 6000, base + 9000, copy.id);
  close_op(copy, op("copy", 1, 1, base));
  EXPECT_TRUE(src.stack.empty());
  const opened fill = open_op(t);
  EXPECT_NE(fill.id, copy.id);
  src.ran(activity_record::type::fill, 7, base + 9500, base + 12000, fill.id);
  close_op(fill, op("fill", 1, 2, base + 10));

  std::vector<trace::record> out;
  const activity_summary sum = t.end(&out);
  EXPECT_TRUE(src.stopped);
  EXPECT_FALSE(t.active());
  EXPECT_EQ(sum.operations, 2u);
  EXPECT_EQ(sum.left_out, 0u);
  EXPECT_EQ(sum.activities, 3u);
  EXPECT_EQ(sum.correlations, 3u);
  EXPECT_GE(sum.clock_error_ns, 0);
  EXPECT_LT(sum.clock_error_ns, 1000000);  // a few us on any machine
  const std::int64_t tol = sum.clock_error_ns + 1000;
  const auto* c = find(out, 1, 1);
  const auto* f = find(out, 1, 2);
  ASSERT_NE(c, nullptr);
  ASSERT_NE(f, nullptr);
  EXPECT_LE(std::llabs(c->start_ns - (base + 1000)), tol) << c->start_ns - (base + 1000);
  EXPECT_LE(std::llabs(c->end_ns - (base + 9000)), tol) << c->end_ns - (base + 9000);
  EXPECT_LE(std::llabs(f->start_ns - (base + 9500)), tol) << f->start_ns - (base + 9500);
  EXPECT_LE(std::llabs(f->end_ns - (base + 12000)), tol) << f->end_ns - (base + 12000);
  EXPECT_STREQ(c->kind, "copy");
}

TEST(ActivityTracer, TheUsersOwnKernelLandsOnItsStreamsTrackNamed) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  t.add_stream(native(3), 42, 1, -5);
  const std::int64_t base = trace::now_ns();
  src.user_kernel(3, base + 100, base + 900, "_Z6squarePfi");
  src.user_kernel(9, base + 100, base + 900, "_Z5otherv");  // not a sluice stream
  std::vector<trace::record> out;
  const activity_summary sum = t.end(&out);
  EXPECT_EQ(sum.user_activities, 1u);
  EXPECT_EQ(sum.foreign, 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_STREQ(out[0].kind, "kernel");
  EXPECT_EQ(out[0].label, "square(float*, int)");
  EXPECT_EQ(out[0].stream, 42u);
  EXPECT_EQ(out[0].device, 1);
  EXPECT_EQ(out[0].priority, -5);
  EXPECT_EQ(out[0].host_thread, 0u);  // not enqueued through sluice
  EXPECT_LE(out[0].start_ns, out[0].end_ns);
}

TEST(ActivityTracer, InstantsAndWaitsArePlacedAfterWhatTheyFollow) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  const std::int64_t base = trace::now_ns();
  // Stream 1: a copy [base+1000, base+50000], then a record (enqueued at base+20).
  const opened copy = open_op(t);
  src.ran(activity_record::type::copy, 1, base + 1000, base + 50000, copy.id);
  close_op(copy, op("copy", 1, 1, base));
  const opened rec = open_op(t);
  close_op(rec, op("record", 1, 2, base + 20));
  // Stream 2: waits for stream 1's record (enqueued at base+30).
  auto w = op("wait", 2, 1, base + 30);
  w.from_stream = 1;
  w.from_seq = 2;
  const opened wait = open_op(t);
  close_op(wait, std::move(w));
  std::vector<trace::record> out;
  const activity_summary sum = t.end(&out);
  EXPECT_EQ(sum.operations, 3u);
  const std::int64_t tol = sum.clock_error_ns + 1000;
  const auto* r = find(out, 1, 2);
  const auto* wr = find(out, 2, 1);
  ASSERT_NE(r, nullptr);
  ASSERT_NE(wr, nullptr);
  EXPECT_LE(std::llabs(r->start_ns - (base + 50000)), tol) << r->start_ns - (base + 50000);
  EXPECT_EQ(r->start_ns, r->end_ns);   // an instant
  EXPECT_EQ(wr->start_ns, base + 30);  // the idle stream reached it when it was enqueued
  EXPECT_EQ(wr->end_ns, r->end_ns);    // and it ended when the record completed
}

TEST(ActivityTracer, AnInstantAfterAHostFunctionIsPlacedAfterItsEnd) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  const std::int64_t base = trace::now_ns();
  // Stream 1: a copy [base+1000, base+2000], a host function (seq 2, not the
  // activity tracer's: it ran until base+90000), then a record and a host
  // function of stream 2 that ran until base+500000 (no bearing on stream 1).
  const opened copy = open_op(t);
  src.ran(activity_record::type::copy, 1, base + 1000, base + 2000, copy.id);
  close_op(copy, op("copy", 1, 1, base));
  t.host_ran(1, 2, base + 90000);
  t.host_ran(2, 1, base + 500000);
  const opened rec = open_op(t);
  close_op(rec, op("record", 1, 3, base + 20));
  std::vector<trace::record> out;
  t.end(&out);
  const auto* r = find(out, 1, 3);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start_ns, base + 90000);  // after the host function, before it: no
  EXPECT_EQ(r->end_ns, base + 90000);
}

TEST(ActivityTracer, AWaitItCannotSeeTheEndOfEndsWhereTheStreamWentOn) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  const std::int64_t base = trace::now_ns();
  // A flag's wait_value (no device activity, nothing to wait for in the
  // trace), then a fill that ran only once the flag was stored, 30 us later.
  const opened wait = open_op(t);
  close_op(wait, op("wait_value", 1, 1, base));
  const opened fill = open_op(t);
  src.ran(activity_record::type::fill, 1, base + 30000, base + 31000, fill.id);
  close_op(fill, op("fill", 1, 2, base + 10));
  // And one at the end of a stream: nothing follows, an instant.
  const opened last = open_op(t);
  close_op(last, op("wait_value", 2, 1, base + 20));
  std::vector<trace::record> out;
  const activity_summary sum = t.end(&out);
  const std::int64_t tol = sum.clock_error_ns + 1000;
  const auto* w = find(out, 1, 1);
  const auto* f = find(out, 1, 2);
  const auto* l = find(out, 2, 1);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(w->start_ns, base);
  EXPECT_EQ(w->end_ns, f->start_ns);
  EXPECT_LE(std::llabs(f->start_ns - (base + 30000)), tol) << f->start_ns - (base + 30000);
  EXPECT_EQ(l->start_ns, l->end_ns);
}

TEST(ActivityTracer, WhatIsLostIsCountedNotHidden) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  const std::int64_t base = trace::now_ns();
  const opened copy = open_op(t);  // its activity record was dropped
  close_op(copy, op("copy", 1, 1, base));
  const opened thrown = open_op(t);  // threw before it was enqueued
  activity_tracer::abandon(thrown.slot, thrown.pushed);
  src.ran(activity_record::type::fill, 1, base + 10, base + 20, thrown.id);  // not shown
  src.batch.dropped = 3;
  std::vector<trace::record> out;
  const activity_summary sum = t.end(&out);
  EXPECT_EQ(src.pops, 2);
  EXPECT_TRUE(src.stack.empty());
  EXPECT_EQ(sum.dropped, 3u);
  EXPECT_EQ(sum.left_out, 1u);
  EXPECT_EQ(sum.operations, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(ActivityTracer, ASourceThatCannotStartLeavesTheEventTracerInCharge) {
  fake_source src;
  src.refuse = true;
  activity_tracer t;
  std::string why;
  EXPECT_FALSE(t.begin(&src, &why));
  EXPECT_NE(why.find("another tool"), std::string::npos);
  EXPECT_FALSE(t.active());
  EXPECT_EQ(open_op(t).pushed, nullptr);  // nothing pushed
  EXPECT_TRUE(src.pushed.empty());
  std::vector<trace::record> out;
  EXPECT_EQ(t.end(&out).operations, 0u);
  EXPECT_FALSE(src.stopped);
  EXPECT_FALSE(t.begin(nullptr, &why));  // no source at all (HIP, no libcupti)
}

TEST(ActivityTracer, AnOperationOfAnEarlierTraceIsNotInTheNextOne) {
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  const opened late = open_op(t);  // still open when the trace ends
  std::vector<trace::record> out;
  t.end(&out);
  ASSERT_TRUE(t.begin(&src, &why));
  close_op(late, op("record", 1, 1, trace::now_ns()));
  const opened now = open_op(t);
  close_op(now, op("record", 1, 2, trace::now_ns()));
  const opened after = open_op(t);  // closed once this trace has ended
  out.clear();
  EXPECT_EQ(t.end(&out).operations, 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 2u);
  close_op(after, op("record", 1, 3, trace::now_ns()));
  // Every push popped where it was pushed, the trace over or not: the
  // thread's external ids never tag later work.
  EXPECT_TRUE(src.stack.empty());
  EXPECT_EQ(src.pops, static_cast<int>(src.pushed.size()));
  ASSERT_TRUE(t.begin(&src, &why));
  out.clear();
  EXPECT_EQ(t.end(&out).operations, 0u);
}

}  // namespace

namespace {

TEST(ActivityTracer, OperationsClosedOnManyThreadsAreAllInTheTrace) {
  // Each thread closes into a buffer of its own (no lock shared between
  // enqueuing threads); end() takes every thread's, also of threads that
  // ended before the trace did, and none of the next trace's.
  fake_source src;
  activity_tracer t;
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  constexpr int threads = 8, per_thread = 500;
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&t, k] {
      for (int i = 0; i < per_thread; ++i) {
        activity_source* pushed = nullptr;
        activity_tracer::slot* s = t.open(&pushed, false);
        s->r = op("record", static_cast<std::uint64_t>(k + 1), static_cast<std::uint64_t>(i + 1),
                  trace::now_ns());
        activity_tracer::close(s, pushed);
      }
    });
  for (auto& th : pool) th.join();  // the threads end before the trace
  std::vector<trace::record> out;
  EXPECT_EQ(t.end(&out).operations, static_cast<std::uint64_t>(threads * per_thread));
  std::vector<int> seen(threads * per_thread, 0);
  for (const auto& r : out) {
    ASSERT_GE(r.stream, 1u);
    ASSERT_LE(r.stream, static_cast<std::uint64_t>(threads));
    ++seen[(r.stream - 1) * per_thread + (r.seq - 1)];
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  ASSERT_TRUE(t.begin(&src, &why));
  out.clear();
  EXPECT_EQ(t.end(&out).operations, 0u);  // nothing carried into the next trace
}

TEST(ActivityTracer, TracesEndWhileThreadsKeepClosing) {
  // Threads open and close without a lock while end() takes their slots and
  // the next trace begins: an operation closed before end() began is in that
  // trace, and none is in two traces (run under TSan in CI).
  fake_source src;
  activity_tracer t;
  std::string why;
  constexpr int threads = 4;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> allowed{0};                     // each thread's seqs up to this
  std::array<std::atomic<std::uint64_t>, threads> closed{};  // the last seq closed, per thread
  std::vector<std::thread> pool;
  ASSERT_TRUE(t.begin(&src, &why));
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      for (std::uint64_t seq = 1; !stop.load(std::memory_order_relaxed); ++seq) {
        // As the backend does: only while a trace is collected; and at most
        // `allowed`, so that the slots stay few.
        while ((!t.active() || seq > allowed.load(std::memory_order_acquire)) &&
               !stop.load(std::memory_order_relaxed))
          std::this_thread::yield();
        activity_source* pushed = nullptr;
        activity_tracer::slot* s = t.open(&pushed, false);
        s->r = op("record", static_cast<std::uint64_t>(k + 1), seq, trace::now_ns());
        activity_tracer::close(s, pushed);
        closed[k].store(seq, std::memory_order_release);
      }
    });
  std::vector<std::set<std::uint64_t>> seen(threads);  // seqs in any trace, per thread
  for (int round = 0; round < 6; ++round) {
    // No ASSERT while the threads run: they are stopped and joined below.
    if (round > 0 && !t.begin(&src, &why)) {
      ADD_FAILURE() << "round " << round << ": begin failed: " << why;
      break;
    }
    // Each thread closes at least 600 more (past a chunk) before the trace ends.
    std::array<std::uint64_t, threads> from{};
    for (int k = 0; k < threads; ++k) from[k] = closed[k].load(std::memory_order_acquire);
    allowed.store(allowed.load() + 20000, std::memory_order_release);  // still closing as it ends
    for (int k = 0; k < threads; ++k)
      while (closed[k].load(std::memory_order_acquire) < from[k] + 600) std::this_thread::yield();
    std::array<std::uint64_t, threads> before_end{};
    for (int k = 0; k < threads; ++k) before_end[k] = closed[k].load(std::memory_order_acquire);
    std::vector<trace::record> out;
    t.end(&out);
    std::vector<std::set<std::uint64_t>> mine(threads);
    for (const auto& r : out) {
      if (r.stream < 1 || r.stream > static_cast<std::uint64_t>(threads)) {
        ADD_FAILURE() << "a record of no thread's stream: " << r.stream;
        continue;
      }
      const auto k = static_cast<std::size_t>(r.stream - 1);
      EXPECT_TRUE(mine[k].insert(r.seq).second) << "twice in one trace: " << r.seq;
      EXPECT_TRUE(seen[k].insert(r.seq).second) << "in two traces: " << r.seq;
    }
    // The operation after from[k] may have opened before this trace began.
    for (int k = 0; k < threads; ++k) {
      std::uint64_t missing = 0, first = 0;
      for (std::uint64_t seq = from[k] + 2; seq <= before_end[k]; ++seq)
        if (mine[k].count(seq) == 0 && missing++ == 0) first = seq;
      EXPECT_EQ(missing, 0u) << "round " << round << ", thread " << k << ": " << missing
                             << " operations closed before the trace ended are not in it, "
                                "the first seq "
                             << first;
    }
  }
  stop = true;
  for (auto& th : pool) th.join();
}

TEST(ActivityTracer, CounterStampsComeBackOnTheHostClock) {
  // With the CPU's counter (where it can be used), an operation stamped
  // between two host-clock reads is placed between them, within the
  // calibration's error.
  if (!sluice::detail::counter_clock_available())
    GTEST_SKIP() << "no usable CPU counter here (not x86-64 on the tsc clocksource, nor aarch64): "
                    "the host clock stamps operations";
  fake_source src;
  activity_tracer t(true);
  std::string why;
  ASSERT_TRUE(t.begin(&src, &why));
  std::vector<std::pair<std::int64_t, std::int64_t>> brackets;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t before = trace::now_ns();
    const opened o = open_op(t);
    const std::int64_t stamp = t.stamp();
    const std::int64_t after = trace::now_ns();
    close_op(o, op("record", 1, static_cast<std::uint64_t>(i + 1), stamp));
    brackets.emplace_back(before, after);
    // 50 us apart (10 ms in all): a rate off by 1 % would put the last
    // stamps 100 us away from their brackets.
    while (trace::now_ns() < after + 50000) {
    }
  }
  std::vector<trace::record> out;
  t.end(&out);
  ASSERT_EQ(out.size(), brackets.size());
  const std::int64_t slack = 2000;  // ns: both calibrations' windows, generously
  for (const auto& r : out) {
    const auto& b = brackets[r.seq - 1];
    EXPECT_GE(r.enqueue_ns, b.first - slack) << "seq " << r.seq;
    EXPECT_LE(r.enqueue_ns, b.second + slack) << "seq " << r.seq;
  }
}

}  // namespace
