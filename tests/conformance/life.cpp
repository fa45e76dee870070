// LIFE: lifetimes (docs/semantics.md, LIFE-1 .. LIFE-3).
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace sluice::conformance {
namespace {

// LIFE-3 and the type properties of the handles (style.md: pinned down by
// static_asserts). tests/conformance_compile_fail/ shows the first two fail to
// compile for real, as `sluice::stream_ref r = 0;` would.
static_assert(!std::is_constructible_v<sluice::stream_ref, int>, "stream_ref from 0");
static_assert(!std::is_constructible_v<sluice::stream_ref, std::nullptr_t>,
              "stream_ref from nullptr");
static_assert(!std::is_constructible_v<sluice::stream_ref, long>, "stream_ref from 0L");
static_assert(!std::is_convertible_v<int, sluice::stream_ref>);
static_assert(!std::is_convertible_v<std::nullptr_t, sluice::stream_ref>);
static_assert(!std::is_default_constructible_v<sluice::stream_ref>);
static_assert(std::is_trivially_copyable_v<sluice::stream_ref>);
static_assert(std::is_convertible_v<sluice::stream&, sluice::stream_ref>);

static_assert(!std::is_constructible_v<sluice::stream, int>);
static_assert(!std::is_constructible_v<sluice::stream, std::nullptr_t>);
static_assert(!std::is_copy_constructible_v<sluice::stream>);
static_assert(!std::is_copy_assignable_v<sluice::stream>);
static_assert(std::is_nothrow_move_constructible_v<sluice::stream>);
static_assert(std::is_nothrow_move_assignable_v<sluice::stream>);
static_assert(std::is_nothrow_destructible_v<sluice::stream>);

static_assert(!std::is_constructible_v<sluice::event, int>);
static_assert(!std::is_constructible_v<sluice::event, std::nullptr_t>);
static_assert(!std::is_copy_constructible_v<sluice::event>);
static_assert(!std::is_copy_assignable_v<sluice::event>);
static_assert(std::is_nothrow_move_constructible_v<sluice::event>);
static_assert(std::is_nothrow_move_assignable_v<sluice::event>);
static_assert(std::is_nothrow_destructible_v<sluice::event>);

static_assert(!std::is_convertible_v<int, sluice::device>, "device(int) is explicit");
static_assert(!std::is_copy_constructible_v<sluice::device_buffer<int>>);
static_assert(std::is_nothrow_move_constructible_v<sluice::device_buffer<int>>);
static_assert(!std::is_copy_constructible_v<sluice::pinned_buffer<int>>);
static_assert(std::is_nothrow_move_constructible_v<sluice::pinned_buffer<int>>);
static_assert(!std::is_copy_constructible_v<sluice::flag>);
static_assert(!std::is_move_constructible_v<sluice::flag>, "streams may wait on a flag's address");

TEST(Lifetimes, LIFE_1__destroying_a_stream_with_pending_work_returns_at_once) {
  const sluice::device dev{0};
  constexpr std::size_t n = 128 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  sluice::flag f{0};
  sluice::event e{dev};
  std::atomic<int> ran{0};

  std::optional<sluice::stream> s;
  s.emplace(dev);
  gate g{*s};
  sluice::fill(*s, d.data(), 0x4A, n);
  sluice::copy(*s, out.data(), d.data(), n);
  s->host_func([&] { ran.fetch_add(1); });
  s->write_value(f, 1);
  e.record(*s);

  EXPECT_TRUE(returns_while_held(g, [&] { s.reset(); })) << "~stream() blocked";
  EXPECT_TRUE(stays_false([&] { return ran.load() != 0 || f.load() != 0 || e.ready(); }))
      << "destroying the stream ran or dropped its held work";
  g.release();
  EXPECT_TRUE(eventually([&] { return f.load() == 1; })) << "the work was dropped";
  e.synchronize();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(first_byte_not(out.data(), n, 0x4A), n);
}

// A stream waiting on a destroyed stream keeps waiting for the work that was
// enqueued there.
TEST(Lifetimes, LIFE_1__waits_on_a_destroyed_stream_still_hold) {
  const sluice::device dev{0};
  sluice::stream waiter{dev};
  order_log log;
  gate g;
  {
    sluice::stream doomed{dev};
    g.hold(doomed);
    doomed.host_func([&] { log.add(1); });
    waiter.wait(doomed);
    waiter.host_func([&] { log.add(2); });
  }
  EXPECT_TRUE(stays_false([&] { return waiter.ready(); }));
  g.release();
  waiter.synchronize();
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2}));
}

// Many streams, each destroyed right after its work was enqueued: all of the
// work runs, once.
TEST(Lifetimes, LIFE_1__many_streams_destroyed_with_work_in_flight) {
  const sluice::device dev{0};
  constexpr int count = 64;
  std::vector<std::atomic<int>> runs(count);
  for (auto& r : runs) r.store(0);
  for (int i = 0; i < count; ++i) {
    sluice::stream s{dev};
    s.host_func([&runs, i] { runs[static_cast<std::size_t>(i)].fetch_add(1); });
  }
  EXPECT_TRUE(eventually([&] {
    return std::all_of(runs.begin(), runs.end(),
                       [](const std::atomic<int>& r) { return r.load() != 0; });
  }));
  dev.synchronize();
  for (int i = 0; i < count; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << i;
}

// Move assignment destroys the stream that was assigned over: also at once.
TEST(Lifetimes, LIFE_1__move_assigning_over_a_busy_stream_returns_at_once) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> ran{0};
  gate g{s};
  s.host_func([&] { ran.fetch_add(1); });
  EXPECT_TRUE(returns_while_held(g, [&] { s = sluice::stream{dev}; }));
  EXPECT_TRUE(s.ready()) << "the new stream is idle";
  EXPECT_TRUE(stays_false([&] { return ran.load() != 0; }));
  g.release();
  EXPECT_TRUE(eventually([&] { return ran.load() == 1; }));
  dev.synchronize();
}

TEST(Lifetimes, LIFE_2__a_moved_from_stream_is_empty_and_throws_invalid_handle) {
  const sluice::device dev{0};
  sluice::stream a{dev};
  sluice::stream b{std::move(a)};
  b.host_func([] {});
  b.synchronize();

  sluice::flag f{0};
  sluice::event e{dev};
  sluice::pinned_buffer<byte> p{16};
  // NOLINTBEGIN(bugprone-use-after-move): using the moved-from stream is the point
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.ready(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.synchronize(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.device(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.native_priority(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.host_func([] {}); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.wait(e); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.wait(b); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.write_value(f, 1); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.wait_value(f, 1); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { sluice::fill(a, p.data(), 0, 16); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_handle, [&] { sluice::copy(a, p.data(), p.data() + 8, 8); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { e.record(a); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { b.wait(a); }));
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(e.ready()) << "a rejected record changed the event";
  EXPECT_TRUE(b.ready()) << "a rejected wait left work on the valid stream";
  EXPECT_EQ(f.load(), 0u);

  // Assigning a live stream to the moved-from one makes it usable again.
  a = sluice::stream{dev};
  a.host_func([] {});
  a.synchronize();
}  // the moved-from and the live streams are destroyed safely

// A reference names the stream, not its owner: taken before a move it follows
// the stream into the new owner; once that owner destroys it, it throws. Move
// assignment destroys the target's old stream first.
TEST(Lifetimes, LIFE_2__a_reference_follows_its_stream_into_the_new_owner) {
  const sluice::device dev{0};
  std::optional<sluice::stream> a;
  a.emplace(dev);
  const sluice::stream_ref r = *a;
  std::optional<sluice::stream> b;
  b.emplace(std::move(*a));
  EXPECT_EQ(r, sluice::stream_ref{*b});
  std::atomic<int> ran{0};
  r.host_func([&] { ran.fetch_add(1); });
  b->synchronize();
  EXPECT_EQ(ran.load(), 1) << "work enqueued through the reference did not run on the new owner";
  EXPECT_TRUE(r.ready());
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from owner is empty
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a->ready(); }));

  sluice::stream c{dev};
  const sluice::stream_ref old_c = c;
  c = std::move(*b);  // c's old stream is destroyed
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)old_c.ready(); }));
  EXPECT_EQ(r, sluice::stream_ref{c});
  r.synchronize();
  a.reset();
  b.reset();
  EXPECT_TRUE(r.ready()) << "destroying the emptied owners destroyed the stream";
  sluice::stream gone = std::move(c);
  { sluice::stream sink = std::move(gone); }
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)r.ready(); }));
}

TEST(Lifetimes, LIFE_2__a_reference_to_a_destroyed_stream_throws_invalid_handle) {
  const sluice::device dev{0};
  std::optional<sluice::stream> s;
  s.emplace(dev);
  const sluice::stream_ref r = *s;
  s.reset();
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)r.ready(); }));
  // A new stream may reuse the destroyed one's storage: the old reference
  // still must not reach it.
  std::vector<sluice::stream> fresh;
  fresh.reserve(4);
  for (int i = 0; i < 4; ++i) fresh.emplace_back(dev);
  for (const auto& f : fresh) EXPECT_NE(r, sluice::stream_ref{f});
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { r.host_func([] {}); }));
  for (auto& f : fresh) EXPECT_TRUE(f.ready()) << "the stale reference enqueued onto a new stream";
}

TEST(Lifetimes, LIFE_2__a_moved_from_event_is_empty_and_throws_invalid_handle) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event a{dev, sluice::event_options{true, false}};
  a.record(s);
  s.synchronize();
  sluice::event b{std::move(a)};
  EXPECT_TRUE(b.ready());

  sluice::event timed{dev, sluice::event_options{true, false}};
  timed.record(s);
  s.synchronize();
  // NOLINTBEGIN(bugprone-use-after-move)
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.ready(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.synchronize(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.device(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.record(s); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { s.wait(a); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)sluice::elapsed(a, timed); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)sluice::elapsed(timed, a); }));
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(s.ready()) << "a rejected call left work on the stream";
  EXPECT_GE(sluice::elapsed(b, timed).count(), 0.0) << "the moved-to event keeps the record";

  a = sluice::event{dev};
  EXPECT_TRUE(a.ready());
}

TEST(Lifetimes, LIFE_2__moved_from_buffers_are_empty) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<std::uint32_t> a{dev, 256};
  std::uint32_t* const address = a.data();
  sluice::device_buffer<std::uint32_t> b{std::move(a)};
  EXPECT_EQ(b.data(), address);
  EXPECT_EQ(b.size(), 256u);
  // NOLINTBEGIN(bugprone-use-after-move)
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { (void)a.device(); }));
  EXPECT_TRUE(throws_code(errc::invalid_handle, [&] { a.record_stream(s); }));
  // NOLINTEND(bugprone-use-after-move)

  sluice::device_buffer<std::uint32_t> ordered{s, 64};
  sluice::device_buffer<std::uint32_t> ordered_moved = std::move(ordered);
  EXPECT_EQ(ordered.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  b = std::move(ordered_moved);        // frees b's old memory, takes the stream-ordered one
  EXPECT_EQ(b.size(), 64u);
  sluice::fill(s, b.data(), 0, b.size_bytes());
  s.synchronize();

  sluice::pinned_buffer<byte> p{32};
  sluice::pinned_buffer<byte> q{std::move(p)};
  EXPECT_EQ(p.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(p.size(), 0u);       // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(q.size(), 32u);
}  // all destroyed safely, moved-from ones included

TEST(Lifetimes, LIFE_3__handles_cannot_be_built_from_zero_or_nullptr) {
  // The static_asserts at the top of this file are the test; this records it
  // for the runner, and shows a stream_ref can be built from a stream.
  const sluice::device dev{0};
  sluice::stream s{dev};
  const sluice::stream_ref r = s;
  EXPECT_EQ(r, sluice::stream_ref{s});
  EXPECT_EQ(r.device(), dev);
}

}  // namespace
}  // namespace sluice::conformance
