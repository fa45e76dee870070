// sluice-bench-trace-cost-<backend>: what tracing (include/sluice/trace.hpp)
// costs while on, against the same sluice calls with tracing off, in the same
// run. Two kinds of rows:
//   - enqueue rows: N back-to-back calls timed on the host (the calls only);
//     what a traced call adds to the enqueueing thread;
//   - workload rows: a small pipeline timed from the first enqueue to the end
//     of synchronize(): what tracing adds to work that does something.
// Batches alternate off/on (first side alternating); the trace of each "on"
// batch is started before it and written (trace_end) after it, outside the
// timed region. Off-cost: the api_overhead bench's rows already include the
// one relaxed load a call pays while tracing is off.
//
// CUDA build: the raw_* rows make the same vendor calls on the stream's native
// handle, no sluice call, inside the same traced and untraced batches. Traced
// by the CUPTI source, they are what CUPTI itself, as sluice sets it up (its
// activity kinds and callbacks), costs a vendor call: the floor under any
// CUPTI-based trace. With the event source they are not traced (about 1.0).
//
//   sluice-bench-trace-cost-<backend> [--batches=N] [--mib=M] [--json=<file>]
#include "bench_common.hpp"

#include <sluice/sluice.hpp>
#if defined(SLUICE_TRACE_COST_RAW_CUDA)
#include "raw/cuda.hpp"

#include <sluice/native.hpp>
#endif

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

using sluice_bench::median;

using clock_type = std::chrono::steady_clock;

struct row {
  std::string id, unit;
  std::vector<double> off, on;
  double off_median() const { return median(off); }
  double on_median() const { return median(on); }
  double ratio() const { return on_median() / off_median(); }
};

struct options {
  int batches = 30;
  std::size_t mib = 16;
  std::string json;
};

class bench {
 public:
  explicit bench(options o)
      : o_(std::move(o)),
        trace_path_("/tmp/sluice-trace-cost-" + std::to_string(::getpid()) + ".json") {}

  //! `calls` back-to-back enqueues per batch, timed without the synchronize.
  row enqueue_row(const char* id, int calls, const std::function<void()>& call,
                  const std::function<void()>& sync) {
    row r{id, "ns per call", {}, {}};
    for (int b = -2; b < o_.batches; ++b) {  // 2 untimed warm-up batches per side
      for (int side = 0; side < 2; ++side) {
        const bool traced = ((b + side) % 2 + 2) % 2 == 1;
        if (traced) sluice::trace_begin(trace_path_);
        const auto t0 = clock_type::now();
        for (int i = 0; i < calls; ++i) call();
        const auto t1 = clock_type::now();
        sync();
        if (traced) operations_ += sluice::trace_end();
        const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
        if (b >= 0) (traced ? r.on : r.off).push_back(ns);
      }
    }
    return r;
  }

  //! The whole workload, enqueue to synchronize() returning, per batch.
  row workload_row(const char* id, const std::function<void()>& work) {
    row r{id, "us per run", {}, {}};
    for (int b = -2; b < o_.batches; ++b) {
      for (int side = 0; side < 2; ++side) {
        const bool traced = ((b + side) % 2 + 2) % 2 == 1;
        if (traced) sluice::trace_begin(trace_path_);
        const auto t0 = clock_type::now();
        work();
        const auto t1 = clock_type::now();
        if (traced) operations_ += sluice::trace_end();
        const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
        if (b >= 0) (traced ? r.on : r.off).push_back(us);
      }
    }
    return r;
  }

  std::size_t operations() const { return operations_; }
  const std::string& trace_path() const { return trace_path_; }

 private:
  options o_;
  std::string trace_path_;
  std::size_t operations_ = 0;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--batches=", 0) == 0) {
      o.batches = std::max(3, std::atoi(a.c_str() + 10));
    } else if (a.rfind("--mib=", 0) == 0) {
      o.mib = static_cast<std::size_t>(std::max(1, std::atoi(a.c_str() + 6)));
    } else if (a.rfind("--json=", 0) == 0) {
      o.json = a.substr(7);
    } else {
      std::fprintf(stderr, "usage: %s [--batches=N] [--mib=M] [--json=<file>]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (sluice::device_count() == 0) {
    std::printf("no %s device: nothing measured\n", sluice::backend_name());
    return 77;
  }
  if (sluice::tracing()) {
    std::fprintf(stderr, "unset SLUICE_TRACE: this bench turns tracing on and off itself\n");
    return 2;
  }
  const sluice::device dev{0};
  sluice::stream a{dev}, b{dev};
  sluice::event e{dev};
  sluice::device_buffer<unsigned char> small{dev, 64};
  sluice::pinned_buffer<unsigned char> host{64};
  const std::size_t bytes = o.mib << 20;
  sluice::device_buffer<unsigned char> x{dev, bytes}, y{dev, bytes};
  bench run(o);
  const auto sync_a = [&] { a.synchronize(); };

  std::vector<row> rows;
  rows.push_back(run.enqueue_row(
      "event_record", 1000, [&] { e.record(a); }, sync_a));
  e.record(b);
  rows.push_back(run.enqueue_row(
      "wait_event", 1000, [&] { a.wait(e); }, sync_a));
  rows.push_back(run.enqueue_row(
      "copy_64B_h2d", 100, [&] { sluice::copy(a, small.data(), host.data(), 64); }, sync_a));
  rows.push_back(run.enqueue_row(
      "fill_64B", 100, [&] { sluice::fill(a, small.data(), 1, 64); }, sync_a));
#if defined(SLUICE_TRACE_COST_RAW_CUDA)
  {
    using raw::check;
    raw::program = "sluice-bench-trace-cost-cuda";
    const cudaStream_t raw = sluice::native_handle(a);
    // An event of its own (sluice's event e keeps its own state).
    cudaEvent_t raw_event = nullptr;
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaEventCreateWithFlags(&raw_event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    rows.push_back(run.enqueue_row(
        "raw_event_record", 1000,
        [&] { check(cudaEventRecord(raw_event, raw), "cudaEventRecord"); }, sync_a));
    rows.push_back(run.enqueue_row(
        "raw_copy_64B_h2d", 100,
        [&] {
          check(cudaMemcpyAsync(small.data(), host.data(), 64, cudaMemcpyHostToDevice, raw),
                "cudaMemcpyAsync");
        },
        sync_a));
    rows.push_back(run.enqueue_row(
        "raw_fill_64B", 100,
        [&] { check(cudaMemsetAsync(small.data(), 1, 64, raw), "cudaMemsetAsync"); }, sync_a));
    check(cudaEventDestroy(raw_event), "cudaEventDestroy");
  }
#endif
  // One fill alone: traced, the first call after trace_begin. Against the
  // 100-call row it shows what a trace source costs once per trace rather
  // than per call (in the CUPTI source's first GPU runs the first traced fill
  // took 0.6 ms, and every traced batch about as much longer whatever its
  // call count: docs/results/runs/2026-11-27-cupti-trace-source.md).
  rows.push_back(run.enqueue_row(
      "fill_64B_first_call", 1, [&] { sluice::fill(a, small.data(), 1, 64); }, sync_a));
  // The same with an event record, which enqueues no device work: whether
  // that once-per-trace cost comes with the first device work or with the
  // first traced call of any kind.
  rows.push_back(run.enqueue_row(
      "record_first_call", 1, [&] { e.record(a); }, sync_a));
  // Two streams, 16 steps: fill a chunk on a, record, b waits, copy it on b.
  const std::size_t chunk = bytes / 16;
  rows.push_back(run.workload_row("pipeline_16_steps", [&] {
    for (std::size_t i = 0; i < 16; ++i) {
      sluice::fill(a, x.data() + i * chunk, static_cast<unsigned char>(i), chunk);
      e.record(a);
      b.wait(e);
      sluice::copy(b, y.data() + i * chunk, x.data() + i * chunk, chunk);
    }
    b.synchronize();
  }));
  // The same with many small operations: where per-operation cost shows most.
  rows.push_back(run.workload_row("pipeline_256_small_steps", [&] {
    for (int i = 0; i < 256; ++i) {
      sluice::fill(a, x.data() + static_cast<std::size_t>(i) * 4096, 1, 4096);
      e.record(a);
      b.wait(e);
      sluice::copy(b, y.data() + static_cast<std::size_t>(i) * 4096,
                   x.data() + static_cast<std::size_t>(i) * 4096, 4096);
    }
    b.synchronize();
  }));
  // Which source timed the traces (the last trace's host track says so).
  std::string source = "unknown";
  if (std::FILE* t = std::fopen(run.trace_path().c_str(), "r")) {
    std::string text;
    char buf[4096];
    for (std::size_t n = 0;
         (n = std::fread(buf, 1, sizeof buf, t)) > 0 && text.size() < (1U << 20);)
      text.append(buf, n);
    std::fclose(t);
    const std::string key = "\"trace_source\": \"";
    const std::size_t at = text.find(key);
    if (at != std::string::npos) {
      const std::size_t from = at + key.size();
      source = text.substr(from, text.find('"', from) - from);
    }
  }
  std::remove(run.trace_path().c_str());

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("sluice tracing cost: the same sluice calls with tracing on vs off (same run)\n");
  std::printf("date:    %s\nbackend: %s\ndevice:  %s\ntrace source: %s\n", date,
              sluice::backend_version().c_str(), dev.name().c_str(), source.c_str());
  std::printf(
      "method:  %d batches per side, alternating; trace written after each traced batch, "
      "outside the timed region; %zu traced operations written in all; workload buffers "
      "%zu MiB\n\n",
      o.batches, run.operations(), o.mib);
  std::printf("%-26s %-12s %12s %12s %8s\n", "row", "unit", "off(med)", "on(med)", "on/off");
  for (const row& r : rows)
    std::printf("%-26s %-12s %12.1f %12.1f %8.3f\n", r.id.c_str(), r.unit.c_str(), r.off_median(),
                r.on_median(), r.ratio());
  if (!o.json.empty()) {
    std::FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", o.json.c_str());
      return 1;
    }
    // nlohmann-json: the backend's version string escaped, keys in this order.
    using json = nlohmann::ordered_json;
    json doc = {{"benchmark", "sluice-bench-trace-cost"},
                {"date", date},
                {"backend", sluice::backend_version()},
                {"batches", o.batches},
                {"rows", json::array()}};
    const auto rounded = [](double value, double scale) {
      return std::round(value * scale) / scale;
    };
    for (const row& r : rows)
      doc["rows"].push_back({{"row", r.id},
                             {"unit", r.unit},
                             {"off_median", rounded(r.off_median(), 100)},
                             {"on_median", rounded(r.on_median(), 100)},
                             {"ratio", rounded(r.ratio(), 10000)}});
    const std::string text = doc.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  return 0;
}
