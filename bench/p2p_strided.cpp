// sluice-bench-p2p-strided-<backend> (`sluice bench p2p --strided`): the faces
// of a cube of doubles copied between two devices by sluice's strided
// copy_peer and copy_peer_batch, next to the vendor's own calls in the same
// run (p2p_strided_raw.hpp: CUDA's cudaMemcpy3DPeerAsync, and a pack kernel +
// one contiguous peer copy + an unpack kernel). With --same-device both ends
// are device 0 (the raw 3-D copy is then cudaMemcpy3DAsync).
//
// Cubes of side 64, 128, ... up to --max-side (default 512 on a GPU backend,
// 128 on the host backend), 8-byte elements, no ghost layer: a face of side L
// is L^2 * 8 bytes. Rows, each on a stream of the source device:
//   x    the face x = 0: L planes of L rows of 8 bytes (the most strided)
//   y    the face y = 0: L planes of one row of L * 8 bytes
//   z    the face z = 0: L rows of L * 8 bytes, one plane (contiguous)
//   six  the six faces (x, y, z = 0 and L-1): one sluice copy_peer_batch of six
//        strided pieces against six raw 3-D copies and one pack/copy/unpack
// Method: per trial `--reps` copies enqueued back to back, then synchronize;
// host wall time per copy (one copy: enqueue to completion amortized over the
// reps); sluice and raw trials alternate; --trials of each, median (and min,
// max); GB/s of the bytes moved (1e9). The ratio is sluice's GB/s over the
// best raw method's. After the trials each method's copy is checked on its
// own: the destination cube cleared, one copy, read back: the faces hold the
// source's bytes and every other byte is still 0.
//
// Verdicts (printed, not the exit status): sluice >= 0.95x the best raw method
// for faces of 1 MiB or more; >= 2x the raw 3-D copy for faces of 256 KiB or
// less; the six-face batch >= 3x six raw 3-D copies. Exit status: 0 when every
// data check passed, 1 otherwise, 2 bad arguments, 77 fewer than 2 devices.
//
//   sluice-bench-p2p-strided-<backend> [--max-side=N] [--trials=5] [--reps=20]
//                                      [--same-device] [--json=F] [--csv=F]
#include "p2p_strided_raw.hpp"

#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct stats {
  double median = 0, min = 0, max = 0;  // microseconds per copy; 0: not measured
};

stats summarize(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

struct row {
  std::string test;
  std::size_t side = 0;
  std::size_t bytes = 0;  // moved per copy (six: all six faces)
  stats sluice, raw_3d, raw_pack;
  std::string path;
  bool verified = false, raw_3d_verified = false, raw_pack_verified = false;
  double gbps(const stats& s) const {
    return s.median > 0 ? static_cast<double>(bytes) / (s.median * 1e3) : 0;
  }
  double best_raw_gbps() const { return std::max(gbps(raw_3d), gbps(raw_pack)); }
  double ratio() const { return best_raw_gbps() > 0 ? gbps(sluice) / best_raw_gbps() : 0; }
};

const char* yes_no(bool b) { return b ? "yes" : "no"; }

//! A JSON string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", u);
      out += escape;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

//! A JSON number (finite; 17 significant digits).
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// One cube on each device, its faces, and the methods that copy them.
class cube_bench {
 public:
  cube_bench(sluice::device dst, sluice::device src, std::size_t side, int trials, int reps)
      : dst_(dst),
        src_(src),
        side_(side),
        trials_(trials),
        reps_(reps),
        s_(src),
        d_(dst),
        from_(src, side * side * side),
        to_(dst, side * side * side),
        src_scratch_(src, 6 * side * side),
        dst_scratch_(dst, 6 * side * side) {
    std::vector<double> pattern(side * side * side);
    for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<double>(i) + 0.5;
    sluice::copy(s_, from_.data(), pattern.data(), pattern.size() * sizeof(double));
    s_.synchronize();
    if (strided_raw::unavailable() == nullptr && strided_raw::kernels_run())
      pack_ = strided_raw::make_pack_context(dst.id(), src.id());
  }
  ~cube_bench() { strided_raw::free_pack_context(pack_); }
  cube_bench(const cube_bench&) = delete;
  cube_bench& operator=(const cube_bench&) = delete;

  //! Face k: 0/1 x = 0 / L-1, 2/3 y, 4/5 z. Whole faces for the single rows;
  //! for the batch the six share no byte (a piece may not write what another
  //! writes): the x faces whole, the y faces without their x edges, the z
  //! faces without their x and y edges.
  sluice::strided_piece piece(int k, bool whole) {
    const std::size_t l = side_, pitch = l * sizeof(double), last = l - 1;
    const std::size_t cut = whole ? 0 : 1;  // cells left out at each edge
    std::size_t offset = 0;
    sluice::extent e{};
    switch (k / 2) {
      case 0:
        offset = k % 2 ? last : 0;
        e = {sizeof(double), l, l};
        break;
      case 1:
        offset = (k % 2 ? last : 0) * l + cut;
        e = {(l - 2 * cut) * sizeof(double), 1, l};
        break;
      default:
        offset = (k % 2 ? last : 0) * l * l + cut * l + cut;
        e = {(l - 2 * cut) * sizeof(double), l - 2 * cut, 1};
        break;
    }
    return {{to_.data() + offset, pitch, l}, {from_.data() + offset, pitch, l}, e};
  }

  row measure(const std::string& test, const std::vector<int>& faces) {
    row r;
    r.test = test;
    r.side = side_;
    std::vector<sluice::strided_piece> pieces;
    std::vector<strided_raw::face> raw_faces;
    for (int k : faces) {
      pieces.push_back(piece(k, faces.size() == 1));
      const sluice::strided_piece& p = pieces.back();
      raw_faces.push_back({p.dst.ptr, p.src.ptr, p.dst.pitch, p.dst.rows_per_plane, p.src.pitch,
                           p.src.rows_per_plane, p.shape.width_bytes, p.shape.height,
                           p.shape.depth});
      r.bytes += p.shape.width_bytes * p.shape.height * p.shape.depth;
    }
    sluice::copy_path path = sluice::copy_path::local;
    auto sluice_copy = [&] {
      if (pieces.size() == 1)
        path = sluice::copy_peer(s_, pieces[0].dst, dst_, pieces[0].src, src_, pieces[0].shape);
      else
        path = sluice::copy_peer_batch(s_, dst_, src_, pieces);
    };
    const bool raw = strided_raw::unavailable() == nullptr;
    auto raw_3d = [&] {
      check(strided_raw::copy_3d(raw_faces.data(), raw_faces.size(), dst_.id(), src_.id(),
                                 sluice::native_handle(s_)));
    };
    auto raw_pack = [&] {
      check(strided_raw::pack_copy_unpack(pack_, raw_faces.data(), raw_faces.size(),
                                          src_scratch_.data(), dst_scratch_.data(),
                                          sluice::native_handle(s_), sluice::native_handle(d_)));
    };
    std::vector<double> a, b, c;
    for (int t = 0; t < trials_; ++t) {
      a.push_back(time(sluice_copy));
      if (raw) b.push_back(time(raw_3d));
      if (pack_ != nullptr) c.push_back(time(raw_pack));
    }
    r.sluice = summarize(a);
    r.raw_3d = summarize(b);
    r.raw_pack = summarize(c);
    r.path = sluice::to_string(path);
    r.verified = verify(pieces, sluice_copy);
    if (raw) r.raw_3d_verified = verify(pieces, raw_3d);
    if (pack_ != nullptr) r.raw_pack_verified = verify(pieces, raw_pack);
    return r;
  }

 private:
  static void check(int code) {
    if (code != 0) {
      std::fprintf(stderr, "sluice-bench-p2p-strided: a raw call failed (error %d)\n", code);
      std::exit(1);
    }
  }
  void sync() {
    s_.synchronize();
    d_.synchronize();
  }
  // Microseconds per copy: `reps` enqueued back to back, to completion; one
  // untimed call first.
  double time(const std::function<void()>& f) {
    f();
    sync();
    const auto start = clock_type::now();
    for (int i = 0; i < reps_; ++i) f();
    sync();
    return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / reps_;
  }
  // The destination cleared, one copy by f, the whole cube read back.
  bool verify(const std::vector<sluice::strided_piece>& pieces, const std::function<void()>& f) {
    const std::size_t n = side_ * side_ * side_;
    sluice::fill(d_, to_.data(), 0, n * sizeof(double));
    d_.synchronize();
    f();
    sync();
    std::vector<double> back(n, -1.0);
    sluice::copy(d_, back.data(), to_.data(), n * sizeof(double));
    d_.synchronize();
    std::vector<bool> in_face(n, false);
    const std::size_t l = side_;
    for (const sluice::strided_piece& p : pieces) {
      const std::size_t first = static_cast<const double*>(p.src.ptr) - from_.data();
      for (std::size_t z = 0; z < p.shape.depth; ++z)
        for (std::size_t y = 0; y < p.shape.height; ++y)
          for (std::size_t x = 0; x < p.shape.width_bytes / sizeof(double); ++x)
            in_face[first + z * l * l + y * l + x] = true;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double want = in_face[i] ? static_cast<double>(i) + 0.5 : 0.0;
      if (std::memcmp(&back[i], &want, sizeof(double)) != 0) return false;
    }
    return true;
  }

  sluice::device dst_, src_;
  std::size_t side_;
  int trials_, reps_;
  sluice::stream s_, d_;  // of the source device (copies), of the destination (checks, unpack)
  sluice::device_buffer<double> from_, to_, src_scratch_, dst_scratch_;
  strided_raw::pack_context* pack_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_side = sluice::backend() == sluice::backend_kind::host ? 128 : 512;
  int trials = 5, reps = 20;
  bool same_device = false;
  std::string json_path, csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--max-side=", 0) == 0)
      max_side = std::strtoull(argv[i] + 11, nullptr, 10);
    else if (a.rfind("--trials=", 0) == 0)
      trials = std::atoi(argv[i] + 9);
    else if (a.rfind("--reps=", 0) == 0)
      reps = std::atoi(argv[i] + 7);
    else if (a == "--same-device")
      same_device = true;
    else if (a.rfind("--json=", 0) == 0)
      json_path = a.substr(7);
    else if (a.rfind("--csv=", 0) == 0)
      csv_path = a.substr(6);
    else
      max_side = 0;
  }
  if (max_side < 64 || trials < 1 || reps < 1) {
    std::fprintf(stderr,
                 "usage: sluice-bench-p2p-strided-%s [--max-side=N (>= 64)] [--trials=5] "
                 "[--reps=20] [--same-device] [--json=F] [--csv=F]\n",
                 sluice::backend_name());
    return 2;
  }
  const int count = sluice::device_count();
  if (count < (same_device ? 1 : 2)) {
    std::printf("sluice-bench-p2p-strided: needs %s, the %s backend has %d device(s): skipped\n",
                same_device ? "a device" : "2 devices", sluice::backend_name(), count);
    return 77;
  }
  const sluice::device src(0), dst(same_device ? 0 : 1);
  if (!same_device && sluice::link(src, dst).peer_access_possible)
    sluice::enable_peer_access(src, dst);
  const char* why = strided_raw::unavailable();
  const bool kernels = why == nullptr && strided_raw::kernels_run();
  std::printf(
      "sluice-bench-p2p-strided: %s, device %d -> %d, sides 64-%zu, %d trials of %d copies\n",
      sluice::backend_version().c_str(), src.id(), dst.id(), max_side, trials, reps);
  std::printf("raw methods: %s\n", why != nullptr ? why
                                   : kernels ? "3-D copy, pack kernel + peer copy + unpack kernel"
                                             : "3-D copy (pack: this runtime runs no kernels)");
  std::printf("%-5s %5s %10s %11s %11s %11s %7s %-7s %s\n", "test", "side", "bytes", "sluice_us",
              "raw3d_us", "pack_us", "ratio", "path", "verified(sluice,3d,pack)");
  std::vector<row> rows;
  bool all_ok = true;
  for (std::size_t side = 64; side <= max_side; side *= 2) {
    cube_bench b(dst, src, side, trials, reps);
    const std::array<std::pair<const char*, std::vector<int>>, 4> tests = {
        {{"x", {0}}, {"y", {2}}, {"z", {4}}, {"six", {0, 1, 2, 3, 4, 5}}}};
    for (const auto& [name, faces] : tests) {
      row r = b.measure(name, faces);
      const bool ok =
          r.verified && (why != nullptr || r.raw_3d_verified) && (!kernels || r.raw_pack_verified);
      all_ok = all_ok && ok;
      std::printf("%-5s %5zu %10zu %11.2f %11.2f %11.2f %7.2f %-7s %s,%s,%s\n", r.test.c_str(),
                  r.side, r.bytes, r.sluice.median, r.raw_3d.median, r.raw_pack.median, r.ratio(),
                  r.path.c_str(), yes_no(r.verified), why ? "-" : yes_no(r.raw_3d_verified),
                  kernels ? yes_no(r.raw_pack_verified) : "-");
      rows.push_back(std::move(r));
    }
  }
  // The targets, each over the rows it covers (not the exit status).
  auto verdict = [&](const char* target, auto covers, auto holds) {
    int checked = 0, held = 0;
    for (const row& r : rows)
      if (covers(r) && r.raw_3d.median > 0) {
        ++checked;
        if (holds(r)) ++held;
      }
    std::printf("verdict: %s: %s (%d of %d rows)\n", target,
                checked == 0      ? "not measured (no row of that kind with a raw method)"
                : held == checked ? "PASS"
                                  : "FAIL",
                held, checked);
  };
  verdict(
      "sluice >= 0.95x the best raw method, faces >= 1 MiB",
      [](const row& r) { return r.test != "six" && r.bytes >= (1U << 20); },
      [](const row& r) { return r.ratio() >= 0.95; });
  verdict(
      "sluice >= 2x raw 3-D copy, faces <= 256 KiB",
      [](const row& r) { return r.test != "six" && r.bytes <= (256U << 10); },
      [](const row& r) { return r.gbps(r.sluice) >= 2 * r.gbps(r.raw_3d); });
  verdict(
      "six-face batch >= 3x six raw 3-D copies", [](const row& r) { return r.test == "six"; },
      [](const row& r) { return r.gbps(r.sluice) >= 3 * r.gbps(r.raw_3d); });
  std::printf("data check: %s\n", all_ok ? "passed" : "FAILED");
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path);
    csv << "test,from,to,side,bytes,unit,sluice_median,sluice_min,sluice_max,raw_3d_median,"
           "raw_3d_min,raw_3d_max,raw_pack_median,raw_pack_min,raw_pack_max,sluice_gbps,"
           "best_raw_gbps,ratio,path,verified,raw_3d_verified,raw_pack_verified\n";
    for (const row& r : rows)
      csv << r.test << ',' << src.id() << ',' << dst.id() << ',' << r.side << ',' << r.bytes
          << ",us," << r.sluice.median << ',' << r.sluice.min << ',' << r.sluice.max << ','
          << r.raw_3d.median << ',' << r.raw_3d.min << ',' << r.raw_3d.max << ','
          << r.raw_pack.median << ',' << r.raw_pack.min << ',' << r.raw_pack.max << ','
          << r.gbps(r.sluice) << ',' << r.best_raw_gbps() << ',' << r.ratio() << ',' << r.path
          << ',' << yes_no(r.verified) << ',' << yes_no(r.raw_3d_verified) << ','
          << yes_no(r.raw_pack_verified) << '\n';
    std::printf("csv:  %s\n", csv_path.c_str());
  }
  if (!json_path.empty()) {
    // Written by hand (the one free-form string escaped): nlohmann-json's
    // header costs this file most of its compile time.
    std::ofstream js(json_path);
    auto of = [](const stats& s) {
      return "{\"median\": " + number(s.median) + ", \"min\": " + number(s.min) +
             ", \"max\": " + number(s.max) + "}";
    };
    auto flag = [](bool b) { return b ? "true" : "false"; };
    js << "{\n  \"bench\": \"sluice-bench-p2p-strided\",\n  \"backend\": "
       << quoted(sluice::backend_version()) << ",\n  \"from\": " << src.id()
       << ",\n  \"to\": " << dst.id() << ",\n  \"trials\": " << trials << ",\n  \"reps\": " << reps
       << ",\n  \"raw_available\": " << flag(why == nullptr)
       << ",\n  \"raw_pack_available\": " << flag(kernels)
       << ",\n  \"data_check\": " << flag(all_ok) << ",\n  \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const row& r = rows[i];
      js << (i == 0 ? "\n" : ",\n") << "    {\"test\": " << quoted(r.test)
         << ", \"side\": " << r.side << ", \"bytes\": " << r.bytes << ", \"unit\": \"us\""
         << ", \"sluice\": " << of(r.sluice) << ", \"raw_3d\": " << of(r.raw_3d)
         << ", \"raw_pack\": " << of(r.raw_pack)
         << ", \"sluice_gbps\": " << number(r.gbps(r.sluice))
         << ", \"best_raw_gbps\": " << number(r.best_raw_gbps())
         << ", \"ratio\": " << number(r.ratio()) << ", \"path\": " << quoted(r.path)
         << ", \"verified\": " << flag(r.verified)
         << ", \"raw_3d_verified\": " << flag(r.raw_3d_verified)
         << ", \"raw_pack_verified\": " << flag(r.raw_pack_verified) << "}";
    }
    js << "\n  ]\n}\n";
    std::printf("json: %s\n", json_path.c_str());
  }
  return all_ok ? 0 : 1;
}
