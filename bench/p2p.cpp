// sluice-bench-p2p-<backend>: peer copies through sluice next to the raw vendor
// calls (CUDA's for cuda, HIP's for hip: p2p_raw.hpp on raw/vendor.hpp, which
// the build points at HIP with SLUICE_BENCH_RAW_HIP), in the same run, on every
// ordered pair of devices. The text below names CUDA's calls; HIP's are their
// hip* twins, and HIP has no batched peer copy (the batch row's third column
// is left out).
//
// Method (close to nvbandwidth's, which holds its streams with a kernel
// spinning on a host-mapped flag): the stream is held on a host-mapped word
// (sluice: flag + wait_value; raw: cuStreamWaitValue64, the same mechanism), a
// start event, `reps` copies and an end event are enqueued behind the hold,
// the word is released, and the device time between the events gives the
// bandwidth. sluice and raw trials alternate; --trials of each; median (and
// min, max) of GB/s (1e9 bytes).
// The push, pull and staged rows copy the same memory on both sides (the raw
// side's cudaMalloc buffers), so the ratio compares the calls, not where the buffers landed.
// After the trials of a size each side's data is checked on its own: the
// destination cleared, one copy of that side, read back against the pattern.
//
// Rows:
//   staged_push no peer access (run first: peer access, once enabled, stays):
//   staged_pull sluice::copy_peer (path staged: sluice's pinned pipeline) vs raw
//               cudaMemcpyPeerAsync (the driver stages), on a stream of the
//               source (push) or of the destination (pull), 1 MiB-256 MiB
//   push/pull   peer access enabled, stream of the source (push, nvbandwidth's
//               write_ce) or of the destination (pull, read_ce), sizes 4 KiB-1 GiB
//               (sluice picks its copy engine or its SM kernel: the path column)
//   push_sm     the same sluice copies against a raw SM copy kernel (p2p_sm.cu,
//   pull_sm     nvbandwidth's write_sm / read_sm) instead of the copy engine;
//               skipped where the runtime runs no kernels (the simulated one)
//   bidir       both directions at once (one pushing stream per device)
//   batch       64 pieces of 16 KiB: copy_peer_batch vs 64 raw
//               cudaMemcpyPeerAsync vs one raw cudaMemcpyBatchAsync; host wall
//               time from the first enqueue to the end of synchronize()
//   latency     16-byte copy_peer + synchronize vs raw, host wall time
//
// Each row also names the nvbandwidth test it corresponds to, where there is
// one (push: device_to_device_memcpy_write_ce, pull: ..._read_ce, bidir:
// device_to_device_bidirectional_memcpy_write_ce). At the end, device x device
// matrices of push and pull at the largest size: sluice GB/s, raw GB/s, ratio.
//
//   sluice-bench-p2p-<backend> [--max-mib=1024] [--trials=5] [--json=F] [--csv=F]
#include "../tests/pattern.hpp"
#include "p2p_raw.hpp"  // namespace raw: the vendor's own calls

#include <sluice/sluice.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

//! Releases a held stream after `limit` if the bench has not done so itself:
//! a copy call that waits for its own held stream would otherwise deadlock the
//! bench. fired() says that happened (the row is marked "blocked": the call
//! did not return while its stream was held).
class hold_guard {
 public:
  hold_guard(std::function<void()> release, std::chrono::milliseconds limit)
      : release_(std::move(release)), thread_([this, limit] {
          std::unique_lock<std::mutex> lock(m_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            fired_ = true;
            release_();
          }
        }) {}
  ~hold_guard() { release_now(); }
  hold_guard(const hold_guard&) = delete;
  hold_guard& operator=(const hold_guard&) = delete;
  //! The bench's own release (once).
  void release_now() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (done_) return;
      done_ = true;
      if (!fired_) release_();
    }
    cv_.notify_all();
    thread_.join();
  }
  bool fired() {
    std::lock_guard<std::mutex> lock(m_);
    return fired_;
  }

 private:
  std::function<void()> release_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;
};

constexpr std::chrono::seconds hold_limit{5};

//! Whether the raw call of a test kind ("staged_push", ...) was seen to wait
//! for its own held stream (for the whole run, all pairs).
bool& raw_call_blocks(const std::string& test) {
  static std::vector<std::pair<std::string, bool>> seen;
  for (auto& [name, blocks] : seen)
    if (name == test) return blocks;
  seen.emplace_back(test, false);
  return seen.back().second;
}

struct stats {
  double median = 0, min = 0, max = 0;
};

stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

struct row {
  std::string test;  // e.g. push, pull, staged_push, staged_pull, bidir, batch, latency
  int from = 0, to = 0;
  std::size_t bytes = 0;
  std::string unit;              // "GB/s" or "us"
  stats sluice, raw, raw_other;  // raw_other: raw::batch_call for batch rows (if any)
  std::string path;              // what copy_peer reported
  bool verified = true;
  bool blocked = false;      // a sluice copy call returned only after hold_guard released
  bool raw_blocked = false;  // the same for the raw call
};

//! The nvbandwidth test a row corresponds to, "-" where nvbandwidth has none.
const char* nvbandwidth_name(const std::string& test) {
  if (test == "push") return "device_to_device_memcpy_write_ce";
  if (test == "pull") return "device_to_device_memcpy_read_ce";
  if (test == "push_sm") return "device_to_device_memcpy_write_sm";
  if (test == "pull_sm") return "device_to_device_memcpy_read_sm";
  if (test == "bidir") return "device_to_device_bidirectional_memcpy_write_ce";
  return "-";
}

//! Byte i of the data of sample `seed` (tests/pattern.hpp: never periodic, so
//! a chunk copied to the wrong place or a stale chunk shows).
unsigned char pattern(std::size_t i, unsigned seed) {
  return sluice::test_data::pattern_byte(i, seed);
}

//! The raw side of a pair: its own streams, events, word and memory.
struct raw_side {
  int from, to;
  raw::stream_t on_src{}, on_dst{};
  raw::event_t start_src{}, end_src{}, start_dst{}, end_dst{};
  void* src = nullptr;  // on `from`
  void* dst = nullptr;  // on `to`
  std::uint64_t* word = nullptr;
  void* dev_word = nullptr;
};

class bench {
 public:
  bench(int from, int to, std::size_t max_bytes, int trials)
      : a_(from),
        b_(to),
        max_(max_bytes),
        trials_(trials),
        src_(a_, max_bytes),
        dst_(b_, max_bytes) {
    sluice::pinned_buffer<unsigned char> staging(max_);
    for (std::size_t i = 0; i < max_; ++i) staging.data()[i] = pattern(i, 1);
    sluice::stream s(a_);
    sluice::copy(s, src_.data(), staging.data(), max_);
    s.synchronize();

    r_.from = from;
    r_.to = to;
    raw::set_device(from);
    r_.on_src = raw::stream_create();
    r_.start_src = raw::event_create();
    r_.end_src = raw::event_create();
    r_.src = raw::device_malloc(max_);
    raw::memcpy_async(r_.src, staging.data(), max_, r_.on_src);
    raw::stream_synchronize(r_.on_src);
    raw::set_device(to);
    r_.on_dst = raw::stream_create();
    r_.start_dst = raw::event_create();
    r_.end_dst = raw::event_create();
    r_.dst = raw::device_malloc(max_);
    r_.word = raw::mapped_word(&r_.dev_word);
    sms_a_ = raw::multiprocessors(from);
    sms_b_ = raw::multiprocessors(to);
    raw::set_device(0);
  }

  ~bench() {
    // The raw side's objects (sluice's free themselves).
    for (const raw::stream_t st : {r_.on_src, r_.on_dst}) raw::stream_destroy(st);
    for (const raw::event_t e : {r_.start_src, r_.end_src, r_.start_dst, r_.end_dst})
      raw::event_destroy(e);
    raw::device_free(r_.src);
    raw::device_free(r_.dst);
    raw::free_mapped_word(r_.word);
  }
  bench(const bench&) = delete;
  bench& operator=(const bench&) = delete;

  //! GB/s of `reps` copies of `bytes` on a held stream, sluice's and raw's.
  //! raw_sm: the raw side is the bench's own SM copy kernel (p2p_sm.cu) on the
  //! same stream side, instead of raw::peer_copy_call.
  row copies(const std::string& test, std::size_t bytes, bool on_source, bool raw_sm = false) {
    const int reps =
        static_cast<int>(std::clamp<std::size_t>((std::size_t{512} << 20) / bytes, 4, 64));
    std::vector<double> s_gbps, r_gbps;
    row out{test, a_.id(), b_.id(), bytes, "GB/s", {}, {}, {}, "", true, false, false};
    raw_blocked_ = false;
    sluice::stream s(on_source ? a_ : b_);
    sluice::event start(s.device(), {true, false}), end(s.device(), {true, false});
    const raw::stream_t rs = on_source ? r_.on_src : r_.on_dst;
    const raw::event_t rstart = on_source ? r_.start_src : r_.start_dst;
    const raw::event_t rend = on_source ? r_.end_src : r_.end_dst;
    // `count` copies of each side, enqueued on its stream (the trials and the
    // data checks below).
    const auto sluice_copies = [&](int count) {
      for (int i = 0; i < count; ++i)
        out.path = to_string(sluice::copy_peer(s, r_.dst, b_, r_.src, a_, bytes));
    };
    const auto raw_copies = [&](int count) {
      if (raw_sm) {
        const int on = on_source ? a_.id() : b_.id();
        raw::set_device(on);  // a launch goes to the current device
        for (int i = 0; i < count; ++i)
          raw::sm_copy(r_.dst, r_.src, bytes, rs, on_source ? sms_a_ : sms_b_);
        raw::set_device(0);
      } else {
        for (int i = 0; i < count; ++i)
          raw::memcpy_peer_async(r_.dst, b_.id(), r_.src, a_.id(), bytes, rs);
      }
    };
    for (int t = 0; t < trials_ + 1; ++t) {  // the first trial of each side warms up
      {
        sluice::flag f(0);
        s.wait_value(f, 1);
        start.record(s);
        hold_guard guard([&f] { f.store(1); }, hold_limit);
        sluice_copies(reps);
        end.record(s);
        out.blocked = out.blocked || guard.fired();
        guard.release_now();
        end.synchronize();
        const double ms = sluice::elapsed(start, end).count();
        if (t > 0) s_gbps.push_back(static_cast<double>(bytes) * reps / (ms * 1e6));
      }
      {
        // Once a raw call of this kind was seen waiting for its held stream,
        // its later trials run unheld (each would cost the guard's 5 s): the
        // events then also time the gaps the blocking calls leave, which is
        // what a program using that call gets. The row says so (raw BLOCKED).
        const bool hold = !raw_call_blocks(test);
        __atomic_store_n(r_.word, std::uint64_t{hold ? 0U : 1U}, __ATOMIC_RELEASE);
        if (hold) raw::hold(rs, r_.dev_word, 1);
        raw::event_record(rstart, rs);
        hold_guard guard([this] { __atomic_store_n(r_.word, std::uint64_t{1}, __ATOMIC_RELEASE); },
                         hold_limit);
        raw_copies(reps);
        raw::event_record(rend, rs);
        if (guard.fired()) raw_call_blocks(test) = true;
        raw_blocked_ = raw_blocked_ || guard.fired() || !hold;
        guard.release_now();
        raw::event_synchronize(rend);
        const float ms = raw::elapsed_ms(rstart, rend);
        if (t > 0) r_gbps.push_back(static_cast<double>(bytes) * reps / (ms * 1e6));
      }
    }
    out.sluice = summarize(s_gbps);
    out.raw = summarize(r_gbps);
    out.raw_blocked = raw_blocked_;
    // Both sides copied the same memory (the raw side's own device buffers), so
    // a difference between them is the call's, not the placement's: separate
    // buffers made the same vendor call differ by up to 3.7 % either way on two
    // H100s (2026-11-25). Each side's data is checked on its own: the
    // destination is cleared, one copy of that side runs, it is read back.
    out.verified = verify_side(bytes, [&] {
      sluice_copies(1);
      s.synchronize();
    });
    out.verified = verify_side(bytes,
                               [&] {
                                 raw_copies(1);
                                 raw::stream_synchronize(rs);
                               }) &&
                   out.verified;
    return out;
  }

  //! Both directions at once: sluice pushes a->b and b->a on one stream of each
  //! device, held by one flag; raw the same with its own objects. GB/s in all.
  row bidirectional(std::size_t bytes) {
    const int reps = 4;
    row out{"bidir", a_.id(), b_.id(), bytes, "GB/s", {}, {}, {}, "", true, false, false};
    sluice::device_buffer<unsigned char> back_src(b_, bytes), back_dst(a_, bytes);
    sluice::stream sa(a_), sb(b_);
    sluice::event st_a(a_, {true, false}), en_a(a_, {true, false});
    sluice::event st_b(b_, {true, false}), en_b(b_, {true, false});
    void* raw_back_src = nullptr;
    void* raw_back_dst = nullptr;
    raw::set_device(b_.id());
    raw_back_src = raw::device_malloc(bytes);
    raw::set_device(a_.id());
    raw_back_dst = raw::device_malloc(bytes);
    std::vector<double> s_gbps, r_gbps;
    for (int t = 0; t < trials_ + 1; ++t) {
      {
        sluice::flag f(0);
        sa.wait_value(f, 1);
        sb.wait_value(f, 1);
        st_a.record(sa);
        st_b.record(sb);
        for (int i = 0; i < reps; ++i) {
          out.path = to_string(sluice::copy_peer(sa, dst_.data(), b_, src_.data(), a_, bytes));
          (void)sluice::copy_peer(sb, back_dst.data(), a_, back_src.data(), b_, bytes);
        }
        en_a.record(sa);
        en_b.record(sb);
        f.store(1);  // (the direct path only: no call here waits for its stream)
        en_a.synchronize();
        en_b.synchronize();
        const double ms =
            std::max(sluice::elapsed(st_a, en_a).count(), sluice::elapsed(st_b, en_b).count());
        if (t > 0) s_gbps.push_back(2.0 * static_cast<double>(bytes) * reps / (ms * 1e6));
      }
      {
        __atomic_store_n(r_.word, std::uint64_t{0}, __ATOMIC_RELEASE);
        for (const raw::stream_t rs : {r_.on_src, r_.on_dst}) raw::hold(rs, r_.dev_word, 1);
        raw::event_record(r_.start_src, r_.on_src);
        raw::event_record(r_.start_dst, r_.on_dst);
        for (int i = 0; i < reps; ++i) {
          raw::memcpy_peer_async(r_.dst, b_.id(), r_.src, a_.id(), bytes, r_.on_src);
          raw::memcpy_peer_async(raw_back_dst, a_.id(), raw_back_src, b_.id(), bytes, r_.on_dst);
        }
        raw::event_record(r_.end_src, r_.on_src);
        raw::event_record(r_.end_dst, r_.on_dst);
        __atomic_store_n(r_.word, std::uint64_t{1}, __ATOMIC_RELEASE);
        raw::event_synchronize(r_.end_src);
        raw::event_synchronize(r_.end_dst);
        const float ms_a = raw::elapsed_ms(r_.start_src, r_.end_src);
        const float ms_b = raw::elapsed_ms(r_.start_dst, r_.end_dst);
        const double ms = std::max(ms_a, ms_b);
        if (t > 0) r_gbps.push_back(2.0 * static_cast<double>(bytes) * reps / (ms * 1e6));
      }
    }
    raw::device_free(raw_back_src);
    raw::device_free(raw_back_dst);
    raw::set_device(0);
    out.sluice = summarize(s_gbps);
    out.raw = summarize(r_gbps);
    out.verified = verify(bytes);
    return out;
  }

  //! 64 pieces of 16 KiB (every other 16 KiB slot of 2 MiB), host wall time in
  //! us from the first enqueue to the end of synchronize().
  row batch(int rounds) {
    constexpr std::size_t pieces = 64, piece = 16 * 1024;
    row out{"batch", a_.id(), b_.id(), pieces * piece, "us", {}, {}, {}, "", true, false, false};
    std::vector<sluice::peer_piece> batch;
    std::vector<void*> rd;
    std::vector<const void*> rs;
    std::vector<std::size_t> sizes(pieces, piece);
    for (std::size_t i = 0; i < pieces; ++i) {
      batch.push_back({dst_.data() + 2 * i * piece, src_.data() + 2 * i * piece, piece});
      rd.push_back(static_cast<unsigned char*>(r_.dst) + 2 * i * piece);
      rs.push_back(static_cast<const unsigned char*>(r_.src) + 2 * i * piece);
    }
    sluice::stream s(a_);
    std::vector<double> s_us, r_us, rb_us;
    raw::set_device(a_.id());
    for (int t = 0; t < rounds + 5; ++t) {
      auto t0 = clock_type::now();
      out.path = to_string(sluice::copy_peer_batch(s, b_, a_, batch));
      s.synchronize();
      const double su = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
      t0 = clock_type::now();
      for (std::size_t i = 0; i < pieces; ++i)
        raw::memcpy_peer_async(rd[i], b_.id(), rs[i], a_.id(), piece, r_.on_src);
      raw::stream_synchronize(r_.on_src);
      const double ru = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
      double rbu = 0;
      if (raw::batch_call != nullptr) {
        t0 = clock_type::now();
        raw::memcpy_peer_batch(rd.data(), rs.data(), sizes.data(), pieces, b_.id(), a_.id(),
                               r_.on_src);
        raw::stream_synchronize(r_.on_src);
        rbu = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
      }
      if (t >= 5) {
        s_us.push_back(su);
        r_us.push_back(ru);
        rb_us.push_back(rbu);
      }
    }
    raw::set_device(0);
    out.sluice = summarize(s_us);
    out.raw = summarize(r_us);
    out.raw_other = summarize(rb_us);  // all 0 where the vendor has no batch call
    // Check the pieces of both sides.
    std::vector<unsigned char> got(2 * pieces * piece), raw_got(2 * pieces * piece);
    read_back(got.data(), raw_got.data(), got.size());
    for (std::size_t i = 0; i < pieces && out.verified; ++i)
      for (std::size_t k = 2 * i * piece; k < (2 * i + 1) * piece; ++k)
        if (got[k] != pattern(k, 1) || raw_got[k] != pattern(k, 1)) {
          out.verified = false;
          break;
        }
    return out;
  }

  //! 16-byte copy + synchronize, host wall time in us.
  row latency(int rounds) {
    row out{"latency", a_.id(), b_.id(), 16, "us", {}, {}, {}, "", true, false, false};
    sluice::stream s(a_);
    std::vector<double> s_us, r_us;
    raw::set_device(a_.id());
    // The two sides take turns going first (round by round), so neither always
    // runs right after the other's wake-up.
    for (int t = 0; t < rounds + 10; ++t) {
      const auto sluice_turn = [&] {
        const auto t0 = clock_type::now();
        out.path = to_string(sluice::copy_peer(s, dst_.data(), b_, src_.data(), a_, 16));
        s.synchronize();
        return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
      };
      const auto raw_turn = [&] {
        const auto t0 = clock_type::now();
        raw::memcpy_peer_async(r_.dst, b_.id(), r_.src, a_.id(), 16, r_.on_src);
        raw::stream_synchronize(r_.on_src);
        return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
      };
      double su = 0, ru = 0;
      if (t % 2 == 0) {
        su = sluice_turn();
        ru = raw_turn();
      } else {
        ru = raw_turn();
        su = sluice_turn();
      }
      if (t >= 10) {
        s_us.push_back(su);
        r_us.push_back(ru);
      }
    }
    raw::set_device(0);
    out.sluice = summarize(s_us);
    out.raw = summarize(r_us);
    out.verified = verify(16);
    return out;
  }

 private:
  //! Clears the raw side's destination, runs `copy_once` (one copy of r_.src
  //! into r_.dst, complete when it returns), and checks that the first `bytes`
  //! (at most 256 MiB) hold the source's pattern.
  bool verify_side(std::size_t bytes, const std::function<void()>& copy_once) {
    raw::set_device(b_.id());
    raw::memset_async(r_.dst, 0, bytes, r_.on_dst);
    raw::stream_synchronize(r_.on_dst);
    raw::set_device(0);
    copy_once();
    const std::size_t n = std::min<std::size_t>(bytes, std::size_t{256} << 20);
    std::vector<unsigned char> got(n);
    raw::set_device(b_.id());
    raw::memcpy_async(got.data(), r_.dst, n, r_.on_dst);
    raw::stream_synchronize(r_.on_dst);
    raw::set_device(0);
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != pattern(i, 1)) return false;
    return true;
  }

  //! The first `bytes` of both destinations hold the source's pattern.
  bool verify(std::size_t bytes) {
    const std::size_t n = std::min<std::size_t>(bytes, std::size_t{256} << 20);
    std::vector<unsigned char> got(n), raw_got(n);
    read_back(got.data(), raw_got.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != pattern(i, 1) || raw_got[i] != pattern(i, 1)) return false;
    return true;
  }

  //! The first n bytes of sluice's and raw's destinations, on a stream of the
  //! destination's device with that device current (its pool memory needs it).
  void read_back(unsigned char* got, unsigned char* raw_got, std::size_t n) {
    raw::set_device(b_.id());
    raw::memcpy_async(got, dst_.data(), n, r_.on_dst);
    raw::memcpy_async(raw_got, r_.dst, n, r_.on_dst);
    raw::stream_synchronize(r_.on_dst);
    raw::set_device(0);
  }

  sluice::device a_, b_;
  std::size_t max_;
  int trials_;
  sluice::device_buffer<unsigned char> src_, dst_;
  raw_side r_{};
  bool raw_blocked_ = false;
  int sms_a_ = 1, sms_b_ = 1;  // multiprocessors of the two devices (the raw SM kernel's grid)
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

//! nvbandwidth-style device x device matrices (rows: source, columns:
//! destination) of the push and pull rows at the largest size measured.
void print_matrices(const std::vector<row>& rows, int count) {
  for (const char* test : {"push", "pull"}) {
    std::size_t largest = 0;
    for (const row& r : rows)
      if (r.test == test) largest = std::max(largest, r.bytes);
    if (largest == 0) continue;
    for (int what = 0; what < 3; ++what) {
      std::printf("\n%s, %zu bytes, %s (%s): row = source, column = destination\n", test, largest,
                  what == 0   ? "sluice GB/s"
                  : what == 1 ? (std::string("raw ") + raw::peer_copy_call + " GB/s").c_str()
                              : "ratio sluice/raw",
                  nvbandwidth_name(test));
      std::printf("%6s", "");
      for (int to = 0; to < count; ++to) std::printf(" %9d", to);
      std::printf("\n");
      for (int from = 0; from < count; ++from) {
        std::printf("%6d", from);
        for (int to = 0; to < count; ++to) {
          const row* found = nullptr;
          for (const row& r : rows)
            if (r.test == test && r.bytes == largest && r.from == from && r.to == to) found = &r;
          if (found == nullptr) {
            std::printf(" %9s", "-");
            continue;
          }
          const double v = what == 0   ? found->sluice.median
                           : what == 1 ? found->raw.median
                                       : found->sluice.median / found->raw.median;
          std::printf(what == 2 ? " %9.3f" : " %9.1f", v);
        }
        std::printf("\n");
      }
    }
  }
}

int main(int argc, char** argv) {
  raw::set_program("sluice-bench-p2p");
  std::size_t max_mib = 1024;
  int trials = 5;
  std::string json_path, csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--max-mib=", 0) == 0)
      max_mib = std::strtoull(a.c_str() + 10, nullptr, 10);
    else if (a.rfind("--trials=", 0) == 0)
      trials = std::atoi(a.c_str() + 9);
    else if (a.rfind("--json=", 0) == 0)
      json_path = a.substr(7);
    else if (a.rfind("--csv=", 0) == 0)
      csv_path = a.substr(6);
    else {
      std::fprintf(stderr,
                   "usage: sluice-bench-p2p-%s [--max-mib=1024] [--trials=5] [--json=F] "
                   "[--csv=F]\n",
                   sluice::backend_name());
      return 2;
    }
  }
  if (max_mib < 2 || trials < 1) {
    std::fprintf(stderr,
                 "sluice-bench-p2p: --max-mib must be at least 2 (the batch rows use 2 MiB), "
                 "--trials at least 1\n");
    return 2;
  }
  const int count = sluice::device_count();
  if (count < 2) {
    std::printf("sluice-bench-p2p: needs 2 devices, found %d: nothing measured\n", count);
    return 77;
  }
  const std::size_t max_bytes = max_mib << 20;
  std::printf("sluice P2P bench: sluice vs raw %s in the same run\n", raw::vendor);
  std::printf("backend: %s\n", sluice::backend_version().c_str());
  for (int d = 0; d < count; ++d)
    std::printf("device %d: %s\n", d, sluice::device{d}.name().c_str());
  std::printf(
      "method: held stream (host-mapped word), start event, copies, end event; %d "
      "trials per side after one warm-up, alternating; median [min, max]; GB = 1e9 B; "
      "data checked after each size\n\n",
      trials);

  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is measured (a log to the end)
  std::printf("%-11s %4s %4s %12s %8s %9s %9s %7s %8s  %-8s %s\n", "test", "from", "to", "bytes",
              "unit", "sluice", "raw", "ratio", "path", "data", "nvbandwidth test");
  bool all_ok = true;
  const auto print = [&all_ok](const row& r) {
    // For GB/s higher is better: ratio sluice/raw; for us lower is better: raw/sluice.
    const double ratio =
        r.unit == "GB/s" ? r.sluice.median / r.raw.median : r.raw.median / r.sluice.median;
    std::printf("%-11s %4d %4d %12zu %8s %9s %9s %7.3f %8s  %-8s %s", r.test.c_str(), r.from, r.to,
                r.bytes, r.unit.c_str(), number(r.sluice.median).c_str(),
                number(r.raw.median).c_str(), ratio, r.path.c_str(), r.verified ? "ok" : "MISMATCH",
                nvbandwidth_name(r.test));
    if (r.blocked || r.raw_blocked)
      std::printf(
          "  BLOCKED: the %s copy call waited for its held stream (released after %lld s;"
          " a raw call seen to block runs unheld afterwards)",
          r.blocked && r.raw_blocked ? "sluice and the raw"
          : r.blocked                ? "sluice"
                                     : "raw",
          static_cast<long long>(hold_limit.count()));
    if (r.test == "batch" && raw::batch_call != nullptr)
      std::printf("  (raw %s %s us; 64 raw %s / sluice = %.2fx)", raw::batch_call,
                  number(r.raw_other.median).c_str(), raw::peer_copy_call,
                  r.raw.median / r.sluice.median);
    else if (r.test == "batch")
      std::printf("  (64 raw %s / sluice = %.2fx; %s has no batched peer copy)",
                  raw::peer_copy_call, r.raw.median / r.sluice.median, raw::vendor);
    std::printf("\n");
    all_ok = all_ok && r.verified;
  };
  std::vector<row> rows;
  const auto add = [&](row r) {
    print(r);
    rows.push_back(std::move(r));
  };
  std::vector<std::unique_ptr<bench>> pairs;
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b)
      if (a != b) pairs.push_back(std::make_unique<bench>(a, b, max_bytes, trials));
  // Staged first: peer access, once enabled, stays enabled for the process.
  for (auto& p : pairs) {
    for (std::size_t bytes = std::size_t{1} << 20;
         bytes <= std::min<std::size_t>(max_bytes, 256 << 20); bytes *= 4) {
      add(p->copies("staged_push", bytes, true));
      add(p->copies("staged_pull", bytes, false));
    }
  }
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b)
      if (a != b && sluice::link(sluice::device{a}, sluice::device{b}).peer_access_possible)
        sluice::enable_peer_access(sluice::device{a}, sluice::device{b});
  // The SM rows need a runtime that runs kernels (not the simulated one).
  const bool kernels_run = raw::kernels_run();
  if (!kernels_run)
    std::printf("(push_sm, pull_sm: skipped, this %s runtime launches no kernels)\n", raw::vendor);
  for (auto& p : pairs) {
    for (std::size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      add(p->copies("push", bytes, true));
      add(p->copies("pull", bytes, false));
      if (kernels_run) {
        add(p->copies("push_sm", bytes, true, true));
        add(p->copies("pull_sm", bytes, false, true));
      }
    }
  }
  add(pairs.front()->bidirectional(std::min<std::size_t>(max_bytes, 256 << 20)));
  for (auto& p : pairs) add(p->batch(200));
  for (auto& p : pairs) add(p->latency(1000));

  std::printf("(ratio: sluice/raw for GB/s, raw/sluice for us: above 1 means sluice is faster)\n");
  print_matrices(rows, count);
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path);
    csv << "test,from,to,bytes,unit,sluice_median,sluice_min,sluice_max,raw_median,raw_min,"
           "raw_max,raw_batch_median,path,verified,sluice_blocked,raw_blocked,nvbandwidth\n";
    for (const row& r : rows)
      csv << r.test << ',' << r.from << ',' << r.to << ',' << r.bytes << ',' << r.unit << ','
          << r.sluice.median << ',' << r.sluice.min << ',' << r.sluice.max << ',' << r.raw.median
          << ',' << r.raw.min << ',' << r.raw.max << ',' << r.raw_other.median << ',' << r.path
          << ',' << (r.verified ? "yes" : "no") << ',' << (r.blocked ? "yes" : "no") << ','
          << (r.raw_blocked ? "yes" : "no") << ',' << nvbandwidth_name(r.test) << '\n';
    std::printf("csv:  %s\n", csv_path.c_str());
  }
  if (!json_path.empty()) {
    // nlohmann-json: every string escaped, keys in this order.
    using json = nlohmann::ordered_json;
    json doc = {{"bench", "sluice-bench-p2p"},
                {"backend", sluice::backend_version()},
                {"trials", trials},
                {"rows", json::array()}};
    for (const row& r : rows)
      doc["rows"].push_back(
          {{"test", r.test},
           {"from", r.from},
           {"to", r.to},
           {"bytes", r.bytes},
           {"unit", r.unit},
           {"sluice", {{"median", r.sluice.median}, {"min", r.sluice.min}, {"max", r.sluice.max}}},
           {"raw", {{"median", r.raw.median}, {"min", r.raw.min}, {"max", r.raw.max}}},
           {"raw_batch_median", r.raw_other.median},
           {"path", r.path},
           {"verified", r.verified},
           {"sluice_blocked", r.blocked},
           {"raw_blocked", r.raw_blocked},
           {"nvbandwidth", nvbandwidth_name(r.test)}});
    std::ofstream js(json_path);
    js << doc.dump(2) << '\n';
    std::printf("json: %s\n", json_path.c_str());
  }
  return all_ok ? 0 : 1;
}
