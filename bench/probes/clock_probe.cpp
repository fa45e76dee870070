// sluice-probe-clock: raw CUDA only. How well do CUDA event times map onto the
// host's steady clock over a long trace? (sluice's tracer maps every device
// time through one base event per device: docs/design.md, "Tracing".)
//
// A calibration records an event on an idle stream and waits for it; the
// event's host time is the middle of the record-to-return window, known to
// within half the window. The probe calibrates a base, then every
// --interval-ms for --seconds calibrates again and prints, per sample:
//   host       the host time since the base (middle of the windows)
//   direct     cudaEventElapsedTime(base, sample): one float of milliseconds
//   chained    the sum of cudaEventElapsedTime between consecutive samples
//   direct - host, chained - host   in us, with the two windows' half-widths
// so that drift (the device clock's rate against the host's) and the float's
// resolution (its step grows with the time since the base) can be told apart.
#include "../raw/cuda.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct calibration {
  cudaEvent_t event{};
  std::int64_t host_ns = 0;    // middle of the window
  std::int64_t window_ns = 0;  // record-to-return
};

//! The narrowest of `attempts` windows (as sluice's tracer does, with 8).
calibration calibrate(cudaStream_t s, int attempts) {
  calibration best{};
  best.window_ns = INT64_MAX;
  for (int i = 0; i < attempts; ++i) {
    cudaEvent_t e{};
    raw::check(cudaEventCreateWithFlags(&e, cudaEventDefault), "cudaEventCreateWithFlags");
    const std::int64_t before = now_ns();
    raw::check(cudaEventRecord(e, s), "cudaEventRecord");
    raw::check(cudaEventSynchronize(e), "cudaEventSynchronize");
    const std::int64_t after = now_ns();
    if (after - before < best.window_ns) {
      if (best.event != nullptr) raw::check(cudaEventDestroy(best.event), "cudaEventDestroy");
      best.event = e;
      best.window_ns = after - before;
      best.host_ns = before + best.window_ns / 2;
    } else {
      raw::check(cudaEventDestroy(e), "cudaEventDestroy");
    }
  }
  return best;
}

double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

double elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0F;
  raw::check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return static_cast<double>(ms);
}

long arg(int argc, char** argv, const char* name, long fallback) {
  const std::size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return std::atol(argv[i] + n + 1);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-clock";
  const long seconds = arg(argc, argv, "--seconds", 60);
  const long interval_ms = arg(argc, argv, "--interval-ms", 5000);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "sluice-probe-clock: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  raw::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t s{};
  raw::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");

  // Window widths of single attempts (what one calibration may get).
  std::vector<std::int64_t> widths;
  for (int i = 0; i < 200; ++i) widths.push_back(calibrate(s, 1).window_ns);
  std::sort(widths.begin(), widths.end());
  std::printf("device 0: %s\n", prop.name);
  std::printf(
      "single calibration windows, 200 attempts: min %.1f us, median %.1f us, p90 %.1f us, "
      "max %.1f us\n",
      us(widths.front()), us(widths[100]), us(widths[180]), us(widths.back()));

  const calibration base = calibrate(s, 8);
  std::printf("base: window %.1f us (half: %.1f us)\n", us(base.window_ns), us(base.window_ns) / 2);
  std::printf("%8s %14s %14s %14s %12s %12s %10s %12s\n", "t_s", "host_ms", "direct_ms",
              "chained_ms", "direct-host", "chained-host", "+-us", "ppm(chain)");
  cudaEvent_t previous = base.event;
  double chained = 0.0;
  double worst_direct_step = 0.0;  // |direct - chained|
  const std::int64_t start = now_ns();
  while (now_ns() - start < seconds * 1000000000LL) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));  // the probe's own pace
    const calibration c = calibrate(s, 8);
    const double host_ms = static_cast<double>(c.host_ns - base.host_ns) / 1e6;
    const double direct = elapsed_ms(base.event, c.event);
    chained += elapsed_ms(previous, c.event);
    if (previous != base.event) raw::check(cudaEventDestroy(previous), "cudaEventDestroy");
    previous = c.event;
    const double err_us = static_cast<double>(base.window_ns + c.window_ns) / 2e3;
    worst_direct_step = std::max(worst_direct_step, std::fabs(direct - chained) * 1e3);
    std::printf("%8.1f %14.4f %14.4f %14.4f %12.2f %12.2f %10.2f %12.3f\n", host_ms / 1e3, host_ms,
                direct, chained, (direct - host_ms) * 1e3, (chained - host_ms) * 1e3, err_us,
                (chained - host_ms) / host_ms * 1e6);
    std::fflush(stdout);
  }
  std::printf("largest |direct - chained|: %.2f us (the single float's resolution)\n",
              worst_direct_step);
  // Does cudaEventElapsedTime give a negative time for events in reverse order?
  std::printf("elapsed(last, base) = %.4f ms (reverse order)\n", elapsed_ms(previous, base.event));
  return 0;
}
