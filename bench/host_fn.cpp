// sluice-bench-host-fn-cuda: what host functions cost besides their round trip
// (the round trip itself: sluice-bench-api-overhead).
//
//   idle     With --streams streams alive, each having run a host function,
//            and no host function pending: the process's CPU time (utime +
//            stime from /proc/self/stat, and getrusage) over --idle-seconds of
//            wall time. Target: <= 1 % of one core. Asserted: exit 1 when
//            missed (ctest sim.bench.host_fn.idle.cuda runs it in CI).
//   pending  The same over --pending-seconds while one host function is
//            pending behind a stream held on a flag: what the word watcher's
//            polling costs while it has something to watch (reported only).
//   fanout   K streams each hold a host function behind a wait on one flag;
//            the flag is stored and the clock runs until every host function
//            has run (each increments a counter; the main thread polls it).
//            Median and min over --trials after 10 untimed ones, for K = 1,
//            K = the device's independent_stream_limit (CUDA: 32 hardware
//            queues) and K = --fanout. Next to sluice, in the same run, on raw
//            CUDA streams with the same hold (cuStreamWaitValue64 on a mapped
//            word): "signal", the device's part alone (each stream stores a
//            mapped word, then waits on a gate word, as sluice's host function
//            does; the clock stops when the host has seen every word), and
//            "launch", cudaLaunchHostFunc (CUDA's callback thread), and
//            "gated": as "signal" but the host opens each gate as soon as it
//            sees that stream's signal, as sluice's runners do (measurable
//            beyond the limit, where "signal" is not). sluice minus signal is
//            sluice's host side.
//   blocking The same with functions that block for --block-us each (a sleep
//            inside the function: its own work, as I/O would be; not a
//            synchronization), sluice and cudaLaunchHostFunc, --block-trials
//            each: whether functions of many streams run at once or one after
//            another (CUDA's one callback thread).
//            Target: K = --fanout completes within 2x of K = 1;
//            reported with MET or MISS, not asserted. Beyond the device's
//            independent_stream_limit streams share hardware queues and a held
//            stream's gate wait holds the stream behind it in its queue, so
//            K = that limit is shown too: it separates sluice's host side from
//            the queues' sharing.
//   blocked  HOST-2's pattern, 5 rounds at K = 12 and K = the limit (or at
//            --blocked=K alone, also beyond the limit): sluice's K host
//            functions each blocking until all entered, and raw streams each
//            storing a signal word and then waiting on a closed gate (how
//            many signals the host sees while every gate is closed). Exit 1
//            when sluice's count is short.
//   bounds   Every part is bounded and none can hang the bench: stdout is line
//            buffered and each fanout part (sluice, signal, launch) is printed
//            as soon as it is measured. The raw "signal" reference stops at its
//            first trial whose signals are not all seen within 5 s (beyond the
//            limit a raw stream's gate wait holds its queue-mate's signal and
//            the host opens gates only once it saw every signal: seen on 2x
//            H100 at K = 64) and prints "not measurable" with how many it saw;
//            "launch" enqueues on a thread of its own and stops when the
//            enqueues do not return within 5 s (CUDA blocks the 57th callback
//            pending behind held work). A sluice fanout trial whose functions
//            have not all run within 10 s ends the process (exit 1). Over all,
//            --time-limit (default 240 s) ends it with exit 3 and the part's
//            name. A raw reference that is not measurable is not a failure.
#include <sluice/detail/interop.hpp>
#include <sluice/sluice.hpp>

#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

//! The process's CPU time: utime + stime of /proc/self/stat (clock ticks) in
//! seconds, and getrusage's (microsecond resolution) in seconds.
struct cpu_time {
  double stat_s = 0;
  double rusage_s = 0;
};

cpu_time read_cpu() {
  cpu_time t;
  std::ifstream in("/proc/self/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces), from field 3 (state):
  // utime is field 14, stime field 15.
  const auto close = all.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(all.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
      if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
    }
    t.stat_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  t.rusage_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
               static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  return t;
}

//! CPU used over `seconds` of wall time, in % of one core (stat, rusage).
std::pair<double, double> cpu_over(double seconds) {
  const cpu_time a = read_cpu();
  const auto t0 = clock_type::now();
  // A measurement window, not a synchronization: nothing waits for anything here.
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  const cpu_time b = read_cpu();
  return {100.0 * (b.stat_s - a.stat_s) / wall, 100.0 * (b.rusage_s - a.rusage_s) / wall};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

//! A measurement, or why there is none (`why` set: not measurable).
struct fanout_result {
  double median_us = 0, min_us = 0;
  std::string why;
};

fanout_result summarize(const std::vector<double>& us) {
  return {median(us), *std::min_element(us.begin(), us.end()), {}};
}

fanout_result not_measurable(std::string why) {
  fanout_result r;
  r.why = std::move(why);
  return r;
}

//! "median / min" or "n/m" in a column of 18.
std::string cell(const fanout_result& r) {
  char b[64];
  if (r.why.empty())
    std::snprintf(b, sizeof b, "%9.1f / %6.1f", r.median_us, r.min_us);
  else
    std::snprintf(b, sizeof b, "%18s", "n/m");
  return b;
}

//! One part's line, printed as soon as it is measured.
void print_part(const char* what, const char* part, std::size_t k, const fanout_result& r) {
  if (r.why.empty())
    std::printf("%s K=%zu %s: %.1f / %.1f us\n", what, k, part, r.median_us, r.min_us);
  else
    std::printf("%s K=%zu %s: not measurable: %s\n", what, k, part, r.why.c_str());
}

//! Which path sluice's host-function batches took since `before` (signal:
//! the word watcher; kernel: sluice's gate kernel, where another stream of the
//! device held for the host; callback: the vendor callback, where the gate
//! kernel's launch failed or on a borrowed stream: docs/design.md, "Which host
//! functions use the word watcher").
struct path_count {
  sluice::detail::host_function_paths before = sluice::detail::host_function_path_counts();
  std::string since() const {
    const auto now = sluice::detail::host_function_path_counts();
    char b[192];
    std::snprintf(
        b, sizeof b,
        "host-function batches: %llu by signal, %llu by the gate kernel, %llu by callback "
        "(%llu gate kernel launches failed)",
        now.signal - before.signal, now.kernel - before.kernel, now.callback - before.callback,
        now.kernel_failures - before.kernel_failures);
    return b;
  }
};

//! The bench's overall bound: past it the process prints where it was and
//! exits 3 (no part can hang the bench; each part also has its own bound).
std::atomic<const char*> phase{"start"};

//! sluice: K streams each wait on one flag, then a host function that runs
//! `fn`; the time from the flag's store until K functions ran.
fanout_result sluice_fanout(std::vector<sluice::stream>& streams, std::size_t k, int trials,
                            int block_us) {
  sluice::flag f(0);
  std::atomic<std::size_t> done{0};
  std::vector<double> us;
  constexpr int warmup = 10;
  for (int t = 0; t < warmup + trials; ++t) {
    const auto v = static_cast<std::uint32_t>(t + 1);
    done.store(0);
    for (std::size_t i = 0; i < k; ++i) {
      streams[i].wait_value(f, v);
      streams[i].host_func([&done, block_us] {
        if (block_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(block_us));
        done.fetch_add(1, std::memory_order_release);
      });
    }
    const auto t0 = clock_type::now();
    f.store(v);
    // A bound: a sluice function that never runs is an error, and its
    // closure refers to this frame, so the process ends here.
    const auto give_up = t0 + std::chrono::seconds(10);
    while (done.load(std::memory_order_acquire) < k) {
      if (clock_type::now() > give_up) {
        std::printf("ERROR: sluice K=%zu: %zu of %zu host functions ran within 10 s of the flag\n",
                    k, done.load(), k);
        std::fflush(stdout);
        std::_Exit(1);
      }
    }
    const auto t1 = clock_type::now();
    for (std::size_t i = 0; i < k; ++i) streams[i].synchronize();
    if (t >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return summarize(us);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "sluice-bench-host-fn: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

//! Raw CUDA next to sluice: streams made after sluice's (so sluice's pool
//! keeps its own), mapped words, and the driver's stream memory operations
//! (fetched from the runtime, as sluice does: no libcuda link).
struct raw_side {
  using value_op = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  value_op wait = nullptr, write = nullptr;
  std::vector<cudaStream_t> streams;
  std::atomic<std::uint64_t>* host = nullptr;  // [0]: the flag; then K signal words, K gate words
  CUdeviceptr dev = 0;
  std::size_t n = 0;
  std::uint64_t value = 0;  // the last flag value used
  std::size_t queues =
      0;  // independent_stream_limit: the first `queues` streams have queues of their own

  raw_side(std::size_t count, std::size_t queue_count) : n(count), queues(queue_count) {
    cudaDriverEntryPointQueryResult found{};
    void* fn = nullptr;
    check(cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000, cudaEnableDefault,
                                           &found),
          "cuStreamWaitValue64 entry point");
    wait = reinterpret_cast<value_op>(fn);
    check(cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &fn, 12000, cudaEnableDefault,
                                           &found),
          "cuStreamWriteValue64 entry point");
    write = reinterpret_cast<value_op>(fn);
    void* h = nullptr;
    check(cudaHostAlloc(&h, (1 + 2 * n) * 64, cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc");
    std::memset(h, 0, (1 + 2 * n) * 64);
    // Atomics over the mapped words, as sluice's own (the device writes them).
    host = static_cast<std::atomic<std::uint64_t>*>(h);
    for (std::size_t i = 0; i < 1 + 2 * n; ++i) new (&host[i * 8]) std::atomic<std::uint64_t>(0);
    void* d = nullptr;
    check(cudaHostGetDevicePointer(&d, h, 0), "cudaHostGetDevicePointer");
    dev = reinterpret_cast<CUdeviceptr>(d);
    streams.resize(n);
    for (auto& s : streams)
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  raw_side(const raw_side&) = delete;
  raw_side& operator=(const raw_side&) = delete;
  //! Every stream and the mapped words go back (LeakSanitizer checks it in CI).
  ~raw_side() {
    for (auto s : streams)
      if (s != nullptr) (void)cudaStreamDestroy(s);
    if (host != nullptr) (void)cudaFreeHost(host);
  }
  // One word per 64 bytes (its own cache line): [0] flag, [1 + i] signal i, [1 + n + i] gate i.
  std::atomic<std::uint64_t>& word(std::size_t i) { return host[i * 8]; }
  CUdeviceptr device_word(std::size_t i) const { return dev + i * 64; }

  //! "signal": the device's part of a sluice host function. Stops at the
  //! first trial whose signals are not all seen within 5 s (beyond
  //! independent_stream_limit a stream's gate wait can hold the signal of the
  //! stream that shares its hardware queue: the host opens the gates only
  //! once it saw every signal, so they would wait for each other).
  fanout_result signal(std::size_t k, int trials) {
    std::vector<double> us;
    constexpr int warmup = 10;
    for (int t = 0; t < warmup + trials; ++t) {
      const std::uint64_t v = ++value;
      for (std::size_t i = 0; i < k; ++i) {
        if (wait(streams[i], device_word(0), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS ||
            write(streams[i], device_word(1 + i), v, CU_STREAM_WRITE_VALUE_DEFAULT) !=
                CUDA_SUCCESS ||
            wait(streams[i], device_word(1 + n + i), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
          check(cudaErrorUnknown, "cuStreamWaitValue64 / cuStreamWriteValue64");
      }
      const auto t0 = clock_type::now();
      word(0).store(v, std::memory_order_release);
      // A bound, so that a device that holds a signal back (HOST-2's case) ends the bench.
      const auto give_up = t0 + std::chrono::seconds(5);
      for (std::size_t i = 0; i < k; ++i)
        while (word(1 + i).load(std::memory_order_acquire) < v && clock_type::now() < give_up) {
        }
      const auto t1 = clock_type::now();
      std::size_t seen = 0, seen_first = 0;
      for (std::size_t i = 0; i < k; ++i)
        if (word(1 + i).load(std::memory_order_acquire) >= v) {
          ++seen;
          if (i < queues) ++seen_first;
        }
      for (std::size_t i = 0; i < k; ++i) word(1 + n + i).store(v, std::memory_order_release);
      for (std::size_t i = 0; i < k; ++i)
        check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
      if (seen < k) {
        char b[400];
        std::snprintf(b, sizeof b,
                      "trial %d: %zu of %zu signals seen within 5 s while every gate was closed "
                      "(%zu of the first %zu streams, %zu of the %zu after them); stopped",
                      t, seen, k, seen_first, std::min(k, queues), seen - seen_first,
                      k > queues ? k - queues : 0);
        return not_measurable(b);
      }
      if (t >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return summarize(us);
  }

  //! "gated": the same streams and operations as "signal", but the host
  //! opens each stream's gate as soon as it sees that stream's signal, as
  //! sluice's runners do (with no function and no thread hand-off): the
  //! device's part of sluice's fanout where streams share a hardware queue
  //! (a queue-mate's signal comes once the gate before it opened). The clock
  //! stops when every signal was seen. Bounded by 5 s as "signal".
  fanout_result gated(std::size_t k, int trials) {
    std::vector<double> us;
    std::vector<char> opened(k);
    constexpr int warmup = 10;
    for (int t = 0; t < warmup + trials; ++t) {
      const std::uint64_t v = ++value;
      for (std::size_t i = 0; i < k; ++i) {
        if (wait(streams[i], device_word(0), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS ||
            write(streams[i], device_word(1 + i), v, CU_STREAM_WRITE_VALUE_DEFAULT) !=
                CUDA_SUCCESS ||
            wait(streams[i], device_word(1 + n + i), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
          check(cudaErrorUnknown, "cuStreamWaitValue64 / cuStreamWriteValue64");
      }
      std::fill(opened.begin(), opened.end(), 0);
      const auto t0 = clock_type::now();
      word(0).store(v, std::memory_order_release);
      const auto give_up = t0 + std::chrono::seconds(5);
      std::size_t seen = 0;
      while (seen < k && clock_type::now() < give_up)
        for (std::size_t i = 0; i < k; ++i)
          if (!opened[i] && word(1 + i).load(std::memory_order_acquire) >= v) {
            word(1 + n + i).store(v, std::memory_order_release);
            opened[i] = 1;
            ++seen;
          }
      const auto t1 = clock_type::now();
      for (std::size_t i = 0; i < k; ++i) word(1 + n + i).store(v, std::memory_order_release);
      for (std::size_t i = 0; i < k; ++i)
        check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
      if (seen < k) {
        char b[200];
        std::snprintf(b, sizeof b, "trial %d: %zu of %zu signals seen within 5 s; stopped", t, seen,
                      k);
        return not_measurable(b);
      }
      if (t >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return summarize(us);
  }

  //! HOST-2's pattern on raw streams: K streams each store their signal word
  //! and then wait on their gate word, all gates closed: how many signals the
  //! host sees within `limit` (K unless the device holds a signal back while
  //! other streams are held). The gates are opened after.
  std::size_t signals_while_held(std::size_t k, std::chrono::milliseconds limit) {
    const std::uint64_t v = ++value;
    for (std::size_t i = 0; i < k; ++i)
      if (write(streams[i], device_word(1 + i), v, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS ||
          wait(streams[i], device_word(1 + n + i), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWriteValue64 / cuStreamWaitValue64");
    const auto until = clock_type::now() + limit;
    std::size_t seen = 0;
    while (clock_type::now() < until) {
      seen = 0;
      for (std::size_t i = 0; i < k; ++i)
        seen += word(1 + i).load(std::memory_order_acquire) >= v ? 1 : 0;
      if (seen == k) break;
    }
    for (std::size_t i = 0; i < k; ++i) word(1 + n + i).store(v, std::memory_order_release);
    for (std::size_t i = 0; i < k; ++i)
      check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
    return seen;
  }

  //! One stream, one at a time: enqueue, then wait until the host saw it.
  //! "ping": store the signal word; the host spins until it sees it (device to
  //! host). "pingpong": store the signal word, then wait on the gate word; the
  //! host spins on the signal, stores the gate and synchronizes the stream:
  //! sluice's host function with the host's side done inline by the measuring
  //! thread (no watcher, no runner). "launch": cudaLaunchHostFunc (empty) and
  //! cudaStreamSynchronize. Median and min in us over `trials`.
  struct trip {
    fanout_result ping, pingpong, launch;
  };
  static void empty_fn(void*) {}
  trip round_trips(int trials) {
    std::vector<double> ping, pingpong, launch_us;
    cudaStream_t s = streams[0];
    for (int t = 0; t < 20 + trials; ++t) {
      std::uint64_t v = ++value;
      auto t0 = clock_type::now();
      if (write(s, device_word(1), v, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWriteValue64");
      while (word(1).load(std::memory_order_acquire) < v) {
      }
      auto t1 = clock_type::now();
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      if (t >= 20) ping.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());

      v = ++value;
      t0 = clock_type::now();
      if (write(s, device_word(1), v, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS ||
          wait(s, device_word(1 + n), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWriteValue64 / cuStreamWaitValue64");
      while (word(1).load(std::memory_order_acquire) < v) {
      }
      word(1 + n).store(v, std::memory_order_release);
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      t1 = clock_type::now();
      if (t >= 20) pingpong.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());

      t0 = clock_type::now();
      check(cudaLaunchHostFunc(s, empty_fn, nullptr), "cudaLaunchHostFunc");
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      t1 = clock_type::now();
      if (t >= 20) launch_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return {summarize(ping), summarize(pingpong), summarize(launch_us)};
  }

  struct launch_arg {
    std::atomic<std::size_t>* done;
    int block_us;
  };
  static void launched(void* p) {
    auto* a = static_cast<launch_arg*>(p);
    if (a->block_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(a->block_us));
    a->done->fetch_add(1, std::memory_order_release);
  }

  //! "launch": cudaLaunchHostFunc behind the same hold. The enqueues run on
  //! a thread of their own, bounded by 5 s: CUDA 13 blocks the 57th
  //! cudaLaunchHostFunc pending behind held work on a device
  //! (docs/vendor-differences.md section 2), and the hold is released only
  //! after the enqueues. Past the bound the flag is stored (the blocked call
  //! returns), the trial completes and the part stops: not measurable.
  fanout_result launch(std::size_t k, int trials, int block_us) {
    std::atomic<std::size_t> done{0};
    launch_arg arg{&done, block_us};
    std::vector<double> us;
    constexpr int warmup = 10;
    for (int t = 0; t < warmup + trials; ++t) {
      const std::uint64_t v = ++value;
      done.store(0);
      std::atomic<std::size_t> enqueued{0};
      std::thread enqueuer([&] {
        for (std::size_t i = 0; i < k; ++i) {
          if (wait(streams[i], device_word(0), v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
            check(cudaErrorUnknown, "cuStreamWaitValue64");
          check(cudaLaunchHostFunc(streams[i], launched, &arg), "cudaLaunchHostFunc");
          enqueued.fetch_add(1, std::memory_order_release);
        }
      });
      const auto enqueue_bound = clock_type::now() + std::chrono::seconds(5);
      while (enqueued.load(std::memory_order_acquire) < k && clock_type::now() < enqueue_bound)
        std::this_thread::yield();
      const std::size_t in_time = enqueued.load(std::memory_order_acquire);
      if (in_time < k) {
        word(0).store(v, std::memory_order_release);  // releases the blocked call
        enqueuer.join();
        while (done.load(std::memory_order_acquire) < k) {
        }
        for (std::size_t i = 0; i < k; ++i)
          check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
        char b[300];
        std::snprintf(b, sizeof b,
                      "trial %d: cudaLaunchHostFunc number %zu of %zu did not return within 5 s "
                      "while the streams were held (it returned once the hold was released); "
                      "stopped",
                      t, in_time + 1, k);
        return not_measurable(b);
      }
      enqueuer.join();
      const auto t0 = clock_type::now();
      word(0).store(v, std::memory_order_release);
      while (done.load(std::memory_order_acquire) < k) {
      }
      const auto t1 = clock_type::now();
      for (std::size_t i = 0; i < k; ++i)
        check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
      if (t >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return summarize(us);
  }
};

}  // namespace

//! HOST-2's pattern through sluice: K streams each with a host function that
//! blocks until all K have entered (or `limit` passed): how many entered.
std::size_t sluice_blocked(std::vector<sluice::stream>& streams, std::size_t k,
                           std::chrono::milliseconds limit) {
  std::mutex m;
  std::condition_variable cv;
  std::size_t entered = 0;
  bool open = false;
  for (std::size_t i = 0; i < k; ++i)
    streams[i].host_func([&] {
      std::unique_lock<std::mutex> lock(m);
      ++entered;
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
    });
  std::size_t seen = 0;
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, limit, [&] { return entered == k; });
    seen = entered;
    open = true;
    cv.notify_all();
  }
  for (std::size_t i = 0; i < k; ++i) streams[i].synchronize();
  return seen;
}

int main(int argc, char** argv) {
  double idle_seconds = 10, pending_seconds = 2;
  std::size_t n_streams = 64, fan = 64;
  std::size_t blocked_k = 0;  // --blocked: the HOST-2 part's only K (0: 12 and the limit)
  int trials = 200, block_us = 1000, block_trials = 20;
  double time_limit = 240;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&a] { return a.substr(a.find('=') + 1); };
    if (a.rfind("--idle-seconds=", 0) == 0)
      idle_seconds = std::max(0.0, std::atof(value().c_str()));
    else if (a.rfind("--pending-seconds=", 0) == 0)
      pending_seconds = std::max(0.0, std::atof(value().c_str()));
    else if (a.rfind("--streams=", 0) == 0)
      n_streams = std::clamp<std::size_t>(std::strtoull(value().c_str(), nullptr, 10), 1, 1024);
    else if (a.rfind("--fanout=", 0) == 0)
      fan = std::min<std::size_t>(std::strtoull(value().c_str(), nullptr, 10), 1024);
    else if (a.rfind("--trials=", 0) == 0)
      trials = std::max(1, std::atoi(value().c_str()));
    else if (a.rfind("--block-us=", 0) == 0)
      block_us = std::clamp(std::atoi(value().c_str()), 0, 1000000);
    else if (a.rfind("--block-trials=", 0) == 0)
      block_trials = std::max(1, std::atoi(value().c_str()));
    else if (a.rfind("--time-limit=", 0) == 0)
      time_limit = std::max(1.0, std::atof(value().c_str()));
    else if (a.rfind("--blocked=", 0) == 0)
      blocked_k = std::min<std::size_t>(std::strtoull(value().c_str(), nullptr, 10), 1024);
    else {
      std::fprintf(stderr,
                   "usage: sluice-bench-host-fn-cuda [--idle-seconds=S (0: skip)] "
                   "[--pending-seconds=S (0: skip)] [--streams=N] [--fanout=K (0: skip)] "
                   "[--trials=T] [--block-us=U (0: skip)] [--block-trials=T] "
                   "[--time-limit=S (default 240)] [--blocked=K (HOST-2's part at K only, "
                   "up to --fanout, also beyond the limit)]\n");
      return 2;
    }
  }
  // One line at a time even into a file or a pipe: what was measured is
  // there when a run is cut short.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const auto started = clock_type::now();
  std::mutex watchdog_m;
  std::condition_variable watchdog_cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(watchdog_m);
    if (!watchdog_cv.wait_for(lock, std::chrono::duration<double>(time_limit),
                              [&] { return finished; })) {
      std::printf("sluice-bench-host-fn: time limit of %.0f s reached in part \"%s\": stopped\n",
                  time_limit, phase.load());
      std::fflush(stdout);
      std::_Exit(3);
    }
  });
  const auto finish = [&](int rc) {
    {
      std::lock_guard<std::mutex> lock(watchdog_m);
      finished = true;
    }
    watchdog_cv.notify_all();
    watchdog.join();
    return rc;
  };
  if (sluice::device_count() == 0) {
    std::printf("sluice-bench-host-fn: no device: nothing measured\n");
    return finish(77);
  }
  const sluice::device dev{0};
  std::printf("sluice-bench-host-fn: %s (device 0), %s\n", dev.name().c_str(),
              sluice::backend_version().c_str());
  std::printf(
      "time limit: %.0f s (--time-limit; past it the bench stops with exit 3); parts bounded "
      "on their own: a sluice fanout trial 10 s (exit 1), a raw reference 5 s (then not "
      "measurable, the part stops), HOST-2's rounds 2 s each\n",
      time_limit);
  std::vector<sluice::stream> streams;
  for (std::size_t i = 0; i < std::max(n_streams, fan); ++i) streams.emplace_back(dev);
  int status = 0;

  if (idle_seconds > 0) {
    phase = "idle";
    // Every stream has run a host function (the watcher and its runners started
    // and saw traffic); then nothing is pending.
    std::atomic<int> ran{0};
    for (std::size_t i = 0; i < n_streams; ++i) streams[i].host_func([&ran] { ++ran; });
    for (std::size_t i = 0; i < n_streams; ++i) streams[i].synchronize();
    const auto [stat_pct, rusage_pct] = cpu_over(idle_seconds);
    const bool pass = stat_pct <= 1.0;
    std::printf(
        "idle: %zu streams alive, %d host functions run, none pending: %.3f %% of one core "
        "over %.1f s (/proc/self/stat; getrusage %.3f %%); target <= 1 %%: %s\n",
        n_streams, ran.load(), stat_pct, idle_seconds, rusage_pct, pass ? "PASS" : "FAIL");
    if (!pass) status = 1;
  }

  if (pending_seconds > 0) {
    phase = "pending";
    sluice::flag f(0);
    std::atomic<bool> ran{false};
    streams[0].wait_value(f, 1);
    streams[0].host_func([&ran] { ran = true; });
    const auto [stat_pct, rusage_pct] = cpu_over(pending_seconds);
    f.store(1);
    streams[0].synchronize();
    std::printf(
        "pending: one host function pending behind a held stream: %.3f %% of one core "
        "over %.1f s (/proc/self/stat; getrusage %.3f %%)%s\n",
        stat_pct, pending_seconds, rusage_pct, ran ? "" : " (ERROR: it did not run)");
    if (!ran) status = 1;
  }

  if (fan > 0) {
    const auto limit = static_cast<std::size_t>(std::max(1, sluice::independent_stream_limit(dev)));
    // Only as many sluice streams alive as a part needs. Where K functions are
    // pending at once, the first takes the signal and the others the vendor
    // callback (another stream holds for the host: docs/design.md, "Which
    // host functions use the word watcher"); each part prints the paths its
    // batches took.
    while (streams.size() > std::min(fan, limit)) streams.pop_back();
    // Raw CUDA's streams after sluice's: sluice's pool keeps the streams it made.
    raw_side raw(fan, limit);
    {
      phase = "round trip";
      // One host function at a time, its parts apart (api_overhead's
      // host_func_round_trip row is sluice against launch).
      const int n = std::max(200, trials * 4);
      std::vector<double> us;
      for (int t = 0; t < 20 + n; ++t) {
        const auto t0 = clock_type::now();
        streams[0].host_func([] {});
        streams[0].synchronize();
        const auto t1 = clock_type::now();
        if (t >= 20) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      const fanout_result sl = summarize(us);
      const raw_side::trip r = raw.round_trips(n);
      std::printf(
          "round trip, one stream, us (median / min of %d): sluice host_func + synchronize "
          "%.1f / %.1f; raw: cudaLaunchHostFunc + cudaStreamSynchronize %.1f / %.1f; signal "
          "seen by the host (stream write, host spins) %.1f / %.1f; signal + gate with the host "
          "side inline (stream write and wait, host spins, stores the gate, synchronizes) "
          "%.1f / %.1f\n",
          n, sl.median_us, sl.min_us, r.launch.median_us, r.launch.min_us, r.ping.median_us,
          r.ping.min_us, r.pingpong.median_us, r.pingpong.min_us);
    }
    std::vector<std::size_t> ks{1};
    if (limit > 1 && limit < fan) ks.push_back(limit);
    if (fan > 1) ks.push_back(fan);
    std::printf(
        "fanout: K streams each with a host function pending behind one flag; us from the "
        "flag's store until every function ran (median / min of %d trials). signal: raw CUDA, "
        "each stream stores a mapped word and waits on a gate word (the device's part of a "
        "sluice host function; the clock stops when the host saw every word); launch: raw "
        "cudaLaunchHostFunc; gated: as signal, but the host opens each gate as soon as it sees "
        "that stream's signal (the device's part where streams share a queue); host side: sluice "
        "- signal (medians)\n",
        trials);
    // HOST-2 on the device: K streams' host functions blocked at once, each
    // until all have entered; and the device's part alone on raw streams.
    {
      // Rounds of 12 (the conformance test's count) and of K = the limit, each
      // bounded by 2 s: once failed on an H200 with 12 (11 started).
      phase = "blocked at once (HOST-2)";
      // --blocked=K: that K alone, also beyond the limit (up to --fanout, the
      // raw streams made): whether the device holds a raw stream's signal
      // behind another's closed gate there (with CUDA_DEVICE_MAX_CONNECTIONS=8
      // and K = 12, the tool's environment before backend_version started the
      // engine first: docs/design.md, "Which host functions use the word
      // watcher").
      std::vector<std::size_t> blocked_ks{std::min<std::size_t>({fan, limit, 12}),
                                          std::min(fan, limit)};
      if (blocked_k > 0) blocked_ks = {std::min(blocked_k, fan)};
      while (streams.size() < blocked_ks.back()) streams.emplace_back(dev);
      for (const std::size_t k : blocked_ks) {
        const path_count paths;
        constexpr int rounds = 5;
        int raw_short = 0, sluice_short = 0;
        std::size_t raw_least = k, sluice_least = k;
        for (int r = 0; r < rounds; ++r) {
          const std::size_t raw_seen = raw.signals_while_held(k, std::chrono::milliseconds(2000));
          const std::size_t sluice_seen =
              sluice_blocked(streams, k, std::chrono::milliseconds(2000));
          if (raw_seen != k) ++raw_short;
          if (sluice_seen != k) ++sluice_short;
          raw_least = std::min(raw_least, raw_seen);
          sluice_least = std::min(sluice_least, sluice_seen);
        }
        std::printf(
            "blocked at once (HOST-2), K=%zu, %d rounds: sluice: all K host functions entered "
            "while the others blocked in %d rounds (fewest %zu); raw streams: all K stored their "
            "signal while every gate was closed in %d rounds (fewest %zu); 2 s each\n",
            k, rounds, rounds - sluice_short, sluice_least, rounds - raw_short, raw_least);
        std::printf("blocked at once (HOST-2), K=%zu, sluice's %s\n", k, paths.since().c_str());
        if (sluice_short != 0) status = 1;
      }
    }
    // Each part printed as soon as it is measured; the table after.
    std::vector<fanout_result> sl, sg, gt, la;
    for (const std::size_t k : ks) {
      phase = "fanout: sluice";
      while (streams.size() < k) streams.emplace_back(dev);
      const path_count paths;
      sl.push_back(sluice_fanout(streams, k, trials, 0));
      print_part("fanout", "sluice", k, sl.back());
      std::printf("fanout K=%zu sluice: %s\n", k, paths.since().c_str());
      phase = "fanout: signal";
      sg.push_back(raw.signal(k, trials));
      print_part("fanout", "signal", k, sg.back());
      phase = "fanout: gated";
      gt.push_back(raw.gated(k, trials));
      print_part("fanout", "gated", k, gt.back());
      phase = "fanout: launch";
      la.push_back(raw.launch(k, trials, 0));
      print_part("fanout", "launch", k, la.back());
    }
    const auto ratio = [](const fanout_result& a, const fanout_result& b) {
      char r[32];
      if (a.why.empty() && b.why.empty())
        std::snprintf(r, sizeof r, "%.2f", a.median_us / b.median_us);
      else
        std::snprintf(r, sizeof r, "n/m");
      return std::string(r);
    };
    std::printf("%-6s %18s %18s %18s %18s %10s\n", "K", "sluice", "signal", "gated", "launch",
                "host side");
    for (std::size_t i = 0; i < ks.size(); ++i) {
      char side[32] = "n/m";
      if (sg[i].why.empty())
        std::snprintf(side, sizeof side, "%.1f", sl[i].median_us - sg[i].median_us);
      std::printf("%-6zu %s %s %s %s %10s%s\n", ks[i], cell(sl[i]).c_str(), cell(sg[i]).c_str(),
                  cell(gt[i]).c_str(), cell(la[i]).c_str(), side,
                  ks[i] == limit && ks[i] != 1 ? "  (independent_stream_limit)" : "");
    }
    for (std::size_t i = 1; i < ks.size(); ++i)
      std::printf(
          "fanout ratio K=%zu / K=1 (medians): sluice %.2f, signal %s, gated %s, launch %s; "
          "sluice / launch at K=%zu: %s%s\n",
          ks[i], sl[i].median_us / sl[0].median_us, ratio(sg[i], sg[0]).c_str(),
          ratio(gt[i], gt[0]).c_str(), ratio(la[i], la[0]).c_str(), ks[i],
          ratio(sl[i], la[i]).c_str(),
          ks[i] == fan ? (sl[i].median_us / sl[0].median_us <= 2.0 ? "; target <= 2.0: MET"
                                                                   : "; target <= 2.0: MISS")
                       : "");
    if (block_us > 0) {
      phase = "blocking";
      std::printf(
          "blocking: the same with functions that block for %d us each (sluice and raw "
          "cudaLaunchHostFunc; median / min of %d trials)\n",
          block_us, block_trials);
      std::printf("%-6s %18s %18s\n", "K", "sluice", "launch");
      std::vector<fanout_result> bs, bl;
      for (const std::size_t k : ks) {
        const path_count paths;
        bs.push_back(sluice_fanout(streams, k, block_trials, block_us));
        std::printf("blocking K=%zu sluice: %s\n", k, paths.since().c_str());
        bl.push_back(raw.launch(k, block_trials, block_us));
        std::printf("%-6zu %s %s%s\n", k, cell(bs.back()).c_str(), cell(bl.back()).c_str(),
                    k == limit && k != 1 ? "  (independent_stream_limit)" : "");
        if (!bl.back().why.empty()) print_part("blocking", "launch", k, bl.back());
      }
      for (std::size_t i = 1; i < ks.size(); ++i)
        std::printf("blocking ratio K=%zu / K=1 (medians): sluice %.2f, launch %s%s\n", ks[i],
                    bs[i].median_us / bs[0].median_us, ratio(bl[i], bl[0]).c_str(),
                    ks[i] == fan
                        ? (bs[i].median_us / bs[0].median_us <= 2.0 ? "; target <= 2.0: MET"
                                                                    : "; target <= 2.0: MISS")
                        : "");
    }
  }
  std::printf("total: %.1f s\n",
              std::chrono::duration<double>(clock_type::now() - started).count());
  return finish(status);
}
