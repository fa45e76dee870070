// sluice-bench-host-fn-cuda: what host functions cost besides their round trip
// (issue 22; the round trip itself: sluice-bench-api-overhead).
//
//   idle     With --streams streams alive, each having run a host function,
//            and no host function pending: the process's CPU time (utime +
//            stime from /proc/self/stat, and getrusage) over --idle-seconds of
//            wall time. Target: <= 1 % of one core. Asserted: exit 1 when
//            missed (ctest sim.bench.host_fn.idle.cuda runs it in CI).
//   pending  The same over --pending-seconds while one host function is
//            pending behind a stream held on a flag: what the word watcher's
//            polling costs while it has something to watch (reported only).
//   fanout   K streams (1, then --fanout) each hold a host function behind a
//            wait on one flag; the flag is stored and the clock runs until
//            every host function has run (each increments a counter; the
//            main thread polls it). Median and min over --trials after 10
//            untimed ones; then the time until every stream is synchronized
//            too. Target: median(K = --fanout) <= 2x median(K = 1); reported,
//            not asserted (a MISS exits 0). When --fanout exceeds the
//            device's independent_stream_limit (CUDA: 32 hardware queues),
//            streams share hardware queues and a held stream's gate wait
//            holds the stream behind it in its queue: K = that limit is
//            measured too, which separates sluice's host side from the
//            queues' sharing.
#include <sluice/sluice.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

struct fanout_result {
  double run_median_us = 0, run_min_us = 0, sync_median_us = 0;
};

fanout_result fanout(std::vector<sluice::stream>& streams, std::size_t k, int trials) {
  sluice::flag f(0);
  std::atomic<std::size_t> done{0};
  std::vector<double> run_us, sync_us;
  constexpr int warmup = 10;
  for (int t = 0; t < warmup + trials; ++t) {
    const auto v = static_cast<std::uint32_t>(t + 1);
    done.store(0);
    for (std::size_t i = 0; i < k; ++i) {
      streams[i].wait_value(f, v);
      streams[i].host_func([&done] { done.fetch_add(1, std::memory_order_release); });
    }
    const auto t0 = clock_type::now();
    f.store(v);
    while (done.load(std::memory_order_acquire) < k) {
    }
    const auto t1 = clock_type::now();
    for (std::size_t i = 0; i < k; ++i) streams[i].synchronize();
    const auto t2 = clock_type::now();
    if (t >= warmup) {
      run_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      sync_us.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
    }
  }
  return {median(run_us), *std::min_element(run_us.begin(), run_us.end()), median(sync_us)};
}

}  // namespace

int main(int argc, char** argv) {
  double idle_seconds = 10, pending_seconds = 2;
  std::size_t n_streams = 64, fan = 64;
  int trials = 200;
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
    else {
      std::fprintf(stderr,
                   "usage: sluice-bench-host-fn-cuda [--idle-seconds=S (0: skip)] "
                   "[--pending-seconds=S (0: skip)] [--streams=N] [--fanout=K (0: skip)] "
                   "[--trials=T]\n");
      return 2;
    }
  }
  if (sluice::device_count() == 0) {
    std::printf("sluice-bench-host-fn: no device: nothing measured\n");
    return 77;
  }
  const sluice::device dev{0};
  std::printf("sluice-bench-host-fn: %s (device 0), %s\n", dev.name().c_str(),
              sluice::backend_version().c_str());
  std::vector<sluice::stream> streams;
  for (std::size_t i = 0; i < std::max(n_streams, fan); ++i) streams.emplace_back(dev);
  int status = 0;

  if (idle_seconds > 0) {
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
    const fanout_result one = fanout(streams, 1, trials);
    const auto limit = static_cast<std::size_t>(std::max(1, sluice::independent_stream_limit(dev)));
    const bool show_limit = limit > 1 && limit < fan;
    const fanout_result at_limit = show_limit ? fanout(streams, limit, trials) : fanout_result{};
    const fanout_result many = fanout(streams, fan, trials);
    const double ratio = many.run_median_us / one.run_median_us;
    std::printf(
        "fanout: K streams each with a host function pending behind one flag; us from "
        "the flag's store until every function ran (median, min; %d trials), then "
        "until every stream is synchronized (median)\n",
        trials);
    std::printf("%-6s %12s %12s %14s\n", "K", "run_median", "run_min", "sync_median");
    std::printf("%-6d %12.1f %12.1f %14.1f\n", 1, one.run_median_us, one.run_min_us,
                one.sync_median_us);
    if (show_limit)
      std::printf("%-6zu %12.1f %12.1f %14.1f  (independent_stream_limit)\n", limit,
                  at_limit.run_median_us, at_limit.run_min_us, at_limit.sync_median_us);
    std::printf("%-6zu %12.1f %12.1f %14.1f\n", fan, many.run_median_us, many.run_min_us,
                many.sync_median_us);
    if (show_limit)
      std::printf("fanout ratio (K=%zu / K=1, run medians): %.2f (no target)\n", limit,
                  at_limit.run_median_us / one.run_median_us);
    std::printf("fanout ratio (K=%zu / K=1, run medians): %.2f; target <= 2.0: %s\n", fan, ratio,
                ratio <= 2.0 ? "MET" : "MISS");
  }
  return status;
}
