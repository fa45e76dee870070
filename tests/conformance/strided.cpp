// Strided copies and registered host memory (docs/semantics.md, MEM-7, MEM-8,
// PEER-5). Every check compares the whole destination buffer with a copy made
// on the host byte by byte, so bytes between rows and planes that a backend
// wrote show up as well as missing or misplaced ones.
//
// The peer tests follow peer.cpp's convention: devices 0 and 1 get peer
// access, the last two devices (with four or more) never do.
#include "support.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::conformance {
namespace {

//! Where one end of a copy lives.
enum class memory { pageable, pinned, registered, device };
constexpr memory every_memory[] = {memory::pageable, memory::pinned, memory::registered,
                                   memory::device};

const char* name(memory m) {
  switch (m) {
    case memory::pageable: return "pageable";
    case memory::pinned: return "pinned";
    case memory::registered: return "registered";
    case memory::device: return "device";
  }
  return "?";
}

//! n bytes of one kind of memory, with contents set and read synchronously.
class buffer {
 public:
  buffer(memory kind, sluice::device d, std::size_t n) : kind_(kind), n_(n) {
    if (kind == memory::pinned) pinned_.emplace(n);
    if (kind == memory::device) device_.emplace(d, n);
    if (kind == memory::pageable || kind == memory::registered) host_.assign(n, 0);
    if (kind == memory::registered) registration_.emplace(host_.data(), n);
  }
  byte* data() {
    if (pinned_) return pinned_->data();
    if (device_) return device_->data();
    return host_.data();
  }
  void load(const std::vector<byte>& v) {
    if (!device_) {
      std::copy(v.begin(), v.end(), data());
      return;
    }
    sluice::pinned_buffer<byte> staging{n_};
    std::copy(v.begin(), v.end(), staging.data());
    sluice::stream s{device_->device()};
    sluice::copy(s, device_->data(), staging.data(), n_);
    s.synchronize();
  }
  std::vector<byte> contents() {
    if (device_) return read_back(*device_);
    return std::vector<byte>(data(), data() + n_);
  }
  memory kind() const { return kind_; }

 private:
  memory kind_;
  std::size_t n_;
  std::vector<byte> host_;
  std::optional<sluice::pinned_buffer<byte>> pinned_;
  std::optional<sluice::device_buffer<byte>> device_;
  std::optional<sluice::registered_host_memory> registration_;
};

//! One strided copy: its extent and both ends' layout (offsets from the buffers' starts).
struct layout {
  sluice::extent e;
  std::size_t dst_offset, dst_pitch, dst_rows;
  std::size_t src_offset, src_pitch, src_rows;
  std::size_t dst_bytes() const { return dst_offset + span(dst_pitch, dst_rows) + 64; }
  std::size_t src_bytes() const { return src_offset + span(src_pitch, src_rows) + 64; }
  std::size_t span(std::size_t pitch, std::size_t rows) const {
    return (e.depth - 1) * pitch * rows + (e.height - 1) * pitch + e.width_bytes;
  }
  sluice::pitched_ptr dst(byte* base) const { return {base + dst_offset, dst_pitch, dst_rows}; }
  sluice::const_pitched_ptr src(const byte* base) const {
    return {base + src_offset, src_pitch, src_rows};
  }
};

//! What `to` holds after the strided copy `l` from `from`, byte by byte.
std::vector<byte> expected(std::vector<byte> to, const std::vector<byte>& from, const layout& l) {
  for (std::size_t z = 0; z < l.e.depth; ++z)
    for (std::size_t y = 0; y < l.e.height; ++y)
      for (std::size_t x = 0; x < l.e.width_bytes; ++x)
        to[l.dst_offset + z * l.dst_pitch * l.dst_rows + y * l.dst_pitch + x] =
            from[l.src_offset + z * l.src_pitch * l.src_rows + y * l.src_pitch + x];
  return to;
}

//! The first byte where got and want differ, described; empty when equal.
std::string first_difference(const std::vector<byte>& got, const std::vector<byte>& want) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return "byte " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want[i]);
  return {};
}

std::vector<byte> pattern(std::size_t n, unsigned seed) {
  std::vector<byte> v(n);
  write_pattern(v.data(), n, seed);
  return v;
}

//! A 3-D copy (odd width, offsets, pitches; rows_per_plane above the height)
//! and a 2-D one.
const layout shapes[] = {
    {{13, 5, 3}, 5, 32, 6, 3, 24, 7},
    {{100, 9, 1}, 0, 128, 0, 1, 101, 0},
};

TEST(Memory, MEM_7__a_strided_copy_moves_exactly_its_extent_in_every_direction) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  unsigned seed = 70;
  for (const layout& l : shapes)
    for (const memory to : every_memory)
      for (const memory from : every_memory) {
        buffer dst{to, dev, l.dst_bytes()}, src{from, dev, l.src_bytes()};
        const std::vector<byte> before = pattern(l.dst_bytes(), ++seed);
        const std::vector<byte> data = pattern(l.src_bytes(), ++seed);
        dst.load(before);
        src.load(data);
        sluice::copy(s, l.dst(dst.data()), l.src(src.data()), l.e);
        s.synchronize();
        EXPECT_EQ(first_difference(dst.contents(), expected(before, data, l)), "")
            << name(from) << " -> " << name(to) << ", depth " << l.e.depth;
      }
}

TEST(Memory, MEM_7__a_zero_extent_is_a_no_op_whatever_the_pointers) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::vector<byte> pageable(256, 0x31);
  gate g{s};
  for (const sluice::extent e :
       {sluice::extent{0, 4, 4}, sluice::extent{8, 0, 4}, sluice::extent{8, 4, 0}}) {
    EXPECT_TRUE(returns_while_held(g, [&] {
      sluice::copy(s, {nullptr, 0, 0}, {nullptr, 0, 0}, e);
    }));
    // Into pageable memory a copy waits for the stream; an empty one does not.
    EXPECT_TRUE(returns_while_held(g, [&] {
      sluice::copy(s, {pageable.data(), 1, 0}, {pageable.data(), 1, 0}, e);
    }));
  }
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(pageable.data(), pageable.size(), 0x31), pageable.size());
}

TEST(Memory, MEM_7__bad_strided_copies_are_rejected_before_anything_is_enqueued) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 4 * kib;
  sluice::device_buffer<byte> d = patterned_device_bytes(dev, n, 7);
  sluice::pinned_buffer<byte> p = filled_pinned_bytes(n, 0x44);
  byte* const dp = d.data();
  byte* const pp = p.data();
  using sluice::extent;
  struct bad_case {
    const char* why;
    sluice::pitched_ptr dst;
    sluice::const_pitched_ptr src;
    extent e;
  };
  const bad_case bad[] = {
      {"a null destination", {nullptr, 64, 0}, {pp, 64, 0}, {16, 4, 1}},
      {"a null source", {dp, 64, 0}, {nullptr, 64, 0}, {16, 4, 1}},
      {"a destination pitch below the width", {dp, 15, 0}, {pp, 64, 0}, {16, 4, 1}},
      {"a source pitch below the width", {dp, 64, 4}, {pp, 8, 4}, {16, 1, 2}},
      {"rows_per_plane below the height", {dp, 64, 3}, {pp, 64, 4}, {16, 4, 2}},
      {"a footprint that overflows", {dp, SIZE_MAX / 2, 0}, {pp, 64, 0}, {16, 4, 1}},
      {"a footprint past the device buffer", {dp, 1024, 0}, {pp, 64, 0}, {16, 5, 1}},
      {"a footprint past the pinned buffer", {dp, 64, 0}, {pp + 64, 1400, 0}, {16, 4, 1}},
      {"footprints overlapping at other pitches", {pp, 64, 0}, {pp + 32, 80, 0}, {16, 4, 1}},
      {"columns overlapping at one pitch", {pp, 64, 0}, {pp + 8, 64, 0}, {16, 4, 1}},
      {"planes overlapping at other rows_per_plane", {pp, 64, 4}, {pp + 32, 64, 5}, {16, 4, 2}},
  };
  gate g{s};
  for (const bad_case& c : bad)
    EXPECT_TRUE(throws_code(errc::invalid_argument, [&] { sluice::copy(s, c.dst, c.src, c.e); }))
        << c.why;
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(read_back(d).data(), n, 7), n) << "a rejected copy wrote";
  EXPECT_EQ(first_byte_not(p.data(), n, 0x44), n) << "a rejected copy wrote";
}

// The exception to the overlap rule: a ghost column copied inside one array.
TEST(Memory, MEM_7__columns_of_one_array_at_one_pitch_may_be_copied_into_each_other) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  // 16 rows of 64 bytes; columns [56, 64) -> [0, 8) and, wrapping around the
  // pitch, [60, 68) -> [4, 12) of the next row.
  for (const layout& l :
       {layout{{8, 16, 1}, 0, 64, 0, 56, 64, 0}, layout{{8, 15, 1}, 68, 64, 0, 60, 64, 0}}) {
    buffer array{memory::device, dev, 64 * 17};
    const std::vector<byte> before = pattern(64 * 17, 90);
    array.load(before);
    sluice::copy(s, l.dst(array.data()), l.src(array.data()), l.e);
    s.synchronize();
    EXPECT_EQ(first_difference(array.contents(), expected(before, before, l)), "");
  }
}

// MEM-1..3 hold for strided copies: ordered on the stream, pinned and device
// ends never block, a pageable destination holds the data on return.
TEST(Memory, MEM_7__strided_copies_are_ordered_and_block_as_contiguous_ones) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  const layout l = shapes[0];
  sluice::pinned_buffer<byte> in{l.src_bytes()};
  write_pattern(in.data(), l.src_bytes(), 5);
  sluice::device_buffer<byte> d = filled_device_bytes(dev, l.dst_bytes(), 0);
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(l.dst_bytes(), 0);
  std::vector<byte> pageable(l.dst_bytes(), 0);
  const layout back{l.e,          l.dst_offset, l.dst_pitch, l.dst_rows,
                    l.dst_offset, l.dst_pitch,  l.dst_rows};
  gate g{s};
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::copy(s, l.dst(d.data()), l.src(in.data()), l.e);
  })) << "pinned -> device blocked";
  EXPECT_TRUE(returns_while_held(g, [&] {
    sluice::copy(s, back.dst(out.data()), back.src(d.data()), back.e);
  })) << "device -> pinned blocked";
  EXPECT_TRUE(stays_false([&] {
    return s.ready() || first_byte_not(out.data(), out.size(), 0) != out.size();
  })) << "a strided copy ran ahead of its stream";
  EXPECT_TRUE(blocks_until_released(g, [&] {
    sluice::copy(s, back.dst(pageable.data()), back.src(d.data()), back.e);
  })) << "a pageable destination";
  const std::vector<byte> want =
      expected(std::vector<byte>(l.dst_bytes(), 0), std::vector<byte>(in.begin(), in.end()), l);
  EXPECT_EQ(first_difference(pageable, want), "") << "the pageable destination on return";
  s.synchronize();
  EXPECT_EQ(first_difference(std::vector<byte>(out.begin(), out.end()), want), "");
}

// --- MEM-8: registered host memory -----------------------------------------

TEST(Memory, MEM_8__copies_inside_registered_memory_return_while_the_stream_is_held) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 1 * mib;
  std::vector<byte> in = pattern(n, 17), out(n, 0);
  sluice::registered_host_memory rin{in.data(), n}, rout{out.data(), n};
  sluice::device_buffer<byte> d{dev, n};
  const layout l = shapes[1];
  // An enqueue returns in microseconds; a copy that blocks waits for the whole
  // limit, which a shorter one keeps short under the MEM-8 mutation.
  constexpr auto limit = 2s;
  gate g{s};
  EXPECT_TRUE(returns_while_held(
      g, [&] { sluice::copy(s, d.data(), in.data(), n); }, limit))
      << "registered -> device blocked";
  EXPECT_TRUE(returns_while_held(
      g, [&] { sluice::copy(s, out.data(), d.data(), n); }, limit))
      << "device -> registered blocked";
  EXPECT_TRUE(returns_while_held(
      g, [&] { sluice::copy(s, l.dst(out.data() + n / 2), l.src(in.data() + n / 2), l.e); }, limit))
      << "a strided registered -> registered copy blocked";
  EXPECT_TRUE(stays_false([&] { return s.ready() || out[0] != 0; }))
      << "a copy ran ahead of its stream";
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(out.data(), n / 2, 17), n / 2);
}

TEST(Memory, MEM_8__a_copy_partly_inside_a_registration_counts_as_pageable) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 64 * kib;
  std::vector<byte> out(2 * n, 0);
  sluice::registered_host_memory half{out.data(), n};
  sluice::device_buffer<byte> d = filled_device_bytes(dev, 2 * n, 0x5A);
  gate g{s};
  EXPECT_TRUE(blocks_until_released(g, [&] { sluice::copy(s, out.data() + n / 2, d.data(), n); }))
      << "a contiguous copy half inside";
  EXPECT_EQ(first_byte_not(out.data() + n / 2, n, 0x5A), n) << "returned before the data arrived";
  gate g2{s};
  // 3 rows at pitch n / 2 from the registration's middle: the last one lies past it.
  EXPECT_TRUE(blocks_until_released(g2, [&] {
    sluice::copy(s, {out.data() + n / 2, n / 2, 0}, {d.data(), 64, 0}, {64, 3, 1});
  })) << "a strided copy partly inside";
  s.synchronize();
  EXPECT_EQ(first_byte_not(out.data() + 3 * n / 2, 64, 0x5A), 64u)
      << "the strided copy's last row, past the registration";
  // A fill partly inside: pageable too (CUDA refuses one fill that starts in registered pages
  // and runs past them).
  sluice::fill(s, out.data() + n / 2, 0x33, n);
  s.synchronize();
  EXPECT_EQ(first_byte_not(out.data() + n / 2, n, 0x33), n) << "a fill partly inside";
}

TEST(Memory, MEM_8__bad_registrations_are_rejected) {
  const sluice::device dev{0};
  constexpr std::size_t n = 4 * kib;
  std::vector<byte> host(n);
  sluice::pinned_buffer<byte> p{n};
  sluice::device_buffer<byte> d{dev, n};
  auto registers = [](void* ptr, std::size_t bytes) {
    return [ptr, bytes] { sluice::registered_host_memory r{ptr, bytes}; };
  };
  EXPECT_TRUE(throws_code(errc::invalid_argument, registers(nullptr, n))) << "null";
  EXPECT_TRUE(throws_code(errc::invalid_argument, registers(host.data(), 0))) << "zero bytes";
  EXPECT_TRUE(throws_code(errc::invalid_argument, registers(p.data() + 8, 64))) << "pinned_buffer";
  EXPECT_TRUE(throws_code(errc::invalid_argument, registers(d.data(), 64))) << "device_buffer";
  {
    sluice::registered_host_memory first{host.data() + 1024, 1024};
    EXPECT_TRUE(throws_code(errc::invalid_argument, registers(host.data() + 2047, 16)))
        << "overlapping another registration";
    EXPECT_TRUE(throws_code(errc::invalid_argument, registers(host.data(), 1025)))
        << "overlapping another registration from below";
    sluice::registered_host_memory below{host.data(), 1024};  // touching is not overlapping
    sluice::registered_host_memory moved{std::move(first)};
    EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(moved.size(), 1024U);
  }
  // Destroyed: the range may be registered again.
  sluice::registered_host_memory again{host.data(), n};
  EXPECT_EQ(again.data(), host.data());
}

TEST(Memory, MEM_8__destroying_a_registration_returns_at_once) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 256 * kib;
  std::vector<byte> in = pattern(n, 23);
  sluice::device_buffer<byte> d = filled_device_bytes(dev, n, 0);
  auto r = std::make_optional<sluice::registered_host_memory>(in.data(), n);
  gate g{s};
  sluice::copy(s, d.data(), in.data(), n);
  EXPECT_TRUE(returns_while_held(g, [&] { r.reset(); })) << "~registered_host_memory blocked";
  g.release();
  s.synchronize();
  EXPECT_EQ(first_pattern_mismatch(read_back(d).data(), n, 23), n);
}

// A registration destroyed while its stream is held is unregistered by the vendor only once the
// stream has passed; its memory is pageable again at once for sluice. Copies and fills into it
// then follow MEM-3 (they return only once the data is there), never the vendor's pinned path.
TEST(Memory, MEM_8__memory_whose_registration_is_gone_is_pageable_for_the_next_copy) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  constexpr std::size_t n = 64 * kib, rows = 16;
  sluice::device_buffer<byte> d = patterned_device_bytes(dev, n, 31);
  struct use {
    const char* what;
    std::function<void(sluice::stream&, byte*)> run;
    std::function<bool(const byte*)> arrived;
  };
  const use uses[] = {
      {"a copy", [&](sluice::stream& on, byte* h) { sluice::copy(on, h, d.data(), n); },
       [&](const byte* h) { return first_pattern_mismatch(h, n, 31) == n; }},
      {"a strided copy",
       [&](sluice::stream& on, byte* h) {
         sluice::copy(on, {h, n / rows, 0}, {d.data(), n / rows, 0}, {n / rows / 2, rows, 1});
       },
       [&](const byte* h) {
         std::vector<byte> want = read_back(d);
         for (std::size_t y = 0; y < rows; ++y)
           for (std::size_t x = n / rows / 2; x < n / rows; ++x) want[y * (n / rows) + x] = 0;
         return std::equal(want.begin(), want.end(), h);
       }},
      {"a fill", [&](sluice::stream& on, byte* h) { sluice::fill(on, h, 0x5a, n); },
       [&](const byte* h) { return first_byte_not(h, n, 0x5a) == n; }},
  };
  for (const use& u : uses) {
    std::vector<byte> host(n, 0);
    auto r = std::make_optional<sluice::registered_host_memory>(host.data(), n);
    gate g{s};
    r.reset();
    EXPECT_TRUE(blocks_until_released(g, [&] { u.run(s, host.data()); }))
        << u.what << " into memory whose registration was destroyed";
    EXPECT_TRUE(u.arrived(host.data())) << u.what << ": the data was not there on return";
    s.synchronize();
  }
}

// --- PEER-5: strided peer copies ---------------------------------------------

//! A strided copy_peer from a buffer on `from` to one on `to`, ordered on a
//! stream of `on`, for each shape: data, untouched bytes and path checked.
void strided_peer_and_check(sluice::device from, sluice::device to, sluice::device on,
                            unsigned seed) {
  for (const layout& l : shapes) {
    buffer dst{memory::device, to, l.dst_bytes()}, src{memory::device, from, l.src_bytes()};
    const std::vector<byte> before = pattern(l.dst_bytes(), ++seed);
    const std::vector<byte> data = pattern(l.src_bytes(), ++seed);
    dst.load(before);
    src.load(data);
    sluice::stream s{on};
    const sluice::copy_path path =
        sluice::copy_peer(s, l.dst(dst.data()), to, l.src(src.data()), from, l.e);
    EXPECT_TRUE(path_is_consistent(path, on, on == from ? to : from));
    s.synchronize();
    EXPECT_EQ(first_difference(dst.contents(), expected(before, data, l)), "")
        << from.id() << " -> " << to.id() << " on a stream of " << on.id() << ", depth "
        << l.e.depth << ", path " << sluice::to_string(path);
  }
}

TEST(Peer, PEER_5__a_strided_copy_peer_within_one_device_is_local_and_exact) {
  strided_peer_and_check(sluice::device{0}, sluice::device{0}, sluice::device{0}, 500);
}

TEST(PeerMultiDevice, PEER_5__strided_copy_peer_with_and_without_peer_access) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device d0{0}, d1{1};
  if (sluice::link(d0, d1).peer_access_possible && sluice::link(d1, d0).peer_access_possible) {
    sluice::enable_peer_access(d0, d1);
    sluice::enable_peer_access(d1, d0);
  }
  const sluice::device a{count - 2}, b{count - 1};  // no peer access with four devices or more
  unsigned seed = 510;
  for (const auto& [x, y] : {std::pair{d0, d1}, std::pair{a, b}})
    for (const bool reverse : {false, true}) {
      const sluice::device from = reverse ? y : x, to = reverse ? x : y;
      strided_peer_and_check(from, to, from, seed += 10);
      strided_peer_and_check(from, to, to, seed += 10);
    }
}

//! The faces of an nx * ny * nz block of `from` (x fastest, one byte per cell)
//! copied as one batch into a block of `to` one cell larger on every side (the
//! ghost cells): the two x faces land in columns of the same rows.
void halo_batch_and_check(sluice::device from, sluice::device to, sluice::device on,
                          unsigned seed) {
  constexpr std::size_t nx = 12, ny = 7, nz = 5, gx = nx + 2, gy = ny + 2, gz = nz + 2;
  buffer src{memory::device, from, nx * ny * nz}, dst{memory::device, to, gx * gy * gz};
  const std::vector<byte> data = pattern(nx * ny * nz, seed);
  const std::vector<byte> before = pattern(gx * gy * gz, seed + 1);
  src.load(data);
  dst.load(before);
  const std::size_t inner = gx * gy + gx + 1;  // ghost cell (1, 1, 1): the block's (0, 0, 0)
  const std::vector<layout> faces = {
      // x faces: one byte per row, rows of every plane.
      {{1, ny, nz}, inner - 1, gx, gy, 0, nx, ny},
      {{1, ny, nz}, inner + nx, gx, gy, nx - 1, nx, ny},
      // y faces: one row per plane.
      {{nx, 1, nz}, inner - gx, gx, gy, 0, nx, ny},
      {{nx, 1, nz}, inner + ny * gx, gx, gy, (ny - 1) * nx, nx, ny},
      // z faces: one plane.
      {{nx, ny, 1}, inner - gx * gy, gx, gy, 0, nx, ny},
      {{nx, ny, 1}, inner + nz * gx * gy, gx, gy, (nz - 1) * nx * ny, nx, ny},
  };
  std::vector<sluice::strided_piece> pieces;
  std::vector<byte> want = before;
  for (const layout& f : faces) {
    pieces.push_back({f.dst(dst.data()), f.src(src.data()), f.e});
    want = expected(want, data, f);
  }
  pieces.push_back({{nullptr, 0, 0}, {nullptr, 0, 0}, {0, 1, 1}});  // empty: ignored
  sluice::stream s{on};
  const sluice::copy_path path = sluice::copy_peer_batch(s, to, from, pieces);
  EXPECT_TRUE(path_is_consistent(path, on, on == from ? to : from));
  s.synchronize();
  EXPECT_EQ(first_difference(dst.contents(), want), "")
      << from.id() << " -> " << to.id() << " on a stream of " << on.id() << ", path "
      << sluice::to_string(path);
}

TEST(Peer, PEER_5__a_batch_of_strided_pieces_within_one_device) {
  halo_batch_and_check(sluice::device{0}, sluice::device{0}, sluice::device{0}, 600);
}

TEST(PeerMultiDevice, PEER_5__a_batch_of_strided_pieces_with_and_without_peer_access) {
  SLUICE_REQUIRE_DEVICES(2);
  const int count = sluice::device_count();
  const sluice::device d0{0}, d1{1};
  if (sluice::link(d0, d1).peer_access_possible) sluice::enable_peer_access(d0, d1);
  const sluice::device a{count - 2}, b{count - 1};
  unsigned seed = 610;
  for (const auto& [from, to] : {std::pair{d0, d1}, std::pair{a, b}}) {
    halo_batch_and_check(from, to, from, seed += 2);
    halo_batch_and_check(from, to, to, seed += 2);
  }
}

TEST(PeerMultiDevice, PEER_5__bad_strided_peer_copies_are_rejected_and_enqueue_nothing) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 16 * kib;
  sluice::device_buffer<byte> src = filled_device_bytes(d0, n, 0x10);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, n, 0x20);
  byte* const d = dst.data();
  const byte* const from = src.data();
  sluice::stream s{d0};
  gate g{s};
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer(s, {d, 8, 0}, d1, {from, 64, 0}, d0, {16, 4, 1});
  })) << "a pitch below the width";
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer(s, {d, 4096, 0}, d1, {from, 64, 0}, d0, {16, 5, 1});
  })) << "a footprint past the destination";
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer(s, {src.data() + 8192, 64, 0}, d1, {from, 64, 0}, d0, {16, 4, 1});
  })) << "a destination on the source's device";
  const std::vector<std::pair<const char*, std::vector<sluice::strided_piece>>> bad = {
      {"two pieces write the same columns",
       {{{d, 64, 0}, {from, 64, 0}, {16, 4, 1}},
        {{d + 8, 64, 0}, {from + 4096, 64, 0}, {16, 4, 1}}}},
      {"a null source", {{{d, 64, 0}, {nullptr, 64, 0}, {16, 4, 1}}}},
      {"rows_per_plane below the height", {{{d, 64, 2}, {from, 64, 4}, {16, 4, 2}}}},
  };
  for (const auto& [why, pieces] : bad)
    EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
      (void)sluice::copy_peer_batch(s, d1, d0, pieces);
    })) << why;
  EXPECT_TRUE(throws_code(errc::invalid_argument, [&] {
    (void)sluice::copy_peer_batch(s, d1, d0, static_cast<const sluice::strided_piece*>(nullptr), 2);
  })) << "null pieces with a count";
  g.release();
  s.synchronize();
  EXPECT_EQ(first_byte_not(read_back(dst).data(), n, 0x20), n) << "a rejected copy wrote";
  // Two ghost columns of one destination at one pitch: allowed.
  const std::vector<sluice::strided_piece> columns = {
      {{d, 64, 0}, {from, 64, 0}, {8, 4, 1}}, {{d + 56, 64, 0}, {from + 8, 64, 0}, {8, 4, 1}}};
  (void)sluice::copy_peer_batch(s, d1, d0, columns);
  s.synchronize();
  const std::vector<byte> after = read_back(dst);
  EXPECT_EQ(first_byte_not(after.data(), 8, 0x10), 8U);
  EXPECT_EQ(first_byte_not(after.data() + 8, 48, 0x20), 48U) << "bytes between the columns";
  EXPECT_EQ(first_byte_not(after.data() + 56, 8, 0x10), 8U);
}

// Ordered on its own stream only (PEER-3): held, it has not run; other held
// streams on either device do not hold it.
TEST(PeerMultiDevice, PEER_5__strided_peer_copies_are_ordered_on_their_own_stream_only) {
  SLUICE_REQUIRE_DEVICES(2);
  const sluice::device d0{0}, d1{1};
  const layout l = shapes[0];
  sluice::device_buffer<byte> src = patterned_device_bytes(d0, l.src_bytes(), 41);
  sluice::device_buffer<byte> dst = filled_device_bytes(d1, l.dst_bytes(), 0);
  sluice::stream held0{d0}, held1{d1};
  gate others{held0, held1};
  for (const sluice::device on : {d0, d1}) {
    sluice::stream s{on};
    (void)sluice::copy_peer(s, l.dst(dst.data()), d1, l.src(src.data()), d0, l.e);
    const std::vector<sluice::strided_piece> one = {{l.dst(dst.data()), l.src(src.data()), l.e}};
    (void)sluice::copy_peer_batch(s, d1, d0, one);
    EXPECT_TRUE(eventually([&] { return s.ready(); }))
        << "a strided peer copy on device " << on.id() << " waited for another stream";
  }
  sluice::stream s{d0};
  gate g{s};
  sluice::fill(s, src.data(), 0x77, l.src_bytes());
  (void)sluice::copy_peer(s, l.dst(dst.data()), d1, l.src(src.data()), d0, l.e);
  EXPECT_TRUE(stays_false([&] { return s.ready(); }));
  std::vector<byte> want = expected(std::vector<byte>(l.dst_bytes(), 0), read_back(src), l);
  EXPECT_EQ(first_difference(read_back(dst), want), "") << "ran ahead of its stream";
  g.release();
  s.synchronize();
  want = expected(want, std::vector<byte>(l.src_bytes(), 0x77), l);
  EXPECT_EQ(first_difference(read_back(dst), want), "");
  others.release();
}

}  // namespace
}  // namespace sluice::conformance
