// sluice-bench-api-overhead: what each sluice call costs on top of the raw CUDA
// runtime call it wraps, both measured in the same run. The target:
// record, wait, ready and copy enqueue within 5% or 20 ns of raw (median).
//
//   sluice-bench-api-overhead [--json=FILE] [--markdown=FILE] [--batches=N] [--device=N]
//
// Method (the program prints it too):
// - Warm-up: the first calls take > 100 ms (context start, lazy loading, sluice's
//   device setup, driver entry points), so every op runs 5 untimed batches per
//   side before its first timed one.
// - Batches: N calls between two steady_clock reads; ns per call = time / N. N is
//   1000 for record, wait and ready, 100 for copy, fill, host_func and the
//   create/destroy pairs: a batch must never fill a stream's queue, since a full
//   queue blocks the caller and we would time the GPU instead of the call.
// - The side's stream is synchronized after every batch, outside the timed
//   region, so each batch starts on an idle stream and the GPU never lags behind.
// - Interleaving: per op, sluice and raw batches alternate and which side goes
//   first alternates too (SR RS SR ...), so clock drift, frequency changes and
//   cache state hit both sides equally. 100 timed batches per op and side (the
//   whole run takes seconds); the table shows the median and the min of the
//   per-call times.
// - Separate resources: the sluice side uses sluice streams/events/buffers; the
//   raw side its own cudaStreamCreateWithPriority(non-blocking) streams of the
//   same priority, cudaEventCreateWithFlags(disable timing) events, cudaMalloc
//   and cudaHostAlloc(portable|mapped) memory: nothing raw goes through sluice.
// - Raw calls check their return code, as real callers (and sluice) do.
// - Targets are reported, not asserted: a MISS exits 0; only errors exit non-zero.
#include "bench_common.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <cuda_runtime_api.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice_bench::median;
using sluice_bench::now_utc;

//! Objects this bench keeps alive on purpose until exit (see run_all): not
//! leaks to LeakSanitizer, which CI runs over this bench (stub runtime).
template <class T>
T& kept_until_exit(T* p) {
#if defined(__SANITIZE_ADDRESS__)
  __lsan_ignore_object(p);
#endif
  return *p;
}

}  // namespace

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int warmup_batches = 5;
constexpr int small_batch = 1000;  // calls that only record, wait or query
constexpr int work_batch = 100;    // calls that enqueue device work or create objects
constexpr std::size_t bytes = 64;  // size of every copy and fill

[[noreturn]] void cuda_fail(cudaError_t e, const char* call) {
  throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(e) + " (" +
                           cudaGetErrorName(e) + ")");
}
inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) [[unlikely]]
    cuda_fail(e, call);
}

void empty_host_fn(void*) {}

//! One measured operation, both sides.
struct op {
  const char* id;  // stable name, also the JSON key
  const char* sluice_call;
  const char* raw_call;
  int calls;      // per batch
  bool targeted;  // the 5% / 20 ns target applies
};

struct row {
  op what;
  std::vector<double> sluice_ns, raw_ns;  // per-call time of each batch
  double sluice_median = 0, sluice_min = 0, raw_median = 0, raw_min = 0;

  double diff() const { return sluice_median - raw_median; }
  double ratio() const { return raw_median > 0 ? sluice_median / raw_median : 0.0; }
  bool met() const { return diff() <= 20.0 || sluice_median <= 1.05 * raw_median; }
  const char* verdict() const { return !what.targeted ? "-" : met() ? "PASS" : "MISS"; }
};

//! ns per call of one batch; `settle` runs after the clock stops.
template <class Call, class Settle>
double time_batch(int calls, Call& call, Settle& settle) {
  const auto start = clock_type::now();
  for (int i = 0; i < calls; ++i) call();
  const auto stop = clock_type::now();
  settle();
  return std::chrono::duration<double, std::nano>(stop - start).count() / calls;
}

//! Warms both sides up, then times `batches` interleaved batches of each.
template <class SluiceCall, class SluiceSettle, class RawCall, class RawSettle>
row measure(op what, int batches, SluiceCall sluice_call, SluiceSettle sluice_settle,
            RawCall raw_call, RawSettle raw_settle) {
  row r{what, {}, {}};
  for (int i = 0; i < warmup_batches; ++i) {
    time_batch(r.what.calls, sluice_call, sluice_settle);
    time_batch(r.what.calls, raw_call, raw_settle);
  }
  for (int i = 0; i < batches; ++i) {
    if (i % 2 == 0) {
      r.sluice_ns.push_back(time_batch(r.what.calls, sluice_call, sluice_settle));
      r.raw_ns.push_back(time_batch(r.what.calls, raw_call, raw_settle));
    } else {
      r.raw_ns.push_back(time_batch(r.what.calls, raw_call, raw_settle));
      r.sluice_ns.push_back(time_batch(r.what.calls, sluice_call, sluice_settle));
    }
  }
  r.sluice_median = median(r.sluice_ns);
  r.raw_median = median(r.raw_ns);
  r.sluice_min = *std::min_element(r.sluice_ns.begin(), r.sluice_ns.end());
  r.raw_min = *std::min_element(r.raw_ns.begin(), r.raw_ns.end());
  return r;
}

//! The raw side: plain CUDA runtime objects, released in reverse order.
struct raw_side {
  cudaStream_t stream{}, other{};
  cudaEvent_t recorded{}, done{}, position{};
  void* host = nullptr;
  void* dev = nullptr;

  explicit raw_side(int priority) {
    check(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority),
          "cudaStreamCreateWithPriority");
    check(cudaStreamCreateWithPriority(&other, cudaStreamNonBlocking, priority),
          "cudaStreamCreateWithPriority");
    for (cudaEvent_t* e : {&recorded, &done, &position})
      check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cudaHostAlloc(&host, bytes, cudaHostAllocPortable | cudaHostAllocMapped),
          "cudaHostAlloc");
    check(cudaMalloc(&dev, bytes), "cudaMalloc");
  }
  ~raw_side() {
    (void)cudaStreamSynchronize(stream);
    (void)cudaStreamSynchronize(other);
    (void)cudaFree(dev);
    (void)cudaFreeHost(host);
    for (cudaEvent_t e : {position, done, recorded}) (void)cudaEventDestroy(e);
    (void)cudaStreamDestroy(other);
    (void)cudaStreamDestroy(stream);
  }
  raw_side(const raw_side&) = delete;
  raw_side& operator=(const raw_side&) = delete;
};

//! x rounded to `places` decimals (JSON numbers as the tables print them).
double rounded(double x, int places) {
  const double scale = std::pow(10.0, places);
  return std::round(x * scale) / scale;
}

struct run_info {
  std::string gpu, backend, date, command, build;
  int runtime = 0, driver = 0, device = 0, priority = 0, batches = 100;
  double context_ms = 0;
};

std::vector<std::string> method_lines(const run_info& info) {
  return {
      "warm-up: " + std::to_string(warmup_batches) +
          " untimed batches per op and side (first calls took " +
          std::to_string(static_cast<int>(info.context_ms)) + " ms here)",
      "batches: " + std::to_string(small_batch) + " calls (record, wait, ready) or " +
          std::to_string(work_batch) +
          " calls (copy, fill, host_func, create/destroy) between two steady_clock reads",
      "stream synchronized after every batch, outside the timed region",
      "sluice and raw batches interleaved, first side alternating; " +
          std::to_string(info.batches) +
          " timed batches per op and side; median and min of ns per call",
      "separate streams, both non-blocking with native priority " + std::to_string(info.priority) +
          "; the raw side is all raw CUDA objects",
      "target (record, wait, ready, copy): sluice median <= raw median + max(20 ns, 5%); "
      "reported, not asserted (a MISS does not change the exit code)",
  };
}

void print_table(std::FILE* out, const std::vector<row>& rows) {
  std::fprintf(out, "%-22s %11s %11s %9s %7s %11s %11s  %-6s %s\n", "operation", "sluice(med)",
               "raw(med)", "diff", "ratio", "sluice(min)", "raw(min)", "target", "result");
  for (const row& r : rows)
    std::fprintf(out, "%-22s %11.1f %11.1f %9.1f %7.3f %11.1f %11.1f  %-6s %s\n", r.what.id,
                 r.sluice_median, r.raw_median, r.diff(), r.ratio(), r.sluice_min, r.raw_min,
                 r.what.targeted ? "yes" : "no", r.verdict());
  std::fprintf(out, "(ns per call; diff = sluice - raw median; ratio = sluice / raw median)\n");
}

//! The rows as JSON (nlohmann-json: every string escaped, keys in this order).
void write_json(std::FILE* f, const run_info& info, const std::vector<row>& rows) {
  using json = nlohmann::ordered_json;
  const auto samples = [](const std::vector<double>& v) {
    json out = json::array();
    for (const double x : v) out.push_back(rounded(x, 2));
    return out;
  };
  json doc = {{"benchmark", "sluice-bench-api-overhead"},
              {"date", info.date},
              {"command", info.command},
              {"gpu", info.gpu},
              {"device", info.device},
              {"backend_version", info.backend},
              {"cuda_runtime_version", info.runtime},
              {"cuda_driver_version", info.driver},
              {"build", info.build},
              {"warmup_batches", warmup_batches},
              {"timed_batches", info.batches},
              {"native_priority", info.priority},
              {"method", method_lines(info)},
              {"unit", "ns per call"},
              {"rows", json::array()}};
  for (const row& r : rows)
    doc["rows"].push_back({{"op", r.what.id},
                           {"sluice_call", r.what.sluice_call},
                           {"raw_call", r.what.raw_call},
                           {"calls_per_batch", r.what.calls},
                           {"sluice_median_ns", rounded(r.sluice_median, 2)},
                           {"sluice_min_ns", rounded(r.sluice_min, 2)},
                           {"raw_median_ns", rounded(r.raw_median, 2)},
                           {"raw_min_ns", rounded(r.raw_min, 2)},
                           {"diff_ns", rounded(r.diff(), 2)},
                           {"ratio", rounded(r.ratio(), 4)},
                           {"target_applies", r.what.targeted},
                           {"target_met", r.what.targeted ? json(r.met()) : json(nullptr)},
                           {"sluice_ns", samples(r.sluice_ns)},
                           {"raw_ns", samples(r.raw_ns)}});
  const std::string text = doc.dump(2) + "\n";
  std::fwrite(text.data(), 1, text.size(), f);
}

void write_markdown(std::FILE* f, const run_info& info, const std::vector<row>& rows) {
  std::fprintf(f, "# sluice API overhead vs raw CUDA\n\n");
  std::fprintf(f,
               "- GPU: %s (device %d)\n- backend: %s\n- date: %s\n- build: %s\n- command: `%s`\n",
               info.gpu.c_str(), info.device, info.backend.c_str(), info.date.c_str(),
               info.build.c_str(), info.command.c_str());
  for (const auto& line : method_lines(info)) std::fprintf(f, "- %s\n", line.c_str());
  std::fprintf(
      f,
      "\n| operation | sluice call | raw call | sluice median ns | raw median ns | diff ns | ratio "
      "| sluice min ns | raw min ns | target | result |\n");
  std::fprintf(f, "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
  for (const row& r : rows)
    std::fprintf(f, "| %s | `%s` | `%s` | %.1f | %.1f | %.1f | %.3f | %.1f | %.1f | %s | %s |\n",
                 r.what.id, r.what.sluice_call, r.what.raw_call, r.sluice_median, r.raw_median,
                 r.diff(), r.ratio(), r.sluice_min, r.raw_min, r.what.targeted ? "yes" : "no",
                 r.verdict());
}

std::vector<row> run_all(const run_info& info, sluice::device dev) {
  const int n = info.batches;
  sluice::stream s(dev), other(dev);
  sluice::event recorded(dev), done(dev);  // default options: no timing, like the raw events
  // Deliberately never freed: sluice may hand frees to its own threads, which can then
  // race the runtime's unloading at exit and print "driver shutting down" (seen with
  // pinned_buffer). A leak at exit is harmless; a spurious error in the output is not.
  auto& host = kept_until_exit(new sluice::pinned_buffer<unsigned char>(bytes));
  auto& buf = kept_until_exit(new sluice::device_buffer<unsigned char>(dev, bytes));
  raw_side raw(info.priority);

  // The events the wait/ready rows use: recorded once on the other stream, and complete.
  done.record(other);
  other.synchronize();
  check(cudaEventRecord(raw.done, raw.other), "cudaEventRecord");
  check(cudaStreamSynchronize(raw.other), "cudaStreamSynchronize");

  auto sync_sluice = [&] { s.synchronize(); };
  auto sync_raw = [&] { check(cudaStreamSynchronize(raw.stream), "cudaStreamSynchronize"); };
  auto nothing = [] {};
  std::vector<row> rows;

  rows.push_back(measure(
      {"event_record", "event::record(s)", "cudaEventRecord", small_batch, true}, n,
      [&] { recorded.record(s); }, sync_sluice,
      [&] { check(cudaEventRecord(raw.recorded, raw.stream), "cudaEventRecord"); }, sync_raw));
  // Timing events cost more to record than the default ones (tracing uses them).
  {
    sluice::event_options timing;
    timing.timing = true;
    auto* timed = &kept_until_exit(new sluice::event(dev, timing));  // like the buffers above
    cudaEvent_t raw_timed{};
    check(cudaEventCreateWithFlags(&raw_timed, cudaEventDefault), "cudaEventCreateWithFlags");
    rows.push_back(measure(
        {"event_record_timing", "event::record(s), timing event", "cudaEventRecord, timing event",
         small_batch, false},
        n, [&] { timed->record(s); }, sync_sluice,
        [&] { check(cudaEventRecord(raw_timed, raw.stream), "cudaEventRecord"); }, sync_raw));
    check(cudaEventDestroy(raw_timed), "cudaEventDestroy");
  }
  rows.push_back(measure(
      {"wait_event", "s.wait(event)", "cudaStreamWaitEvent", small_batch, true}, n,
      [&] { s.wait(done); }, sync_sluice,
      [&] { check(cudaStreamWaitEvent(raw.stream, raw.done, 0), "cudaStreamWaitEvent"); },
      sync_raw));
  rows.push_back(measure(
      {"wait_stream", "s.wait(other)", "cudaEventRecord+cudaStreamWaitEvent", small_batch, true}, n,
      [&] { s.wait(other); }, sync_sluice,
      [&] {
        check(cudaEventRecord(raw.position, raw.other), "cudaEventRecord");
        check(cudaStreamWaitEvent(raw.stream, raw.position, 0), "cudaStreamWaitEvent");
      },
      sync_raw));
  // Both streams are idle (synchronized after every batch): ready must say so.
  rows.push_back(measure(
      {"stream_ready", "s.ready()", "cudaStreamQuery", small_batch, true}, n,
      [&] {
        if (!s.ready()) throw std::runtime_error("stream_ref::ready: an idle stream is busy");
      },
      sync_sluice, [&] { check(cudaStreamQuery(raw.stream), "cudaStreamQuery (idle stream)"); },
      sync_raw));
  rows.push_back(measure(
      {"event_ready", "event::ready()", "cudaEventQuery", small_batch, true}, n,
      [&] {
        if (!done.ready()) throw std::runtime_error("event::ready: a complete event is pending");
      },
      sync_sluice, [&] { check(cudaEventQuery(raw.done), "cudaEventQuery (complete event)"); },
      sync_raw));
  rows.push_back(measure(
      {"copy_64B_h2d", "sluice::copy pinned->device", "cudaMemcpyAsync(Default)", work_batch, true},
      n, [&] { sluice::copy(s, buf.data(), host.data(), bytes); }, sync_sluice,
      [&] {
        check(cudaMemcpyAsync(raw.dev, raw.host, bytes, cudaMemcpyDefault, raw.stream),
              "cudaMemcpyAsync");
      },
      sync_raw));
  // The same raw call on sluice's own buffers (device memory from sluice's
  // pool, pinned from sluice): what remains is the wrapper alone, without the
  // driver's cost of looking up a different kind of allocation.
  rows.push_back(measure(
      {"copy_64B_h2d_same_mem", "sluice::copy pinned->device",
       "cudaMemcpyAsync(Default) on sluice's buffers", work_batch, true},
      n, [&] { sluice::copy(s, buf.data(), host.data(), bytes); }, sync_sluice,
      [&] {
        check(cudaMemcpyAsync(buf.data(), host.data(), bytes, cudaMemcpyDefault, raw.stream),
              "cudaMemcpyAsync");
      },
      sync_raw));
  // The purest comparison: one sluice stream, one pair of sluice buffers; the
  // raw call goes through the stream's native handle. Batches of both sides run
  // on the same vendor stream, so only sluice's own code differs.
  {
    sluice::stream shared(dev);
    const cudaStream_t shared_native = sluice::native_handle(shared);
    const auto sync_shared = [&] { shared.synchronize(); };
    rows.push_back(measure(
        {"copy_64B_h2d_same_stream", "sluice::copy pinned->device",
         "cudaMemcpyAsync(Default), same stream and buffers", work_batch, true},
        n, [&] { sluice::copy(shared, buf.data(), host.data(), bytes); }, sync_shared,
        [&] {
          check(cudaMemcpyAsync(buf.data(), host.data(), bytes, cudaMemcpyDefault, shared_native),
                "cudaMemcpyAsync");
        },
        sync_shared));
    rows.push_back(measure(
        {"fill_64B_same_stream", "sluice::fill", "cudaMemsetAsync, same stream and buffer",
         work_batch, false},
        n, [&] { sluice::fill(shared, buf.data(), 0, bytes); }, sync_shared,
        [&] { check(cudaMemsetAsync(buf.data(), 0, bytes, shared_native), "cudaMemsetAsync"); },
        sync_shared));
    // The same fill on a stream borrowed from that native stream: sluice asks
    // the vendor whether the owner captures it (cudaStreamIsCapturing) before
    // each operation on a borrowed stream. Not targeted: what borrowing costs.
    const sluice::stream borrowed = sluice::borrow(dev, shared_native);
    rows.push_back(measure(
        {"fill_64B_borrowed_stream", "sluice::fill on a borrowed stream",
         "cudaMemsetAsync, same stream and buffer", work_batch, false},
        n, [&] { sluice::fill(borrowed, buf.data(), 0, bytes); }, sync_shared,
        [&] { check(cudaMemsetAsync(buf.data(), 0, bytes, shared_native), "cudaMemsetAsync"); },
        sync_shared));
    // A peer copy to the next device, where there is one with peer access, on
    // the same stream and buffers on both sides: only sluice's own code differs
    // (its checks, the path choice: a 64-byte push is on the copy engine, the
    // same cudaMemcpyPeerAsync). Not targeted: measured on two GPUs only.
    if (sluice::device_count() >= 2) {
      const sluice::device peer{(dev.id() + 1) % sluice::device_count()};
      if (sluice::link(dev, peer).peer_access_possible) {
        sluice::enable_peer_access(dev, peer);
        auto& far = kept_until_exit(new sluice::device_buffer<unsigned char>(peer, bytes));
        rows.push_back(measure(
            {"copy_peer_64B_same_stream", "sluice::copy_peer (push, direct)",
             "cudaMemcpyPeerAsync, same stream and buffers", work_batch, false},
            n, [&] { (void)sluice::copy_peer(shared, far.data(), peer, buf.data(), dev, bytes); },
            sync_shared,
            [&] {
              check(cudaMemcpyPeerAsync(far.data(), peer.id(), buf.data(), dev.id(), bytes,
                                        shared_native),
                    "cudaMemcpyPeerAsync");
            },
            sync_shared));
        rows.push_back(measure(
            {"copy_peer_round_trip", "sluice::copy_peer + s.synchronize()",
             "cudaMemcpyPeerAsync + cudaStreamSynchronize, same stream and buffers", work_batch,
             false},
            n,
            [&] {
              (void)sluice::copy_peer(shared, far.data(), peer, buf.data(), dev, bytes);
              shared.synchronize();
            },
            nothing,
            [&] {
              check(cudaMemcpyPeerAsync(far.data(), peer.id(), buf.data(), dev.id(), bytes,
                                        shared_native),
                    "cudaMemcpyPeerAsync");
              check(cudaStreamSynchronize(shared_native), "cudaStreamSynchronize");
            },
            nothing));
      }
    }
  }
  rows.push_back(measure(
      {"fill_64B", "sluice::fill", "cudaMemsetAsync", work_batch, false}, n,
      [&] { sluice::fill(s, buf.data(), 0, bytes); }, sync_sluice,
      [&] { check(cudaMemsetAsync(raw.dev, 0, bytes, raw.stream), "cudaMemsetAsync"); }, sync_raw));
  // sluice enqueues something else here: no vendor callback, but a signal (a stream
  // memory write that sluice's word watcher sees) and a wait until sluice's runner
  // thread ran the function, in one cuStreamBatchMemOp where the driver has it; so the
  // round trip is measured too. Back-to-back host functions share one signal and one
  // wait (a batch); host_func_after_fill measures the unbatched path, where other
  // work separates each host function. The raw side is cudaLaunchHostFunc, always.
  rows.push_back(measure(
      {"host_func_enqueue", "s.host_func([]{})", "cudaLaunchHostFunc", work_batch, false}, n,
      [&] { s.host_func([] {}); }, sync_sluice,
      [&] { check(cudaLaunchHostFunc(raw.stream, empty_host_fn, nullptr), "cudaLaunchHostFunc"); },
      sync_raw));
  rows.push_back(measure(
      {"host_func_after_fill", "sluice::fill + s.host_func([]{})",
       "cudaMemsetAsync + cudaLaunchHostFunc", work_batch, false},
      n,
      [&] {
        sluice::fill(s, buf.data(), 0, bytes);
        s.host_func([] {});
      },
      sync_sluice,
      [&] {
        check(cudaMemsetAsync(raw.dev, 0, bytes, raw.stream), "cudaMemsetAsync");
        check(cudaLaunchHostFunc(raw.stream, empty_host_fn, nullptr), "cudaLaunchHostFunc");
      },
      sync_raw));
  rows.push_back(measure(
      {"host_func_round_trip", "s.host_func([]{}) + s.synchronize()",
       "cudaLaunchHostFunc + cudaStreamSynchronize", work_batch, false},
      n,
      [&] {
        s.host_func([] {});
        s.synchronize();
      },
      nothing,
      [&] {
        check(cudaLaunchHostFunc(raw.stream, empty_host_fn, nullptr), "cudaLaunchHostFunc");
        check(cudaStreamSynchronize(raw.stream), "cudaStreamSynchronize");
      },
      nothing));
  rows.push_back(measure(
      {"stream_create_destroy", "sluice::stream{dev}", "cudaStreamCreateWithPriority+Destroy",
       work_batch, false},
      n, [&] { sluice::stream t(dev); }, nothing,
      [&] {
        cudaStream_t t{};
        check(cudaStreamCreateWithPriority(&t, cudaStreamNonBlocking, info.priority),
              "cudaStreamCreateWithPriority");
        check(cudaStreamDestroy(t), "cudaStreamDestroy");
      },
      nothing));
  rows.push_back(measure(
      {"event_create_destroy", "sluice::event{dev}", "cudaEventCreateWithFlags+Destroy", work_batch,
       false},
      n, [&] { sluice::event t(dev); }, nothing,
      [&] {
        cudaEvent_t t{};
        check(cudaEventCreateWithFlags(&t, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        check(cudaEventDestroy(t), "cudaEventDestroy");
      },
      nothing));
  return rows;
}

std::FILE* open_output(const std::string& path) {
  if (path.empty()) return nullptr;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  return f;
}

int usage(const char* bad) {
  std::fprintf(stderr,
               "api_overhead: unknown or bad argument '%s'\nusage: sluice-bench-api-overhead "
               "[--json=FILE] [--markdown=FILE] [--batches=N (>=1, default 100)] [--device=N]\n",
               bad);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  run_info info;
  std::string json_path, markdown_path;
  for (int i = 0; i < argc; ++i) info.command += (i > 0 ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto given = [&a](const char* prefix) { return a.rfind(prefix, 0) == 0; };
    auto value = [&a](const char* prefix) { return a.substr(std::strlen(prefix)); };
    try {
      if (given("--json="))
        json_path = value("--json=");
      else if (given("--markdown="))
        markdown_path = value("--markdown=");
      else if (given("--batches="))
        info.batches = std::stoi(value("--batches="));
      else if (given("--device="))
        info.device = std::stoi(value("--device="));
      else
        return usage(argv[i]);
    } catch (const std::exception&) {  // std::stoi: not a number
      return usage(argv[i]);
    }
    if (info.batches < 1 || info.device < 0) return usage(argv[i]);
  }

  try {
    // CI has no GPU: say so and succeed, with nothing else.
    if (sluice::device_count() == 0) {
      std::printf("no CUDA device: api_overhead needs one\n");
      return 0;
    }
    if (info.device >= sluice::device_count()) throw std::runtime_error("--device is out of range");
    std::FILE* json = open_output(json_path);  // bad paths fail before the measurement
    std::FILE* markdown = open_output(markdown_path);

    const auto started = clock_type::now();
    check(cudaSetDevice(info.device), "cudaSetDevice");
    check(cudaFree(nullptr), "cudaFree(0)");  // creates the context
    const sluice::device dev(info.device);
    info.context_ms =
        std::chrono::duration<double, std::milli>(clock_type::now() - started).count();
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, info.device), "cudaGetDeviceProperties");
    check(cudaRuntimeGetVersion(&info.runtime), "cudaRuntimeGetVersion");
    check(cudaDriverGetVersion(&info.driver), "cudaDriverGetVersion");
    info.gpu = props.name;
    info.backend = sluice::backend_version();
    info.date = now_utc();
#ifdef NDEBUG
    info.build = "NDEBUG (release)";
#else
    info.build = "NDEBUG not defined: not a Release build, numbers are not representative";
#endif
    {
      const sluice::stream probe(dev);  // the sluice side's priority: the raw side copies it
      info.priority = probe.native_priority();
    }

    std::printf("sluice API overhead vs raw CUDA runtime calls (same run)\n");
    std::printf(
        "command: %s\ndate:    %s\nGPU:     %s (device %d)\nbackend: %s\nbuild:   %s\nmethod:\n",
        info.command.c_str(), info.date.c_str(), info.gpu.c_str(), info.device,
        info.backend.c_str(), info.build.c_str());
    for (const auto& line : method_lines(info)) std::printf("  - %s\n", line.c_str());
    std::printf("\n");
    std::fflush(stdout);

    const std::vector<row> rows = run_all(info, dev);
    print_table(stdout, rows);
    int targeted = 0, met = 0;
    for (const row& r : rows) {
      targeted += r.what.targeted;
      met += r.what.targeted && r.met();
    }
    std::printf("target met by %d of %d targeted rows (reported, not asserted)\n", met, targeted);
    // The path sluice's host functions took (docs/design.md, "Which host
    // functions use the word watcher"): the host_func rows measure that path.
    const auto paths = sluice::detail::host_function_path_counts();
    std::printf(
        "host-function batches: %llu by signal (word watcher), %llu by the gate kernel, %llu by "
        "callback (%llu gate kernel launches failed)\n",
        paths.signal, paths.kernel, paths.callback, paths.kernel_failures);

    if (json != nullptr) {
      write_json(json, info, rows);
      if (std::fclose(json) != 0) throw std::runtime_error("cannot write " + json_path);
      std::printf("json:     %s\n", json_path.c_str());
    }
    if (markdown != nullptr) {
      write_markdown(markdown, info, rows);
      if (std::fclose(markdown) != 0) throw std::runtime_error("cannot write " + markdown_path);
      std::printf("markdown: %s\n", markdown_path.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "api_overhead: error: %s\n", e.what());
    return 1;
  }
}
