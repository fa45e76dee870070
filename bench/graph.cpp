// sluice-bench-graph-<backend>: a graph's launch against the same operations
// enqueued one by one, in the same run (`sluice bench graph`). Two programs
// of small operations on device memory:
//   chain:   64 operations on one stream: 32 pairs of a 64-byte fill of a
//            slot of buffer a and a copy of that slot into buffer b;
//   diamond: the same 64 operations on 4 branches of 16: the origin stream s
//            records an event that 3 other streams wait on, each branch does
//            its 8 pairs, and s waits on an event each other branch records;
//   kernels: where the vendor captures native work (CUDA), 64 tiny kernels
//            in a chain on s's native handle, the first 32 each writing a
//            slot of a, the last 32 each copying one into b
//            (graph_kernels.cu); captured by sluice::capture they are one
//            native vertex. Eager: the 64 launches each iteration.
// Per program, each side (eager: the calls made again every iteration;
// graph: the program captured once, then one graph_exec::launch(s) per
// iteration) is measured two ways:
//   enqueue:    the calling thread's time per iteration: M iterations between
//               two steady_clock reads, divided by M; the streams are
//               synchronized after every batch, outside the timed region;
//   end to end: one iteration from its first call to the return of
//               s.synchronize() (the streams idle before it).
// Warm-up batches first, then N timed batches per side, alternating which
// side goes first; medians (and minimums) over the batches.
// On CUDA a third side: the vendor's graph of the same program (raw CUDA
// stream capture on the same vendor streams, cudaGraphLaunch per iteration,
// graph_vendor.cpp), measured the same two ways.
// Target: a launch costs the calling thread at most 1/5 of the eager enqueues
// of the same program on the host backend (and at most 1/10 on a GPU, and at
// most the vendor's launch + 0.5 us where it is measured); the kernel chain's
// launch end to end at most 0.7 of the eager chain's.
// Reported, not asserted: a MISS exits 0. After the measurement each side runs
// once more with b cleared and b is read back and compared: a side whose
// operations did not run fails (exit 1). No device: exit 77.
//
//   sluice-bench-graph-<backend> [--batches=N] [--launches=M] [--json=FILE] [--csv=FILE]
#include "bench_common.hpp"
#include "graph_kernels.hpp"
#include "graph_vendor.hpp"

#include <sluice/graph.hpp>
#include <sluice/sluice.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice_bench::build_kind;
using sluice_bench::median;
using sluice_bench::now_utc;

using clock_type = std::chrono::steady_clock;
using byte = unsigned char;

constexpr int warmup_batches = 5;
constexpr std::size_t slots = 32;       // 32 pairs: 64 operations
constexpr std::size_t slot_bytes = 64;  // each fill and copy
constexpr std::size_t branches = 4;     // the diamond's
constexpr double kernels_end_to_end_target = 0.7;
#if defined(SLUICE_BACKEND_HOST)
constexpr double target_fraction = 1.0 / 5;
#else
constexpr double target_fraction = 1.0 / 10;
#endif

double minimum(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

struct options {
  int batches = 50;
  int launches = 20;
  std::string json;
  std::string csv;
  std::string command;
};

//! What both sides run: the device buffers, the streams and events a program uses.
struct resources {
  sluice::device dev;
  sluice::stream s;
  std::array<sluice::stream, branches - 1> others;
  sluice::event fork;
  std::array<sluice::event, branches - 1> joins;
  sluice::device_buffer<byte> a, b;
  explicit resources(sluice::device d)
      : dev(d),
        s(d),
        others{sluice::stream(d), sluice::stream(d), sluice::stream(d)},
        fork(d),
        joins{sluice::event(d), sluice::event(d), sluice::event(d)},
        a(d, slots * slot_bytes),
        b(d, slots * slot_bytes) {}
  void synchronize() {
    s.synchronize();
    for (auto& o : others) o.synchronize();
  }
};

//! Slot i's pair on stream x: a's slot filled with i + 1, then copied into b's.
void pair_on(resources& r, sluice::stream_ref x, std::size_t i) {
  byte* a = r.a.data() + i * slot_bytes;
  sluice::fill(x, a, static_cast<byte>(i + 1), slot_bytes);
  sluice::copy(x, r.b.data() + i * slot_bytes, a, slot_bytes);
}

void chain(resources& r) {
  for (std::size_t i = 0; i < slots; ++i) pair_on(r, r.s, i);
}

void diamond(resources& r) {
  r.fork.record(r.s);
  for (auto& o : r.others) o.wait(r.fork);
  constexpr std::size_t per_branch = slots / branches;
  for (std::size_t k = 0; k < branches; ++k) {
    sluice::stream_ref x = k == 0 ? sluice::stream_ref(r.s) : sluice::stream_ref(r.others[k - 1]);
    for (std::size_t j = 0; j < per_branch; ++j) pair_on(r, x, k * per_branch + j);
  }
  for (std::size_t k = 0; k + 1 < branches; ++k) {
    r.joins[k].record(r.others[k]);
    r.s.wait(r.joins[k]);
  }
}

void kernels(resources& r) {
  const int e = sluice_bench::tiny_kernels(sluice::native_handle(r.s), r.a.data(), r.b.data(),
                                           slots, slot_bytes);
  if (e != 0)
    throw std::runtime_error("a tiny kernel's launch failed (error " + std::to_string(e) + ")");
}

struct program {
  const char* name;
  void (*issue)(resources&);
  std::size_t operations;        // the calls issue() makes
  double end_to_end_target = 0;  // the graph's end to end at most this of the eager's; 0: none
};

std::vector<program> programs() {
  std::vector<program> p{{"chain_64", chain, 2 * slots},
                         {"diamond_4x16", diamond, 2 * slots + 1 + 3 * (branches - 1)}};
  if (sluice_bench::have_tiny_kernels())
    p.push_back({"kernels_64", kernels, 2 * slots, kernels_end_to_end_target});
  return p;
}

struct row {
  std::string name;
  std::size_t operations = 0;
  std::size_t vertices = 0;
  std::string how;                          // graph_exec::how(): native or sluice's replay, and why
  std::vector<double> eager_ns, launch_ns;  // the calling thread, per iteration
  std::vector<double> eager_e2e_us, graph_e2e_us;
  std::vector<double> raw_ns, raw_e2e_us;  // the vendor's graph, where measured
  double end_to_end_target = 0;
  double fraction() const { return median(launch_ns) / median(eager_ns); }
  double end_to_end_fraction() const { return median(graph_e2e_us) / median(eager_e2e_us); }
  double over_raw_ns() const { return raw_ns.empty() ? 0.0 : median(launch_ns) - median(raw_ns); }
  bool met() const {
    return fraction() <= target_fraction && over_raw_ns() <= 500.0 &&
           (end_to_end_target == 0 || end_to_end_fraction() <= end_to_end_target);
  }
};

//! ns per iteration of `launches` iterations; the streams synchronized after the clock stops.
double time_batch(resources& r, int launches, const std::function<void()>& iteration) {
  const auto start = clock_type::now();
  for (int i = 0; i < launches; ++i) iteration();
  const auto stop = clock_type::now();
  r.synchronize();
  return std::chrono::duration<double, std::nano>(stop - start).count() / launches;
}

//! us from an iteration's first call to the return of s.synchronize().
double time_end_to_end(resources& r, const std::function<void()>& iteration) {
  const auto start = clock_type::now();
  iteration();
  r.s.synchronize();
  const auto stop = clock_type::now();
  r.synchronize();
  return std::chrono::duration<double, std::micro>(stop - start).count();
}

//! b cleared, one iteration, b read back: every slot holds its value.
bool check(resources& r, const std::function<void()>& iteration, const char* what) {
  sluice::fill(r.s, r.b.data(), 0, slots * slot_bytes);
  r.s.synchronize();
  iteration();
  sluice::pinned_buffer<byte> back(slots * slot_bytes);
  sluice::copy(r.s, back.data(), r.b.data(), slots * slot_bytes);
  r.synchronize();
  for (std::size_t i = 0; i < slots * slot_bytes; ++i)
    if (back[i] != static_cast<byte>(i / slot_bytes + 1)) {
      std::printf("check: %s: byte %zu of b is %d, expected %zu: its operations did not all run\n",
                  what, i, back[i], i / slot_bytes + 1);
      return false;
    }
  return true;
}

// What the vendor side is, or why there is none (make_vendor_graph).
std::string raw_why;

bool measure(const options& o, resources& r, std::vector<row>& rows) {
  bool ok = true;
  for (const program& p : programs()) {
    row w;
    w.name = p.name;
    w.operations = p.operations;
    w.end_to_end_target = p.end_to_end_target;
    sluice::graph g = [&] {
      sluice::capture cap(r.s);
      p.issue(r);
      return cap.end();
    }();
    w.vertices = g.size();
    const sluice::graph_exec exec = g.instantiate();
    w.how = exec.how();
    const std::function<void()> eager = [&r, &p] { p.issue(r); };
    const std::function<void()> launch = [&r, &exec] { exec.launch(r.s); };
    const std::array<sluice::stream_ref, branches - 1> others{r.others[0], r.others[1],
                                                              r.others[2]};
    sluice_bench::vendor_program vp;
    vp.diamond = p.issue == diamond;
    vp.kernels = p.issue == kernels;
    const sluice::stream_ref origin = r.s;
    vp.s = &origin;
    vp.others = others.data();
    vp.branches = branches;
    vp.a = r.a.data();
    vp.b = r.b.data();
    vp.slots = slots;
    vp.slot_bytes = slot_bytes;
    const auto vendor = sluice_bench::make_vendor_graph(vp, raw_why);
    const std::function<void()> raw = [&vendor] { vendor->launch(); };
    const int sides = vendor ? 3 : 2;
    for (int b = 0; b < warmup_batches; ++b) {
      time_batch(r, o.launches, eager);
      time_batch(r, o.launches, launch);
      if (vendor) time_batch(r, o.launches, raw);
    }
    for (int b = 0; b < o.batches; ++b) {
      for (int k = 0; k < sides; ++k) {  // which side goes first rotates
        const int side = (b + k) % sides;
        if (side == 0) {
          w.eager_ns.push_back(time_batch(r, o.launches, eager));
          w.eager_e2e_us.push_back(time_end_to_end(r, eager));
        } else if (side == 1) {
          w.launch_ns.push_back(time_batch(r, o.launches, launch));
          w.graph_e2e_us.push_back(time_end_to_end(r, launch));
        } else {
          w.raw_ns.push_back(time_batch(r, o.launches, raw));
          w.raw_e2e_us.push_back(time_end_to_end(r, raw));
        }
      }
    }
    ok = check(r, eager, (w.name + " eager").c_str()) && ok;
    ok = check(r, launch, (w.name + " graph").c_str()) && ok;
    if (vendor) ok = check(r, raw, (w.name + " vendor graph").c_str()) && ok;
    rows.push_back(std::move(w));
  }
  return ok;
}

const char* raw_graph_side() {
  return raw_why.empty() ? "cudaGraphLaunch of the same program captured by cudaStreamBeginCapture "
                           "on the same vendor streams"
                         : raw_why.c_str();
}

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); }

void write_outputs(const options& o, const std::string& date, const sluice::device& dev,
                   const std::vector<row>& rows) {
  if (!o.json.empty()) {
    nlohmann::json j;
    j["bench"] = "graph";
    j["date"] = date;
    j["command"] = o.command;
    j["backend"] = sluice::backend_name();
    j["backend_version"] = sluice::backend_version();
    j["device"] = dev.name();
    j["build"] = build_kind();
    j["batches"] = o.batches;
    j["launches_per_batch"] = o.launches;
    j["target"] = "launch at most " + std::to_string(target_fraction) + " of the eager enqueues";
    j["raw_vendor_graph"] = raw_graph_side();
    for (const row& w : rows)
      j["rows"].push_back({{"program", w.name},
                           {"operations", w.operations},
                           {"vertices", w.vertices},
                           {"launches_run_as", w.how},
                           {"eager_enqueue_median_ns", median(w.eager_ns)},
                           {"eager_enqueue_min_ns", minimum(w.eager_ns)},
                           {"launch_median_ns", median(w.launch_ns)},
                           {"launch_min_ns", minimum(w.launch_ns)},
                           {"launch_fraction_of_eager", w.fraction()},
                           {"eager_end_to_end_median_us", median(w.eager_e2e_us)},
                           {"graph_end_to_end_median_us", median(w.graph_e2e_us)},
                           {"vendor_launch_median_ns", median_or_zero(w.raw_ns)},
                           {"vendor_end_to_end_median_us", median_or_zero(w.raw_e2e_us)},
                           {"launch_minus_vendor_ns", w.over_raw_ns()},
                           {"end_to_end_fraction_of_eager", w.end_to_end_fraction()},
                           {"end_to_end_target", w.end_to_end_target},
                           {"met", w.met()}});
    std::ofstream f(o.json);
    f << j.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write " + o.json);
    std::printf("json: %s\n", o.json.c_str());
  }
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    f << "program,operations,vertices,eager_enqueue_median_ns,launch_median_ns,"
         "launch_fraction_of_eager,eager_end_to_end_median_us,graph_end_to_end_median_us,"
         "vendor_launch_median_ns,vendor_end_to_end_median_us,met\n";
    for (const row& w : rows)
      f << w.name << ',' << w.operations << ',' << w.vertices << ',' << median(w.eager_ns) << ','
        << median(w.launch_ns) << ',' << w.fraction() << ',' << median(w.eager_e2e_us) << ','
        << median(w.graph_e2e_us) << ',' << median_or_zero(w.raw_ns) << ','
        << median_or_zero(w.raw_e2e_us) << ',' << (w.met() ? "true" : "false") << '\n';
    if (!f) throw std::runtime_error("cannot write " + o.csv);
    std::printf("csv: %s\n", o.csv.c_str());
  }
}

void check_writable(const std::string& path) {  // a bad path fails before the measurement
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  std::fclose(f);
}

int run(const options& o) {
  check_writable(o.json);
  check_writable(o.csv);
  const sluice::device dev(0);
  resources r(dev);
  const std::string date = now_utc();
  std::printf(
      "sluice graphs: one graph_exec::launch against the same operations enqueued one "
      "by one (same run)\n");
  std::printf("command: %s\ndate:    %s\nbackend: %s\ndevice:  %s\nbuild:   %s\nmethod:\n",
              o.command.c_str(), date.c_str(), sluice::backend_version().c_str(),
              dev.name().c_str(), build_kind());
  std::printf(
      "  - chain_64: 32 pairs of a %zu-byte fill and a copy of it, on one stream\n"
      "  - diamond_4x16: the same pairs on 4 branches of 16 operations: a fork event that 3 "
      "streams wait on, a join event each records that the origin waits on\n"
      "  - kernels_64: %s\n"
      "  - enqueue: the calling thread's time per iteration, %d iterations between two "
      "steady_clock reads; the streams synchronized after each batch, outside the timed region\n"
      "  - end to end: one iteration to the return of s.synchronize(), the streams idle before\n"
      "  - %d warm-up batches per side, then %d timed batches per side, alternating which side "
      "goes first; medians over the batches\n"
      "  - target: a launch at most %.2f of the eager enqueues (median), and at most the "
      "vendor's launch + 500 ns where that is measured; reported, not asserted\n",
      slot_bytes,
      sluice_bench::have_tiny_kernels()
          ? "64 tiny kernels (one block, 64 threads) in a chain on the origin's native handle; "
            "also: the graph's end to end at most 0.7 of the eager chain's"
          : "not on this backend (no native work captured here)",
      o.launches, warmup_batches, o.batches, target_fraction);
  std::fflush(stdout);
  std::vector<row> rows;
  const bool ok = measure(o, r, rows);
  std::printf("  - vendor graph: %s\n\n", raw_graph_side());
  std::printf("%-14s %4s %8s %13s %13s %9s %13s %12s %12s %12s %8s %s\n", "program", "ops",
              "vertices", "eager med ns", "launch med ns", "fraction", "vendor med ns",
              "eager e2e us", "graph e2e us", "vendor e2e", "e2e frac", "target");
  int met = 0;
  for (const row& w : rows) {
    met += w.met();
    std::printf("%-14s %4zu %8zu %13.1f %13.1f %9.3f %13.1f %12.2f %12.2f %12.2f %8.3f %s\n",
                w.name.c_str(), w.operations, w.vertices, median(w.eager_ns), median(w.launch_ns),
                w.fraction(), median_or_zero(w.raw_ns), median(w.eager_e2e_us),
                median(w.graph_e2e_us), median_or_zero(w.raw_e2e_us), w.end_to_end_fraction(),
                w.met() ? "PASS" : "MISS");
  }
  for (const row& w : rows) std::printf("%s: launches run as %s\n", w.name.c_str(), w.how.c_str());
  std::printf("target met by %d of %zu programs (reported, not asserted)\n", met, rows.size());
  std::printf("data: %s\n", ok ? "both sides ran every operation (checked)" : "FAIL");
  write_outputs(o, date, dev, rows);
  return ok ? 0 : 1;
}

int usage(const char* name, const char* bad) {
  std::fprintf(stderr,
               "%s: unknown or bad argument '%s'\nusage: %s [--batches=N (>=1, default 50)] "
               "[--launches=M (1..1000, default 20)] [--json=FILE] [--csv=FILE]\n",
               name, bad, name);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 0; i < argc; ++i) o.command += (i > 0 ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    try {
      if (a.rfind("--batches=", 0) == 0)
        o.batches = std::stoi(a.substr(10));
      else if (a.rfind("--launches=", 0) == 0)
        o.launches = std::stoi(a.substr(11));
      else if (a.rfind("--json=", 0) == 0 && a.size() > 7)
        o.json = a.substr(7);
      else if (a.rfind("--csv=", 0) == 0 && a.size() > 6)
        o.csv = a.substr(6);
      else
        return usage(argv[0], argv[i]);
    } catch (const std::exception&) {  // std::stoi: not a number
      return usage(argv[0], argv[i]);
    }
    if (o.batches < 1 || o.launches < 1 || o.launches > 1000) return usage(argv[0], argv[i]);
  }
  try {
    if (sluice::device_count() == 0) {
      std::printf("no %s device: nothing measured\n", sluice::backend_name());
      return 77;
    }
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph bench: error: %s\n", e.what());
    return 1;
  }
}
