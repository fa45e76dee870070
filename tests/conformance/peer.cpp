// PEER: peer access and peer copies (docs/semantics.md, PEER-1 .. PEER-4).
//
// Peer access, once enabled, stays enabled for the process. Tests that enable
// it use devices 0 and 1 only; the copy tests "without peer access" use the
// last two devices, which nothing enables when there are four or more (the
// host multi-device run has four). With two devices the copy tests still check
// that the reported path agrees with peer_access_enabled().
#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::conformance {
namespace {

//! Copies a pattern between a and b both ways, ordered on streams of either
//! device, at aligned and odd offsets; checks the data and the reported path.
void copy_both_ways_and_check(sluice::device a, sluice::device b) {
  constexpr std::size_t n = 256 * kib + 7;
  const sluice::device ends[2] = {a, b};
  unsigned seed = 40;
  for (int direction = 0; direction < 2; ++direction) {
    const sluice::device src_dev = ends[direction], dst_dev = ends[1 - direction];
    for (const sluice::device on : {src_dev, dst_dev}) {
      for (const std::size_t offset : {std::size_t{0}, std::size_t{3}}) {
        ++seed;
        sluice::device_buffer<byte> src = patterned_device_bytes(src_dev, n, seed);
        sluice::device_buffer<byte> dst = filled_device_bytes(dst_dev, n, 0);
        sluice::stream s{on};
        const std::size_t bytes = n - 2 * offset;
        const sluice::copy_path path =
            sluice::copy_peer(s, dst.data() + offset, dst_dev, src.data() + offset, src_dev, bytes);
        const sluice::device other = on == src_dev ? dst_dev : src_dev;
        EXPECT_TRUE(path_is_consistent(path, on, other))
            << src_dev.id() << " -> " << dst_dev.id() << " on a stream of " << on.id();
        s.synchronize();
        const std::vector<byte> got = read_back(dst);
        const std::vector<byte> want = read_back(src);
        EXPECT_EQ(first_byte_not(got.data(), offset, 0), offset) << "wrote before the range";
        EXPECT_TRUE(std::equal(got.begin() + static_cast<std::ptrdiff_t>(offset),
                               got.begin() + static_cast<std::ptrdiff_t>(offset + bytes),
                               want.begin() + static_cast<std::ptrdiff_t>(offset)))
            << src_dev.id() << " -> " << dst_dev.id() << " on a stream of " << on.id()
            << ", offset " << offset << ": data differ";
        EXPECT_EQ(first_byte_not(got.data() + offset + bytes, offset, 0), offset)
            << "wrote past the range";
      }
    }
  }
}

//! A halo-exchange-like batch: 64 pieces of different sizes (odd ones too)
//! gathered from shuffled places of a source on `from` into a destination on
//! `to`, ordered on a stream of `on`; checks every byte, the gaps left
//! untouched, and the path, which it returns. `misalign` shifts every source
//! piece by that many bytes (1: no piece is 16-byte aligned).
sluice::copy_path batch_and_check(sluice::device from, sluice::device to, sluice::device on,
                                  unsigned seed, std::size_t misalign = 0) {
  constexpr std::size_t pieces = 64, slot = 20 * kib;
  constexpr std::size_t n = pieces * slot;
  sluice::device_buffer<byte> src = patterned_device_bytes(from, n + misalign, seed);
  sluice::device_buffer<byte> dst = filled_device_bytes(to, n, 0);
  std::vector<sluice::peer_piece> batch;
  std::vector<std::size_t> want_from(pieces), sizes(pieces);
  for (std::size_t i = 0; i < pieces; ++i) {
    sizes[i] = 16 * kib + (i * 37) % 4096 + (i % 3);  // 16 KiB and a little more, odd ones too
    want_from[i] = ((i * 29 + 7) % pieces) * slot;    // a permutation of the slots
    batch.push_back({dst.data() + i * slot, src.data() + misalign + want_from[i], sizes[i]});
  }
  batch.push_back({dst.data(), src.data(), 0});  // a zero-byte piece is allowed and ignored
  sluice::stream s{on};
  const sluice::copy_path path = sluice::copy_peer_batch(s, to, from, batch);
  const sluice::device other = on == from ? to : from;
  EXPECT_TRUE(path_is_consistent(path, on, other));
  s.synchronize();
  const std::vector<byte> got = read_back(dst);
  const std::vector<byte> want = read_back(src);
  for (std::size_t i = 0; i < pieces; ++i) {
    EXPECT_TRUE(std::equal(got.begin() + static_cast<std::ptrdiff_t>(i * slot),
                           got.begin() + static_cast<std::ptrdiff_t>(i * slot + sizes[i]),
                           want.begin() + static_cast<std::ptrdiff_t>(misalign + want_from[i])))
        << "piece " << i << ", " << from.id() << " -> " << to.id() << " on a stream of " << on.id();
    EXPECT_EQ(first_byte_not(got.data() + i * slot + sizes[i], slot - sizes[i], 0), slot - sizes[i])
        << "wrote past piece " << i;
  }
  return path;
}

TEST(Peer, PEER_1__enabling_peer_access_to_itself_is_invalid) {
  const sluice::device dev{0};
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::enable_peer_access(dev, dev); }));
  // Not sticky, no stale error left behind: the next call works.
  sluice::stream s{dev};
  s.host_func([] {});
  s.synchronize();
}

// Copy tests "without" peer access come first (see the file comment).
TEST(PeerMultiDevice, PEER_2__copy_peer_without_peer_access_is_staged_and_bit_exact) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  copy_both_ways_and_check(sluice::device{count - 2}, sluice::device{count - 1});
}

// Batched, without peer access (the last two devices, as above).
TEST(PeerMultiDevice, PEER_2__copy_peer_batch_without_peer_access_copies_every_piece) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device a{count - 2}, b{count - 1};
  batch_and_check(a, b, a, 51);
  batch_and_check(b, a, a, 52);
}

// Large copies without peer access: more data than a staging pipeline holds
// at once (sluice's GPU backend moves 4 slots of 8 MiB), both directions, on
// a stream of either device, two copies back to back on one stream (the
// second refills the slots the first is emptying). Work ordered after them by
// an event, on the other device, sees all of both.
TEST(PeerMultiDevice, PEER_2__large_staged_copies_are_bit_exact_and_ordered) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device ends[2] = {sluice::device{count - 2}, sluice::device{count - 1}};
  constexpr std::size_t n = 40 * kib * kib + 5, offset = 3, bytes = n - 2 * offset;
  unsigned seed = 90;
  for (int direction = 0; direction < 2; ++direction) {
    const sluice::device src_dev = ends[direction], dst_dev = ends[1 - direction];
    for (const sluice::device on : {src_dev, dst_dev}) {
      const std::string where = std::to_string(src_dev.id()) + " -> " +
                                std::to_string(dst_dev.id()) + " on a stream of device " +
                                std::to_string(on.id());
      const sluice::device other = on == src_dev ? dst_dev : src_dev;
      sluice::stream s{on}, reader{dst_dev};
      sluice::event copied{on};
      std::vector<sluice::device_buffer<byte>> srcs, dsts;
      for (int k = 0; k < 2; ++k) {
        srcs.push_back(patterned_device_bytes(src_dev, n, ++seed));
        dsts.push_back(filled_device_bytes(dst_dev, n, 0));
      }
      for (int k = 0; k < 2; ++k)
        EXPECT_TRUE(path_is_consistent(sluice::copy_peer(s, dsts[k].data() + offset, dst_dev,
                                                         srcs[k].data() + offset, src_dev, bytes),
                                       on, other))
            << where;
      copied.record(s);
      reader.wait(copied);  // read on the destination's device, ordered only by the event
      for (int k = 0; k < 2; ++k) {
        sluice::pinned_buffer<byte> seen{n};
        sluice::copy(reader, seen.data(), dsts[k].data(), n);
        reader.synchronize();
        EXPECT_EQ(first_byte_not(seen.data(), offset, 0), offset) << where << ": wrote before";
        EXPECT_EQ(first_byte_not(seen.data() + n - offset, offset, 0), offset)
            << where << ": wrote past the range";
        const std::vector<byte> want = read_back(srcs[k]);
        std::size_t differ = offset;
        while (differ < offset + bytes && seen.data()[differ] == want[differ]) ++differ;
        EXPECT_EQ(differ, offset + bytes)
            << where << ", copy " << k + 1 << ": byte " << differ << " differs";
      }
      s.synchronize();
    }
  }
}

// A staged batch whose pieces are larger than a staging slot and cross the
// slots' boundaries, next to small ones.
TEST(PeerMultiDevice, PEER_2__a_large_staged_batch_copies_every_piece) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device a{count - 2}, b{count - 1};
  const std::vector<std::size_t> sizes = {3 * kib * kib + 1, 17, 9 * kib * kib + 3, 5 * kib,
                                          6 * kib * kib,     1,  8 * kib * kib,     12 * kib * kib};
  std::size_t n = 0;
  for (const std::size_t z : sizes) n += z;
  for (const sluice::device on : {a, b}) {
    sluice::device_buffer<byte> src = patterned_device_bytes(a, n, on == a ? 61 : 62);
    sluice::device_buffer<byte> dst = filled_device_bytes(b, n, 0);
    // Gathered in reverse: piece i goes where the pieces after it come from.
    std::vector<sluice::peer_piece> batch;
    std::vector<std::size_t> from, to;
    std::size_t at_src = 0, at_dst = n;
    for (const std::size_t z : sizes) {
      at_dst -= z;
      batch.push_back({dst.data() + at_dst, src.data() + at_src, z});
      from.push_back(at_src);
      to.push_back(at_dst);
      at_src += z;
    }
    sluice::stream s{on};
    EXPECT_TRUE(path_is_consistent(sluice::copy_peer_batch(s, b, a, batch), on, on == a ? b : a));
    s.synchronize();
    const std::vector<byte> got = read_back(dst);
    const std::vector<byte> want = read_back(src);
    for (std::size_t i = 0; i < sizes.size(); ++i)
      EXPECT_TRUE(std::equal(got.begin() + static_cast<std::ptrdiff_t>(to[i]),
                             got.begin() + static_cast<std::ptrdiff_t>(to[i] + sizes[i]),
                             want.begin() + static_cast<std::ptrdiff_t>(from[i])))
          << "piece " << i << " (" << sizes[i] << " bytes) on a stream of device " << on.id();
  }
}

TEST(PeerMultiDevice, PEER_1__enable_peer_access_is_idempotent) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  if (!sluice::link(d0, d1).peer_access_possible) {
    EXPECT_TRUE(
        throws_code(errc::peer_access_unavailable, [&] { sluice::enable_peer_access(d0, d1); }));
    EXPECT_FALSE(sluice::peer_access_enabled(d0, d1));
    return;
  }
  for (int i = 0; i < 3; ++i) {
    sluice::enable_peer_access(d0, d1);
    EXPECT_TRUE(sluice::peer_access_enabled(d0, d1)) << "after enabling " << i + 1 << " times";
  }
  // "Already enabled" left no stale error: calls on both devices succeed.
  for (const sluice::device d : {d0, d1}) {
    sluice::stream s{d};
    sluice::event e{d};
    e.record(s);
    e.synchronize();
    EXPECT_TRUE(s.ready());
  }
}

TEST(PeerMultiDevice, PEER_1__enable_peer_access_from_many_threads_at_once) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  const bool possible01 = sluice::link(d0, d1).peer_access_possible;
  const bool possible10 = sluice::link(d1, d0).peer_access_possible;
  constexpr int threads = 8;
  constexpr int rounds = 25;
  start_line start{threads};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  std::vector<std::string> failures(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      auto& failure = failures[static_cast<std::size_t>(t)];
      for (int r = 0; r < rounds && failure.empty(); ++r) {
        const bool forward = (t + r) % 2 == 0;
        const sluice::device from = forward ? d0 : d1, to = forward ? d1 : d0;
        const bool possible = forward ? possible01 : possible10;
        const auto e = error_of([&] { sluice::enable_peer_access(from, to); });
        if (possible && e) failure = std::string("enable_peer_access threw: ") + e->what();
        if (!possible && (!e || e->code() != errc::peer_access_unavailable))
          failure =
              "enable_peer_access of an impossible link did not throw peer_access_unavailable";
        if (possible && !sluice::peer_access_enabled(from, to))
          failure = "peer_access_enabled is false after enable_peer_access returned";
      }
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t)
    EXPECT_TRUE(failures[static_cast<std::size_t>(t)].empty())
        << "thread " << t << ": " << failures[static_cast<std::size_t>(t)];
  for (const sluice::device d : {d0, d1}) {
    sluice::stream s{d};
    s.host_func([] {});
    s.synchronize();
  }
}

TEST(Peer, PEER_2__copy_peer_within_one_device_is_local) {
  const sluice::device dev{0};
  copy_both_ways_and_check(dev, dev);
}

// Within one device a batch of small aligned pieces may run as sluice's SM
// copy kernel on the GPUs (local_sm); pieces that are not 16-byte aligned stay
// on the vendor's copy (local) everywhere.
TEST(Peer, PEER_2__copy_peer_batch_within_one_device_copies_every_piece) {
  const sluice::device dev{0};
  (void)batch_and_check(dev, dev, dev, 56);
  EXPECT_EQ(batch_and_check(dev, dev, dev, 57, 1), sluice::copy_path::local);
}

TEST(PeerMultiDevice, PEER_2__copy_peer_after_enabling_peer_access) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  for (const auto& [from, to] : {std::pair{d0, d1}, std::pair{d1, d0}}) {
    if (sluice::link(from, to).peer_access_possible) {
      sluice::enable_peer_access(from, to);
      EXPECT_TRUE(sluice::peer_access_enabled(from, to));
    }
  }
  copy_both_ways_and_check(d0, d1);
}

// Small copies over the link (the sizes where a GPU backend may use an SM copy
// kernel rather than a copy engine), at aligned and unaligned places, with
// tails that are not a multiple of 16 bytes: exact, nothing written around,
// both directions, on a stream of either device.
TEST(PeerMultiDevice, PEER_2__small_copies_after_enabling_peer_access_are_exact) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  for (const auto& [from, to] : {std::pair{d0, d1}, std::pair{d1, d0}})
    if (sluice::link(from, to).peer_access_possible) sluice::enable_peer_access(from, to);
  constexpr std::size_t n = 72 * kib;
  struct piece {
    std::size_t offset, bytes;
  };
  const piece pieces[] = {{0, 16},           {0, 1},         {16, 4 * kib},       {0, 4 * kib + 3},
                          {0, 64 * kib},     {16, 64 * kib}, {32, 64 * kib - 13}, {8, 64 * kib},
                          {3, 16 * kib + 5}, {256, 60 * kib}};
  unsigned seed = 300;
  for (const auto& [src_dev, dst_dev] : {std::pair{d0, d1}, std::pair{d1, d0}}) {
    for (const sluice::device on : {src_dev, dst_dev}) {
      sluice::stream s{on};
      const sluice::device other = on == src_dev ? dst_dev : src_dev;
      for (const piece& p : pieces) {
        ++seed;
        sluice::device_buffer<byte> src = patterned_device_bytes(src_dev, n, seed);
        sluice::device_buffer<byte> dst = filled_device_bytes(dst_dev, n, 0x5A);
        const std::string where = std::to_string(src_dev.id()) + " -> " +
                                  std::to_string(dst_dev.id()) + " on a stream of device " +
                                  std::to_string(on.id()) + ", " + std::to_string(p.bytes) +
                                  " bytes at offset " + std::to_string(p.offset);
        EXPECT_TRUE(path_is_consistent(sluice::copy_peer(s, dst.data() + p.offset, dst_dev,
                                                         src.data() + p.offset, src_dev, p.bytes),
                                       on, other))
            << where;
        s.synchronize();
        const std::vector<byte> got = read_back(dst);
        const std::vector<byte> want = read_back(src);
        EXPECT_EQ(first_byte_not(got.data(), p.offset, 0x5A), p.offset)
            << where << ": wrote before";
        const std::size_t end = p.offset + p.bytes;
        EXPECT_EQ(first_byte_not(got.data() + end, n - end, 0x5A), n - end)
            << where << ": wrote past";
        std::size_t differ = p.offset;
        while (differ < end && got[differ] == want[differ]) ++differ;
        EXPECT_EQ(differ, end) << where << ": byte " << differ << " differs";
      }
    }
  }
}

TEST(PeerMultiDevice, PEER_2__copy_peer_batch_after_enabling_peer_access) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  for (const auto& [from, to] : {std::pair{d0, d1}, std::pair{d1, d0}})
    if (sluice::link(from, to).peer_access_possible) sluice::enable_peer_access(from, to);
  batch_and_check(d0, d1, d0, 53);  // push
  batch_and_check(d0, d1, d1, 54);  // pull
  batch_and_check(d1, d0, d1, 55);
}

// Bad batches are refused before anything is enqueued, each with its reason.
TEST(PeerMultiDevice, PEER_2__a_bad_batch_is_rejected_and_enqueues_nothing) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> src = filled_device_bytes(d0, n, 0x10);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, n, 0x20);
  sluice::stream s{d0};
  byte* const d = dst.data();
  const byte* const from = src.data();
  const std::vector<std::pair<const char*, std::vector<sluice::peer_piece>>> bad = {
      {"two pieces write overlapping ranges", {{d, from, 4096}, {d + 4095, from + 8192, 16}}},
      {"a null destination", {{d, from, 64}, {nullptr, from, 64}}},
      {"a piece runs past the destination", {{d + n - 32, from, 64}}},
      {"a destination on the source's device", {{src.data() + 4096, from, 64}}},
  };
  for (const auto& [why, pieces] : bad) {
    EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
      (void)sluice::copy_peer_batch(s, d1, d0, pieces);
    })) << why;
  }
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer_batch(s, d1, d0, nullptr, 3);
  })) << "null pieces with a count";
  // On one device (path local) a piece may read where another writes: refused.
  byte* const on0 = src.data();
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer_batch(s, d0, d0,
                                  {{on0, on0 + 8192, 4096}, {on0 + 16384, on0 + 100, 64}});
  })) << "a piece reads where another writes";
  EXPECT_EQ(sluice::copy_peer_batch(s, d1, d0, nullptr, 0), sluice::peer_access_enabled(d0, d1)
                                                                ? sluice::copy_path::direct
                                                                : sluice::copy_path::staged)
      << "an empty batch is a no-op that reports its path";
  // Two pieces that read the same source range are fine (only writes conflict).
  (void)sluice::copy_peer_batch(s, d1, d0, {{d, from, 64}, {d + 64, from, 64}});
  s.synchronize();
  EXPECT_EQ(first_byte_not(read_back(src).data(), n, 0x10), n)
      << "a rejected batch wrote the source device";
  const std::vector<byte> after = read_back(dst);
  EXPECT_EQ(first_byte_not(after.data(), 128, 0x10), 128);
  EXPECT_EQ(first_byte_not(after.data() + 128, n - 128, 0x20), n - 128)
      << "a rejected batch wrote the destination";
}

// A batch is one operation of its stream: held, none of its pieces has run.
TEST(PeerMultiDevice, PEER_3__copy_peer_batch_is_ordered_on_its_own_stream) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 64 * kib;
  sluice::device_buffer<byte> src = filled_device_bytes(d0, n, 0);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, n, 0x01);
  sluice::stream s{d0}, reader{d1};
  sluice::pinned_buffer<byte> early = filled_pinned_bytes(n, 0);
  gate g{s};
  sluice::fill(s, src.data(), 0x5C, n);
  std::vector<sluice::peer_piece> halves = {{dst.data(), src.data(), n / 2},
                                            {dst.data() + n / 2, src.data() + n / 2, n / 2}};
  (void)sluice::copy_peer_batch(s, d1, d0, halves);
  sluice::copy(reader, early.data(), dst.data(), n);
  reader.synchronize();
  EXPECT_EQ(first_byte_not(early.data(), n, 0x01), n) << "a piece ran ahead of its stream";
  EXPECT_TRUE(stays_false([&] { return s.ready(); }));
  g.release();
  s.synchronize();
  const std::vector<byte> got = read_back(dst);
  EXPECT_EQ(first_byte_not(got.data(), n, 0x5C), n);
}

// A zero-byte copy enqueues nothing and reports the path it would have used.
TEST(PeerMultiDevice, PEER_2__a_zero_byte_copy_peer_reports_its_path) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device a{count - 2}, b{count - 1};
  sluice::stream s{a};
  sluice::device_buffer<byte> src = filled_device_bytes(a, 64, 0x10);
  sluice::device_buffer<byte> dst = filled_device_bytes(b, 64, 0x20);
  const sluice::copy_path path = sluice::copy_peer(s, dst.data(), b, src.data(), a, 0);
  EXPECT_TRUE(path_is_consistent(path, a, b));
  EXPECT_TRUE(s.ready());
  const std::vector<byte> after = read_back(dst);
  EXPECT_EQ(first_byte_not(after.data(), after.size(), 0x20), after.size());
  EXPECT_EQ(sluice::copy_peer(s, src.data(), a, src.data(), a, 0), sluice::copy_path::local);
}

TEST(PeerMultiDevice, PEER_2__a_stream_of_a_third_device_is_rejected) {
  SLUICE_REQUIRE_DEVICES(3);
  const sluice::device a{0}, b{1}, c{2};
  sluice::stream s{c};
  sluice::device_buffer<byte> src = filled_device_bytes(a, 64, 0x10);
  sluice::device_buffer<byte> dst = filled_device_bytes(b, 64, 0x20);
  EXPECT_TRUE(throws_code(errc::invalid_argument,
                          [&] { (void)sluice::copy_peer(s, dst.data(), b, src.data(), a, 64); }));
  EXPECT_TRUE(s.ready());
  const std::vector<byte> after = read_back(dst);
  EXPECT_EQ(first_byte_not(after.data(), after.size(), 0x20), after.size())
      << "the rejected copy wrote the destination";
}

// copy_peer waits for nothing but its own stream: held streams on both
// devices (one of them the source's producer) do not hold it.
TEST(PeerMultiDevice, PEER_3__copy_peer_waits_for_no_other_stream) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 128 * kib;
  sluice::device_buffer<byte> src = patterned_device_bytes(d0, n, 77);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, n, 0);
  sluice::device_buffer<byte> scratch0{d0, n}, scratch1{d1, n};
  sluice::stream held0{d0}, held1{d1};
  gate g{held0, held1};
  sluice::fill(held0, scratch0.data(), 1, n);
  sluice::fill(held1, scratch1.data(), 1, n);

  for (const sluice::device on : {d0, d1}) {
    sluice::stream s{on};
    (void)sluice::copy_peer(s, dst.data(), d1, src.data(), d0, n);
    EXPECT_TRUE(eventually([&] { return s.ready(); }))
        << "copy_peer on a stream of device " << on.id() << " waited for another stream";
  }
  EXPECT_FALSE(held0.ready() || held1.ready());
  g.release();
  held0.synchronize();
  held1.synchronize();
  const std::vector<byte> got = read_back(dst);
  EXPECT_EQ(first_pattern_mismatch(got.data(), n, 77), n);
}

// ... but it is ordered on its own stream: held, it has not run (another
// stream still reads the old destination), and a producer ordered by an event
// is seen.
TEST(PeerMultiDevice, PEER_3__copy_peer_is_ordered_on_its_own_stream) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 128 * kib;
  sluice::device_buffer<byte> src = filled_device_bytes(d0, n, 0);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, n, 0x01);
  sluice::stream producer{d0}, s{d1}, reader{d1};
  sluice::event produced{d0};
  sluice::pinned_buffer<byte> early = filled_pinned_bytes(n, 0);

  gate g{producer};
  sluice::fill(producer, src.data(), 0xC3, n);
  produced.record(producer);
  s.wait(produced);
  const sluice::copy_path path = sluice::copy_peer(s, dst.data(), d1, src.data(), d0, n);
  EXPECT_TRUE(path_is_consistent(path, d1, d0));

  sluice::copy(reader, early.data(), dst.data(), n);
  reader.synchronize();
  EXPECT_EQ(first_byte_not(early.data(), n, 0x01), n) << "copy_peer ran ahead of its stream";
  EXPECT_TRUE(stays_false([&] { return s.ready(); }));
  g.release();
  s.synchronize();
  const std::vector<byte> got = read_back(dst);
  EXPECT_EQ(first_byte_not(got.data(), n, 0xC3), n);
  producer.synchronize();
}

TEST(Peer, PEER_4__a_device_links_to_itself_as_same_device) {
  for (int id = 0; id < sluice::device_count(); ++id) {
    const sluice::device d{id};
    const sluice::link_info self = sluice::link(d, d);
    EXPECT_EQ(self.kind, sluice::link_kind::same_device) << "device " << id;
    EXPECT_GE(self.performance_rank, -1);
  }
}

TEST(PeerMultiDevice, PEER_4__links_between_devices_are_consistent) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      const sluice::link_info l = sluice::link(sluice::device{a}, sluice::device{b});
      EXPECT_NE(l.kind, sluice::link_kind::same_device) << a << " -> " << b;
      EXPECT_GE(l.performance_rank, -1) << a << " -> " << b;
      if (l.native_atomics) {
        EXPECT_TRUE(l.peer_access_possible) << a << " -> " << b << ": atomics without access";
      }
      if (sluice::backend() == sluice::backend_kind::host) {  // documented host topology
        EXPECT_EQ(l.kind, sluice::link_kind::host_memory);
        EXPECT_TRUE(l.peer_access_possible);
        EXPECT_TRUE(l.native_atomics);
        EXPECT_EQ(l.performance_rank, 0);
      }
      // The same answer every time.
      const sluice::link_info again = sluice::link(sluice::device{a}, sluice::device{b});
      EXPECT_EQ(again.kind, l.kind);
      EXPECT_EQ(again.peer_access_possible, l.peer_access_possible);
    }
  // peer_access_possible agrees with what enable_peer_access does (devices 0 and 1 only).
  const sluice::device d0{0}, d1{1};
  if (sluice::link(d0, d1).peer_access_possible) {
    sluice::enable_peer_access(d0, d1);
    EXPECT_TRUE(sluice::peer_access_enabled(d0, d1));
  } else {
    EXPECT_TRUE(
        throws_code(errc::peer_access_unavailable, [&] { sluice::enable_peer_access(d0, d1); }));
    EXPECT_FALSE(sluice::peer_access_enabled(d0, d1));
  }
}

}  // namespace
}  // namespace sluice::conformance
