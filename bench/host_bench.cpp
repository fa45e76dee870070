// sluice-bench-host: costs of the host backend, next to the floors they are built on.
//
//   enqueue/<op>/held:{0,1}   time of the enqueue call alone, ns per operation (counter
//                             ns_per_op), measured over batches of 256 calls. held:0 lets the
//                             stream's worker drain the queue meanwhile; held:1 parks the
//                             stream behind a gate so only the enqueue path is measured.
//                             wait_event / wait_stream wait on a producer stream held by a
//                             gate (a real dependency); wait_event_complete waits on a
//                             completed event, which sluice skips.
//   baseline/memcpy_64B, baseline/memset_64B
//                             the same 64-byte copy / fill done inline, same batches.
//   ping_pong/same_device, ping_pong/cross_device
//                             A records e1, B waits on e1 and records e2, the host waits on e2;
//                             round trip (counters p50_us, p90_us over every round trip).
//   floor/atomic_ping_pong, floor/condvar_ping_pong
//                             two host threads passing a token: spinning on an atomic, and
//                             parking on a condition variable.
//   throughput/fill_64B/streams:{1,16}
//                             4096 fills of 64 bytes enqueued (round-robin over the streams),
//                             then every stream synchronized; ops_per_s includes completion.
//   baseline/memset_64B_x4096 the same 4096 fills inline.
//
// Every benchmark is timed manually (steady_clock around exactly the measured calls) and
// repeated 10 times; the console shows only the aggregates over the repetitions (median,
// mean, stddev, cv, min, max); --benchmark_out=FILE keeps every repetition. Results:
// docs/results/README.md, "Host backend"; the runs, with their method:
// docs/results/runs/2026-11-22-host-backend-bench-vm.md.
#include "range_map.hpp"

#include <sluice/sluice.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int batch = 256;               // enqueue calls per timed batch
constexpr int throughput_ops = 4096;     // fills per throughput sample
constexpr int repetitions = 10;          // aggregates are taken over these
constexpr std::size_t small_bytes = 64;  // size of every copy and fill

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

//! Value at quantile q (0..1) of the samples (nearest rank); the vector is reordered.
double quantile(std::vector<double>& samples, double q) {
  if (samples.empty()) return 0.0;
  auto rank = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                   samples.end());
  return samples[rank];
}

void report_error(benchmark::State& state, const std::exception& e) {
  state.SkipWithError(e.what());
}

// ---------------------------------------------------------------------------------------
// a. Enqueue cost per operation
// ---------------------------------------------------------------------------------------

struct no_hook {
  void operator()() const noexcept {}
};

//! Times `op(i)` for i in [0, batch) per iteration; the stream is synchronized outside the
//! timed region. With held, the stream is parked behind a gate while the batch is enqueued.
//! before() and after() run outside the timed region around each batch (after() runs
//! before the stream is synchronized).
template <class Op, class Before = no_hook, class After = no_hook>
void time_enqueue_batches(benchmark::State& state, const sluice::stream& s, Op op,
                          Before before = {}, After after = {}) {
  const bool held = state.range(0) != 0;
  sluice::flag gate{0};
  std::uint32_t round = 0;
  double total = 0.0;
  try {
    for (auto _ : state) {
      ++round;
      if (held) s.wait_value(gate, round);
      before();
      const auto t0 = clock_type::now();
      for (int i = 0; i < batch; ++i) op(i);
      const auto t1 = clock_type::now();
      after();
      if (held) gate.store(round);
      s.synchronize();
      const double elapsed = seconds_between(t0, t1);
      state.SetIterationTime(elapsed);
      total += elapsed;
    }
  } catch (const std::exception& e) {
    gate.store(UINT32_MAX);
    report_error(state, e);
    return;
  }
  state.counters["ns_per_op"] = total * 1e9 / (static_cast<double>(state.iterations()) * batch);
}

void enqueue_record(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  sluice::event e{sluice::device(0)};
  time_enqueue_batches(state, s, [&](int) { e.record(s); });
}

//! A producer stream with pending work: held by its own gate during each batch, so that
//! waits on it (or on an event recorded on it) are real dependencies and get enqueued.
struct pending_producer {
  sluice::stream stream{sluice::device(0)};
  sluice::flag gate{0};
  std::uint32_t round = 0;
  void hold() { stream.wait_value(gate, ++round); }
  void release() { gate.store(round); }
  ~pending_producer() {
    gate.store(UINT32_MAX);
    try {
      stream.synchronize();
    } catch (...) {
    }
  }
};

//! wait(event) on an event whose record is pending: the wait is enqueued.
void enqueue_wait_event(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  pending_producer producer;
  sluice::event e{sluice::device(0)};
  time_enqueue_batches(
      state, s, [&](int) { s.wait(e); },
      [&] {
        producer.hold();
        e.record(producer.stream);
      },
      [&] { producer.release(); });
}

//! wait(event) on a completed event: sluice enqueues nothing (fast path).
void enqueue_wait_event_complete(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  sluice::stream producer{sluice::device(0)};
  sluice::event e{sluice::device(0)};
  e.record(producer);
  e.synchronize();
  time_enqueue_batches(state, s, [&](int) { s.wait(e); });
}

//! wait(stream) on a stream with pending work: the wait is enqueued.
void enqueue_wait_stream(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  pending_producer producer;
  time_enqueue_batches(
      state, s, [&](int) { s.wait(producer.stream); }, [&] { producer.hold(); },
      [&] { producer.release(); });
}

void enqueue_copy_pinned_to_device(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  sluice::pinned_buffer<unsigned char> src(small_bytes);
  sluice::device_buffer<unsigned char> dst(sluice::device(0), small_bytes);
  std::fill(src.begin(), src.end(), static_cast<unsigned char>(7));
  time_enqueue_batches(state, s,
                       [&](int) { sluice::copy(s, dst.data(), src.data(), small_bytes); });
}

void enqueue_fill(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  sluice::device_buffer<unsigned char> dst(sluice::device(0), small_bytes);
  time_enqueue_batches(state, s, [&](int i) {
    sluice::fill(s, dst.data(), static_cast<unsigned char>(i), small_bytes);
  });
}

void enqueue_write_value(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  sluice::flag f{0};
  time_enqueue_batches(state, s, [&](int i) { s.write_value(f, static_cast<std::uint32_t>(i)); });
}

void enqueue_host_func(benchmark::State& state) {
  sluice::stream s{sluice::device(0)};
  time_enqueue_batches(state, s, [&](int) { s.host_func([] {}); });
}

//! The inline work the copy and fill stand for, timed the same way.
template <class Op>
void time_inline_batches(benchmark::State& state, Op op) {
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < batch; ++i) {
      op(i);
      benchmark::ClobberMemory();
    }
    const auto t1 = clock_type::now();
    const double elapsed = seconds_between(t0, t1);
    state.SetIterationTime(elapsed);
    total += elapsed;
  }
  state.counters["ns_per_op"] = total * 1e9 / (static_cast<double>(state.iterations()) * batch);
}

void baseline_memcpy(benchmark::State& state) {
  std::vector<unsigned char> src(small_bytes, 7), dst(small_bytes);
  benchmark::DoNotOptimize(src.data());
  benchmark::DoNotOptimize(dst.data());
  time_inline_batches(state, [&](int) { std::memcpy(dst.data(), src.data(), small_bytes); });
}

void baseline_memset(benchmark::State& state) {
  std::vector<unsigned char> dst(small_bytes);
  benchmark::DoNotOptimize(dst.data());
  time_inline_batches(
      state, [&](int i) { std::memset(dst.data(), static_cast<unsigned char>(i), small_bytes); });
}

// ---------------------------------------------------------------------------------------
// b. Cross-stream ping-pong and its floors
// ---------------------------------------------------------------------------------------

//! Times round trips; `round_trip()` is one of them. Counters: p50_us, p90_us, min_us.
template <class RoundTrip>
void time_round_trips(benchmark::State& state, RoundTrip round_trip) {
  std::vector<double> samples;
  samples.reserve(1 << 16);
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    round_trip();
    const auto t1 = clock_type::now();
    const double elapsed = seconds_between(t0, t1);
    state.SetIterationTime(elapsed);
    samples.push_back(elapsed * 1e6);
  }
  state.counters["p50_us"] = quantile(samples, 0.5);
  state.counters["p90_us"] = quantile(samples, 0.9);
  state.counters["min_us"] = quantile(samples, 0.0);
}

void ping_pong(benchmark::State& state) {
  const int device_b = static_cast<int>(state.range(0));
  try {
    if (device_b >= sluice::device_count()) {
      state.SkipWithError("needs two devices (SLUICE_HOST_DEVICES >= 2)");
      return;
    }
    sluice::stream a{sluice::device(0)};
    sluice::stream b{sluice::device(device_b)};
    sluice::event e1{sluice::device(0)};
    sluice::event e2{sluice::device(device_b)};
    auto round_trip = [&] {
      e1.record(a);
      b.wait(e1);
      e2.record(b);
      e2.synchronize();
    };
    for (int i = 0; i < 100; ++i) round_trip();  // warm-up: threads started, queues allocated
    time_round_trips(state, round_trip);
  } catch (const std::exception& e) {
    report_error(state, e);
  }
}

void floor_atomic_ping_pong(benchmark::State& state) {
  alignas(64) std::atomic<std::uint64_t> ping{0};
  alignas(64) std::atomic<std::uint64_t> pong{0};
  alignas(64) std::atomic<bool> stop{false};
  std::thread responder([&] {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t value;
      while ((value = ping.load(std::memory_order_acquire)) == seen) {
        if (stop.load(std::memory_order_relaxed)) return;
        cpu_relax();
      }
      seen = value;
      pong.store(value, std::memory_order_release);
    }
  });
  std::uint64_t token = 0;
  time_round_trips(state, [&] {
    ping.store(++token, std::memory_order_release);
    while (pong.load(std::memory_order_acquire) != token) cpu_relax();
  });
  stop.store(true, std::memory_order_relaxed);
  responder.join();
}

void floor_condvar_ping_pong(benchmark::State& state) {
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t ping = 0, pong = 0;
  bool stop = false;
  std::thread responder([&] {
    std::unique_lock<std::mutex> lock(mutex);
    std::uint64_t seen = 0;
    for (;;) {
      changed.wait(lock, [&] { return stop || ping != seen; });
      if (stop) return;
      seen = ping;
      pong = seen;
      changed.notify_all();
    }
  });
  std::uint64_t token = 0;
  time_round_trips(state, [&] {
    std::unique_lock<std::mutex> lock(mutex);
    ping = ++token;
    changed.notify_all();
    changed.wait(lock, [&] { return pong == token; });
  });
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  changed.notify_all();
  responder.join();
}

// ---------------------------------------------------------------------------------------
// c. Throughput of tiny operations, completion included
// ---------------------------------------------------------------------------------------

template <class Sample>
void time_throughput(benchmark::State& state, Sample sample) {
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    sample();
    const auto t1 = clock_type::now();
    const double elapsed = seconds_between(t0, t1);
    state.SetIterationTime(elapsed);
    total += elapsed;
  }
  const double ops = static_cast<double>(state.iterations()) * throughput_ops;
  state.counters["ops_per_s"] = ops / total;
  state.counters["ns_per_op"] = total * 1e9 / ops;
}

void throughput_fill(benchmark::State& state) {
  const auto stream_count = static_cast<std::size_t>(state.range(0));
  try {
    sluice::device_buffer<unsigned char> dst(sluice::device(0), stream_count * small_bytes);
    std::vector<sluice::stream> streams;
    streams.reserve(stream_count);
    for (std::size_t i = 0; i < stream_count; ++i) streams.emplace_back(sluice::device(0));
    time_throughput(state, [&] {
      for (int i = 0; i < throughput_ops; ++i) {
        const auto k = static_cast<std::size_t>(i) % stream_count;
        sluice::fill(streams[k], dst.data() + k * small_bytes, static_cast<unsigned char>(i),
                     small_bytes);
      }
      for (const auto& s : streams) s.synchronize();
    });
  } catch (const std::exception& e) {
    report_error(state, e);
  }
}

void baseline_memset_throughput(benchmark::State& state) {
  std::vector<unsigned char> dst(small_bytes);
  benchmark::DoNotOptimize(dst.data());
  time_throughput(state, [&] {
    for (int i = 0; i < throughput_ops; ++i) {
      std::memset(dst.data(), static_cast<unsigned char>(i), small_bytes);
      benchmark::ClobberMemory();
    }
  });
}

// ---------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------

//! min_time is measured (manual) time per repetition; the untimed synchronization around
//! enqueue batches makes the wall time several times longer.
benchmark::internal::Benchmark* common(benchmark::internal::Benchmark* b, double min_time) {
  // The console shows the aggregates only; --benchmark_out files keep every repetition.
  return b->UseManualTime()
      ->Repetitions(repetitions)
      ->DisplayAggregatesOnly(true)
      ->ComputeStatistics(
          "min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
      ->ComputeStatistics(
          "max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); })
      ->MinTime(min_time);
}

// The range check every copy and fill makes on both backends (src/range_map):
// range(0) distinct allocations looked up in turn. 1: always the per-thread
// cache; 8: never (the cache has 4 entries), so each lookup takes the shared
// lock and searches the map. No clock of the backend is involved.
void range_map_find(benchmark::State& state) {
  sluice::detail::range_map map;
  std::vector<std::vector<unsigned char>> blocks(8, std::vector<unsigned char>(4096));
  for (auto& b : blocks) map.add(b.data(), b.size(), &b, 0);
  const auto distinct = static_cast<std::size_t>(state.range(0));
  std::size_t i = 0;
  for (auto _ : state) {
    auto found = map.find(blocks[i].data() + 64, 64);
    benchmark::DoNotOptimize(found);
    i = i + 1 == distinct ? 0 : i + 1;
  }
}

void register_all() {
  struct enqueue_case {
    const char* name;
    void (*fn)(benchmark::State&);
  };
  const enqueue_case enqueue_cases[] = {
      {"enqueue/record", enqueue_record},
      {"enqueue/wait_event", enqueue_wait_event},
      {"enqueue/wait_event_complete", enqueue_wait_event_complete},
      {"enqueue/wait_stream", enqueue_wait_stream},
      {"enqueue/copy_pinned_to_device_64B", enqueue_copy_pinned_to_device},
      {"enqueue/fill_64B", enqueue_fill},
      {"enqueue/write_value", enqueue_write_value},
      {"enqueue/host_func_empty", enqueue_host_func},
  };
  for (const auto& c : enqueue_cases)
    common(benchmark::RegisterBenchmark(c.name, c.fn), 0.05)
        ->ArgName("held")
        ->Arg(0)
        ->Arg(1)
        ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("baseline/memcpy_64B", baseline_memcpy), 0.05)
      ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("baseline/memset_64B", baseline_memset), 0.05)
      ->Unit(benchmark::kMicrosecond);

  common(benchmark::RegisterBenchmark("ping_pong/same_device", ping_pong), 0.2)
      ->Arg(0)
      ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("ping_pong/cross_device", ping_pong), 0.2)
      ->Arg(1)
      ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("floor/atomic_ping_pong", floor_atomic_ping_pong), 0.2)
      ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("floor/condvar_ping_pong", floor_condvar_ping_pong), 0.2)
      ->Unit(benchmark::kMicrosecond);

  // Wall time: nothing asynchronous around the lookups.
  benchmark::RegisterBenchmark("range_map/find", range_map_find)
      ->Repetitions(repetitions)
      ->DisplayAggregatesOnly(true)
      ->MinTime(0.05)
      ->ArgName("distinct")
      ->Arg(1)
      ->Arg(8)
      ->Unit(benchmark::kNanosecond);
  common(benchmark::RegisterBenchmark("throughput/fill_64B", throughput_fill), 0.1)
      ->ArgName("streams")
      ->Arg(1)
      ->Arg(16)
      ->Unit(benchmark::kMicrosecond);
  common(benchmark::RegisterBenchmark("baseline/memset_64B_x4096", baseline_memset_throughput), 0.1)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    benchmark::AddCustomContext("sluice_backend", sluice::backend_name());
    benchmark::AddCustomContext("sluice_backend_version", sluice::backend_version());
    benchmark::AddCustomContext("sluice_devices", std::to_string(sluice::device_count()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice-bench-host: the backend cannot start: %s\n", e.what());
    return 1;
  }
  benchmark::AddCustomContext("hardware_threads",
                              std::to_string(std::thread::hardware_concurrency()));
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
