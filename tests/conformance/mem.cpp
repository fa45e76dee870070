// MEM: memory, copies and flags (docs/semantics.md, MEM-1 .. MEM-6).
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

//! Allocates and fills buffers of n bytes with `value` until `count` exist:
//! memory freed too early is likely handed out again and overwritten here.
void reuse_memory(sluice::device d, std::size_t n, int count, byte value) {
  std::vector<sluice::device_buffer<byte>> buffers;
  sluice::stream s{d};
  for (int i = 0; i < count; ++i) {
    buffers.emplace_back(d, n);
    sluice::fill(s, buffers.back().data(), value, n);
  }
  s.synchronize();
}

TEST(Memory, MEM_1__copy_and_fill_are_ordered_on_their_stream) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 512 * kib;
  sluice::pinned_buffer<byte> in{n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  write_pattern(in.data(), n, 7);
  sluice::device_buffer<byte> d{dev, n};

  gate g{s};
  sluice::copy(s, d.data(), in.data(), n);
  sluice::fill(s, d.data() + n / 4, 0xEE, n / 2);
  sluice::copy(s, out.data(), d.data(), n);
  EXPECT_TRUE(stays_false([&] { return s.ready() || out[0] != 0 || out[n - 1] != 0; }));
  g.release();
  s.synchronize();

  EXPECT_EQ(first_pattern_mismatch(out.data(), n / 4, 7), n / 4);
  EXPECT_EQ(first_byte_not(out.data() + n / 4, n / 2, 0xEE), n / 2);
  for (std::size_t i = 3 * n / 4; i < n; ++i) ASSERT_EQ(out[i], pattern_byte(i, 7)) << "byte " << i;
}

TEST(Memory, MEM_1__zero_bytes_is_a_no_op) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 4 * kib;
  sluice::device_buffer<byte> d = filled_device_bytes(dev, n, 0x11);
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0x33);

  sluice::copy(s, nullptr, nullptr, 0);
  sluice::fill(s, nullptr, 0x22, 0);
  sluice::copy(s, d.data(), p.data(), 0);
  sluice::fill(s, d.data(), 0x22, 0);
  sluice::copy(s, p.data(), p.data(), 0);  // "overlapping", but empty
  sluice::fill(s, d.data() + n, 0x22, 0);  // one past the end, but empty
  EXPECT_TRUE(s.ready()) << "a zero-byte copy or fill left work on an idle stream";

  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::copy(s, d.data(), p.data(), 0);
    sluice::fill(s, d.data(), 0x22, 0);
  }));
  g.release();
  s.synchronize();
  const std::vector<byte> after = read_back(d);
  EXPECT_EQ(first_byte_not(after.data(), n, 0x11), n);
}

TEST(Memory, MEM_1__a_null_pointer_with_a_size_is_rejected) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::pinned_buffer<byte> p{64};
  sluice::device_buffer<byte> d{dev, 64};

  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::copy(s, nullptr, p.data(), 16); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data(), nullptr, 16); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::fill(s, nullptr, 1, 16); }));
  EXPECT_TRUE(s.ready()) << "a rejected call left work on an idle stream";

  const auto e = error_of([&] { sluice::fill(s, nullptr, 1, 16); });
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(contains(e->what(), "fill") || contains(e->api(), "fill")) << e->what();
  const auto c = error_of([&] { sluice::copy(s, nullptr, p.data(), 16); });
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(contains(c->what(), "copy") || contains(c->api(), "copy")) << c->what();
}

// Overlapping ranges are rejected, on device and pinned memory, and the
// rejected call enqueued nothing: the stream was held, the data is unchanged.
TEST(Memory, MEM_1__overlapping_ranges_are_rejected) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 4 * kib;
  sluice::device_buffer<byte> d = patterned_device_bytes(dev, n, 3);
  sluice::pinned_buffer<byte> p{n};
  write_pattern(p.data(), n, 5);

  gate g{s};
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data(), d.data() + 8, 64); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data() + 8, d.data(), 64); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data(), d.data(), 64); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, p.data() + 1, p.data(), 16); }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(p.data(), n, 5), n);
  const std::vector<byte> after = read_back(d);
  EXPECT_EQ(first_pattern_mismatch(after.data(), n, 3), n);

  // Adjacent ranges do not overlap.
  sluice::copy(s, p.data(), p.data() + 16, 16);
  sluice::copy(s, d.data() + 64, d.data(), 64);
  s.synchronize();
}

// copy stays on its stream's device: each side is host memory or memory of
// the stream's device. Device memory of another device is rejected before
// anything is enqueued (between devices the bytes go by copy_peer, which
// reports its path).
TEST(MemoryMultiDevice, MEM_1__copy_with_memory_of_another_device_is_rejected) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device a{0}, b{1};
  constexpr std::size_t n = 4 * kib;
  sluice::device_buffer<byte> on_a = patterned_device_bytes(a, n, 21);
  sluice::device_buffer<byte> on_b = patterned_device_bytes(b, n, 22);
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);
  for (const sluice::device on : {a, b}) {
    sluice::stream s{on};
    gate g{s};
    EXPECT_TRUE(throws_code(errc::invalid_argument,
                            [&] { sluice::copy(s, on_b.data(), on_a.data(), n); }));
    EXPECT_TRUE(throws_code(errc::invalid_argument,
                            [&] { sluice::copy(s, on_a.data() + 16, on_b.data(), 64); }));
    g.release();
    s.synchronize();
  }
  sluice::stream s{a};
  EXPECT_TRUE(throws_code(errc::invalid_argument,
                          [&] { sluice::copy(s, p.data(), on_b.data(), n); }));
  EXPECT_TRUE(throws_code(errc::invalid_argument,
                          [&] { sluice::copy(s, on_b.data(), p.data(), n); }));
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(read_back(on_b).data(), n, 22), n) << "a rejected copy wrote";
  EXPECT_EQ(first_byte_not(p.data(), n, 0), n) << "a rejected copy wrote";
  // Its own device's memory, to pinned memory: a copy.
  sluice::copy(s, p.data(), on_a.data(), n);
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(p.data(), n, 21), n);
}

TEST(Memory, MEM_1__a_range_past_the_end_of_an_allocation_is_rejected) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 4 * kib;
  sluice::device_buffer<byte> d = patterned_device_bytes(dev, n, 9);
  sluice::pinned_buffer<byte> small = filled_pinned_bytes(n, 0x44);
  sluice::pinned_buffer<byte> large = filled_pinned_bytes(2 * n, 0x55);

  gate g{s};
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::fill(s, d.data() + n - 4, 0, 8); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, d.data(), large.data(), n + 1); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, large.data(), d.data() + 1, n); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::copy(s, small.data() + 1, d.data(), n); }));
  EXPECT_TRUE(
      throws_code(errc::invalid_argument, [&] { sluice::fill(s, small.data(), 0, n + 1); }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(small.data(), n, 0x44), n) << "a rejected call wrote pinned memory";
  EXPECT_EQ(first_byte_not(large.data(), 2 * n, 0x55), 2 * n);
  std::vector<byte> after = read_back(d);
  EXPECT_EQ(first_pattern_mismatch(after.data(), n, 9), n) << "a rejected call wrote device memory";

  // Ranges that end exactly at the end are fine.
  sluice::fill(s, d.data() + n - 8, 0x66, 8);
  sluice::copy(s, small.data() + n - 8, d.data() + n - 8, 8);
  s.synchronize();
  EXPECT_EQ(first_byte_not(small.data() + n - 8, 8, 0x66), std::size_t{8});
}

// Every direction between pageable, pinned and device memory, bit-exact.
TEST(Memory, MEM_1__copies_in_every_direction) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 96 * kib + 13;  // not a multiple of any transfer unit
  std::vector<byte> pageable_in(n), pageable_out(n, 0), pageable_last(n, 0);
  write_pattern(pageable_in.data(), n, 21);
  sluice::device_buffer<byte> a{dev, n}, b{dev, n};
  sluice::pinned_buffer<byte> pinned = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> pinned_last = filled_pinned_bytes(n, 0);

  sluice::copy(s, a.data(), pageable_in.data(), n);               // pageable -> device
  sluice::copy(s, b.data(), a.data(), n);                         // device -> device
  sluice::copy(s, pinned.data(), b.data(), n);                    // device -> pinned
  sluice::copy(s, pinned_last.data(), pinned.data(), n);          // pinned -> pinned
  sluice::copy(s, pageable_out.data(), pinned_last.data(), n);    // pinned -> pageable
  sluice::copy(s, pageable_last.data(), pageable_out.data(), n);  // pageable -> pageable
  sluice::fill(s, a.data(), 0, n);
  sluice::copy(s, a.data(), pinned.data(), n);            // pinned -> device
  sluice::copy(s, pinned.data(), pageable_in.data(), n);  // pageable -> pinned
  s.synchronize();

  EXPECT_EQ(first_pattern_mismatch(pageable_last.data(), n, 21), n);
  EXPECT_EQ(first_pattern_mismatch(pinned.data(), n, 21), n);
  const std::vector<byte> device_copy = read_back(a);
  EXPECT_EQ(first_pattern_mismatch(device_copy.data(), n, 21), n);
  std::vector<byte> device_to_pageable(n, 0);
  sluice::copy(s, device_to_pageable.data(), b.data(), n);  // device -> pageable
  EXPECT_EQ(first_pattern_mismatch(device_to_pageable.data(), n, 21), n);
}

TEST(Memory, MEM_2__pinned_device_copies_never_block_the_caller) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 16 * mib;
  sluice::pinned_buffer<byte> in{n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  write_pattern(in.data(), n, 11);
  sluice::device_buffer<byte> d{dev, n};

  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::copy(s, d.data(), in.data(), n); }))
      << "pinned -> device blocked";
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::copy(s, out.data(), d.data(), n); }))
      << "device -> pinned blocked";
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::fill(s, d.data(), 0, n); })) << "fill blocked";
  EXPECT_FALSE(s.ready());
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(out.data(), n, 11), n);
}

// Pinned to pinned: CUDA and HIP copy host memory to host memory on the
// calling thread once the stream has drained, so a held stream would hold the
// caller (seen on 2x H200, 2026-11-23). sluice orders it on the stream instead.
TEST(Memory, MEM_2__copies_between_pinned_buffers_never_block_and_stay_ordered) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 1 * mib + 3;
  sluice::pinned_buffer<byte> a{n};
  sluice::pinned_buffer<byte> b = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> c = filled_pinned_bytes(n, 0);
  write_pattern(a.data(), n, 13);
  sluice::device_buffer<byte> d{dev, n};
  std::atomic<std::size_t> seen{0};

  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::copy(s, b.data(), a.data(), n); }))
      << "pinned -> pinned blocked";
  // Ordered both ways: device work after it reads what it wrote, and a host
  // function after it sees the data.
  sluice::copy(s, d.data(), b.data(), n);
  EXPECT_TRUE(returns_while_held(g, [&] { sluice::copy(s, c.data(), d.data(), n); }));
  s.host_func([&] { seen = first_pattern_mismatch(b.data(), n, 13); });
  EXPECT_TRUE(stays_false([&] { return s.ready() || b[0] != 0; }));
  g.release();
  s.synchronize();
  EXPECT_EQ(seen.load(), n);
  EXPECT_EQ(first_pattern_mismatch(c.data(), n, 13), n);
}

// The same while the stream is held by a host function that has not returned
// (a different way of parking a stream than wait_value).
TEST(Memory, MEM_2__copies_behind_a_running_host_function_do_not_block) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 1 * mib;
  sluice::pinned_buffer<byte> in{n};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  write_pattern(in.data(), n, 12);
  sluice::device_buffer<byte> d{dev, n};
  host_latch latch;
  s.host_func(latch.waiter());
  ASSERT_TRUE(eventually([&] { return latch.entered() == 1; }));

  EXPECT_TRUE(returns_before_unblocked(
      [&] {
        for (int i = 0; i < 16; ++i) {
          sluice::copy(s, d.data(), in.data(), n);
          sluice::copy(s, out.data(), d.data(), n);
        }
      },
      [&] { latch.open(); }))
      << "pinned <-> device copies blocked behind a running host function";
  EXPECT_EQ(out[0], 0) << "a copy ran before the host function returned";
  latch.open();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(out.data(), n, 12), n);
}

// A copy into pageable memory returns only once the data is there: with the
// preceding work held, it blocks until the release.
TEST(Memory, MEM_3__a_pageable_destination_holds_the_data_on_return) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> d{dev, n};
  std::vector<byte> dst(n, 0);

  gate g{s};
  sluice::fill(s, d.data(), 0x7E, n);
  EXPECT_TRUE(blocks_until_released(g, [&] { sluice::copy(s, dst.data(), d.data(), n); }));
  EXPECT_EQ(first_byte_not(dst.data(), n, 0x7E), n) << "the call returned before the data arrived";

  // Without a gate, right behind other work: no synchronize() before the check.
  sluice::fill(s, d.data(), 0x7F, n);
  std::vector<byte> second(n, 0);
  sluice::copy(s, second.data(), d.data(), n);
  EXPECT_EQ(first_byte_not(second.data(), n, 0x7F), n);
}

// A pageable source may be overwritten and freed as soon as the call returns,
// even with a backlog in front of the copy.
TEST(Memory, MEM_3__a_pageable_source_may_be_reused_on_return) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 256 * kib;
  sluice::device_buffer<byte> backlog{dev, 8 * mib};
  sluice::device_buffer<byte> d{dev, n};
  for (int i = 0; i < 8; ++i) sluice::fill(s, backlog.data(), static_cast<byte>(i), backlog.size());

  auto src = std::make_unique<std::vector<byte>>(n);
  write_pattern(src->data(), n, 13);
  sluice::copy(s, d.data(), src->data(), n);
  std::fill(src->begin(), src->end(), byte{0x99});
  src.reset();  // freed: a copy that still reads it reads freed memory
  s.synchronize();
  const std::vector<byte> after = read_back(d);
  EXPECT_EQ(first_pattern_mismatch(after.data(), n, 13), n);
}

TEST(Memory, MEM_4__a_stream_ordered_buffer_is_usable_by_later_work_and_freed_in_order) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t count = 64 * kib;
  sluice::pinned_buffer<std::uint32_t> out{count};
  std::fill(out.begin(), out.end(), 0u);

  gate g{s};
  std::optional<sluice::device_buffer<std::uint32_t>> b;
  EXPECT_TRUE(returns_while_held(g, [&] { b.emplace(s, count); }))
      << "a stream-ordered allocation blocked";
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->size(), count);
  EXPECT_EQ(b->device(), dev);
  sluice::fill(s, b->data(), 0xAB, b->size_bytes());
  sluice::copy(s, out.data(), b->data(), b->size_bytes());
  EXPECT_TRUE(returns_while_held(g, [&] { b.reset(); })) << "a stream-ordered free blocked";
  reuse_memory(dev, count * sizeof(std::uint32_t), 4, 0xCD);
  EXPECT_TRUE(stays_false([&] { return s.ready(); }));
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), out.size_bytes(), 0xAB), out.size_bytes())
      << "the buffer was freed before the work enqueued before its destruction";
}

// Another stream uses the stream-ordered buffer after waiting on an event
// recorded after the allocation and the writes.
TEST(Memory, MEM_4__another_stream_uses_it_after_waiting_on_an_event) {
  const sluice::device dev{0};
  sluice::stream owner{dev}, user{dev};
  constexpr std::size_t n = 128 * kib;
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  sluice::event allocated{dev}, used{dev};

  gate g{owner};
  {
    sluice::device_buffer<byte> b{owner, n};
    sluice::fill(owner, b.data(), 0x3E, n);
    allocated.record(owner);
    user.wait(allocated);
    sluice::copy(user, out.data(), b.data(), n);
    used.record(user);
    owner.wait(used);  // the free (stream-ordered on owner) follows the user's copy
  }
  EXPECT_TRUE(stays_false([&] { return user.ready(); }));
  g.release();
  user.synchronize();
  owner.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x3E), n);
}

// Memory of device_buffer(d, n) is released once the work enqueued on d before
// the destruction completed; the destructor does not wait for it.
TEST(Memory, MEM_4__freeing_a_synchronous_allocation_does_not_block) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  std::optional<sluice::device_buffer<byte>> b;
  b.emplace(filled_device_bytes(dev, n, 0x5C));

  gate g{s};
  sluice::copy(s, out.data(), b->data(), n);
  EXPECT_TRUE(returns_while_held(g, [&] { b.reset(); })) << "device_buffer's destructor blocked";
  reuse_memory(dev, n, 4, 0xCD);
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x5C), n)
      << "the memory was reused before the work enqueued before its destruction completed";
}

TEST(Memory, MEM_5__wait_value_holds_until_the_flag_reaches_the_value) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::flag f{0};
  sluice::flag done{0};
  s.wait_value(f, 3);
  s.write_value(done, 1);

  f.store(1);
  EXPECT_TRUE(stays_false([&] { return done.load() != 0; })) << "released at 1 < 3";
  f.store(2);
  EXPECT_TRUE(stays_false([&] { return done.load() != 0; })) << "released at 2 < 3";
  f.store(3);
  EXPECT_TRUE(eventually([&] { return done.load() == 1; })) << "not released at 3";
  s.synchronize();
}

TEST(Memory, MEM_5__wait_value_compares_greater_or_equal_unsigned) {
  const sluice::device dev{0};
  sluice::stream above{dev}, satisfied{dev}, zero{dev}, high_bit{dev}, maximum{dev};
  sluice::flag f{0};
  sluice::flag five{5};
  sluice::flag top{0x80000000u};
  above.wait_value(f, 3);
  satisfied.wait_value(five, 5);
  zero.wait_value(f, 0);
  high_bit.wait_value(top, 1);  // 0x80000000 >= 1 unsigned (it is negative as a signed value)
  maximum.wait_value(top, 0xFFFFFFFFu);
  for (auto* s : {&above, &satisfied, &zero, &high_bit, &maximum}) s->host_func([] {});

  EXPECT_TRUE(eventually([&] { return satisfied.ready() && zero.ready(); }))
      << "a wait whose value was reached already held the stream";
  EXPECT_TRUE(eventually([&] { return high_bit.ready(); })) << "the comparison is not unsigned";
  EXPECT_TRUE(stays_false([&] { return above.ready() || maximum.ready(); }));
  f.store(10);  // above the value: releases
  EXPECT_TRUE(eventually([&] { return above.ready(); }));
  EXPECT_FALSE(maximum.ready());
  top.store(0xFFFFFFFFu);
  EXPECT_TRUE(eventually([&] { return maximum.ready(); }));
}

TEST(Memory, MEM_5__write_value_stores_after_the_work_before_it) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::flag f{5};
  EXPECT_EQ(f.load(), 5u);
  constexpr std::size_t n = 1 * mib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0);

  gate g{s};
  sluice::fill(s, d.data(), 0x2B, n);
  sluice::copy(s, p.data(), d.data(), n);
  s.write_value(f, 9);
  EXPECT_TRUE(stays_false([&] { return f.load() != 5; }));
  g.release();
  ASSERT_TRUE(eventually([&] { return f.load() == 9; }));
  // The flag's store is a release: the copy before it is visible once 9 is seen.
  EXPECT_EQ(first_byte_not(p.data(), n, 0x2B), n);
  s.synchronize();
  f.store(1);  // a later host store is seen by the host too
  EXPECT_EQ(f.load(), 1u);
}

// The classic producer / consumer hand-off through a flag, and one flag
// releasing several waiting streams at once.
TEST(Memory, MEM_5__write_value_on_one_stream_releases_wait_value_on_others) {
  const sluice::device dev{0};
  sluice::stream producer{dev}, first{dev}, second{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> d{dev, n};
  sluice::pinned_buffer<byte> out1 = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> out2 = filled_pinned_bytes(n, 0);
  sluice::flag ready_flag{0};

  gate g{producer};
  sluice::fill(producer, d.data(), 0x61, n);
  producer.write_value(ready_flag, 1);
  first.wait_value(ready_flag, 1);
  sluice::copy(first, out1.data(), d.data(), n);
  second.wait_value(ready_flag, 1);
  sluice::copy(second, out2.data(), d.data(), n);

  EXPECT_TRUE(stays_false([&] { return first.ready() || second.ready(); }));
  g.release();
  first.synchronize();
  second.synchronize();
  EXPECT_EQ(first_byte_not(out1.data(), n, 0x61), n);
  EXPECT_EQ(first_byte_not(out2.data(), n, 0x61), n);
  producer.synchronize();
}

// The buffer is read on a held stream marked with record_stream, then
// destroyed; memory freed early would be reused and overwritten meanwhile.
TEST(Memory, MEM_6__record_stream_delays_the_free_of_a_synchronous_allocation) {
  const sluice::device dev{0};
  sluice::stream user{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  std::optional<sluice::device_buffer<byte>> b;
  b.emplace(filled_device_bytes(dev, n, 0x93));

  gate g{user};
  sluice::copy(user, out.data(), b->data(), n);
  b->record_stream(user);
  EXPECT_TRUE(returns_while_held(g, [&] { b.reset(); }));
  reuse_memory(dev, n, 4, 0xCD);
  g.release();
  user.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x93), n) << "freed before the recorded stream used it";
}

TEST(Memory, MEM_6__record_stream_delays_the_free_of_a_stream_ordered_allocation) {
  const sluice::device dev{0};
  sluice::stream owner{dev}, user1{dev}, user2{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::pinned_buffer<byte> out1 = filled_pinned_bytes(n, 0);
  sluice::pinned_buffer<byte> out2 = filled_pinned_bytes(n, 0);
  std::optional<sluice::device_buffer<byte>> b;
  b.emplace(owner, n);
  sluice::fill(owner, b->data(), 0x94, n);
  owner.synchronize();

  gate g1{user1}, g2{user2};
  sluice::copy(user1, out1.data(), b->data(), n);
  sluice::copy(user2, out2.data(), b->data(), n);
  b->record_stream(user1);
  b->record_stream(user2);
  b->record_stream(owner);  // its own stream: harmless
  EXPECT_TRUE(returns_while_held(g1, [&] { b.reset(); }));
  owner.synchronize();  // the owner's part of the free is done; the users' is not
  reuse_memory(dev, n, 4, 0xCD);
  g1.release();
  user1.synchronize();
  EXPECT_EQ(first_byte_not(out1.data(), n, 0x94), n);
  reuse_memory(dev, n, 4, 0xCE);
  g2.release();
  user2.synchronize();
  EXPECT_EQ(first_byte_not(out2.data(), n, 0x94), n)
      << "freed once the first recorded stream passed, not all of them";
}

// Without record_stream, the caller orders the other stream's use before the
// destruction with an event (the documented alternative).
TEST(Memory, MEM_6__without_record_stream_an_event_orders_the_free) {
  const sluice::device dev{0};
  sluice::stream owner{dev}, user{dev};
  constexpr std::size_t n = 64 * kib;
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(n, 0);
  sluice::event used{dev};
  std::optional<sluice::device_buffer<byte>> b;
  b.emplace(owner, n);
  sluice::fill(owner, b->data(), 0x95, n);
  owner.synchronize();

  gate g{user};
  sluice::copy(user, out.data(), b->data(), n);
  used.record(user);
  owner.wait(used);
  b.reset();  // stream-ordered on owner, behind the wait
  reuse_memory(dev, n, 4, 0xCD);
  g.release();
  user.synchronize();
  owner.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), n, 0x95), n);
}

}  // namespace
}  // namespace sluice::conformance
