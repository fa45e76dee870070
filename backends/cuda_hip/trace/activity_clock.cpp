// The activity tracer's clocks (activity_tracer.hpp): whether the CPU's
// counter stamps enqueues, and the calibrations that map the source's clock
// and the counter onto the host clock.
#include "settings.hpp"
#include "trace/activity_tracer.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

namespace sluice::detail {

bool counter_clock_available() noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
  // SLUICE_TRACE_COUNTER=1 or 0: the counter stamps, or the host clock does,
  // whatever the clocksource.
  if (const std::optional<bool> on = settings::trace_counter()) return *on;
#endif
#if defined(__x86_64__)
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool tsc =
      std::fgets(name, sizeof name, f) != nullptr && std::strncmp(name, "tsc\n", 4) == 0;
  std::fclose(f);
  return tsc;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

namespace {

//! The narrowest of 16 host-clock windows around read(): the window's
//! middle, its width, and what read() gave in it.
template <class T>
struct window_read {
  std::int64_t host = 0;
  std::int64_t width = 0;
  T value{};
};
template <class Read>
auto narrowest_window(Read read) noexcept {
  window_read<decltype(read())> best;
  for (int i = 0; i < 16; ++i) {
    const std::int64_t before = trace::now_ns();
    const auto v = read();
    const std::int64_t w = trace::now_ns() - before;
    if (i == 0 || w < best.width) best = {before + w / 2, w, v};
  }
  return best;
}

}  // namespace

activity_tracer::sample activity_tracer::calibrate() noexcept {
  activity_source* src = source_.load(std::memory_order_relaxed);
  const auto s = narrowest_window([src] { return src->timestamp(); });
  sample best{s.host, s.width, s.value};
  if (counter_) {  // ticks_to_host's samples; without the counter stamps are host times
    const auto k = narrowest_window([] { return counter_ticks(); });
    best.ticks = k.value;
    best.tick_host = k.host;
    best.tick_window = k.width;
  }
  return best;
}

std::int64_t activity_tracer::to_host(std::uint64_t t) const noexcept {
  // Linear between the two calibrations over a long trace (the source's
  // clock may run at a slightly different rate from the host's steady
  // clock); over a short one the two windows' jitter would swamp the rate:
  // the mean offset.
  const double ds = static_cast<double>(end_.source) - static_cast<double>(begin_.source);
  const double dh = static_cast<double>(end_.host - begin_.host);
  const double from_begin = static_cast<double>(t) - static_cast<double>(begin_.source);
  if (ds >= static_cast<double>(rate_span_ns))
    return begin_.host + static_cast<std::int64_t>(from_begin * (dh / ds));
  return begin_.host + static_cast<std::int64_t>(from_begin + (dh - ds) / 2);
}

std::int64_t activity_tracer::ticks_to_host(std::int64_t t) const noexcept {
  // Linear between the two calibrations: the counter runs at a constant
  // rate, so each time is off by at most the wider window's half.
  const double dk = static_cast<double>(end_.ticks - begin_.ticks);
  const double dh = static_cast<double>(end_.tick_host - begin_.tick_host);
  if (dk <= 0) return begin_.tick_host + (t - begin_.ticks);  // the trace clock itself
  return begin_.tick_host +
         static_cast<std::int64_t>(static_cast<double>(t - begin_.ticks) * (dh / dk));
}

std::int64_t activity_tracer::clock_error() const noexcept {
  // Each calibration is off by at most half its window; interpolating
  // between them keeps that bound. The mean offset adds half the offsets'
  // difference.
  std::int64_t e = (std::max(begin_.window, end_.window) + 1) / 2;
  const double ds = static_cast<double>(end_.source) - static_cast<double>(begin_.source);
  if (ds < static_cast<double>(rate_span_ns)) {
    const double drift = static_cast<double>(end_.host - begin_.host) - ds;
    e += static_cast<std::int64_t>((drift < 0 ? -drift : drift) / 2) + 1;
  }
  return e;
}

}  // namespace sluice::detail
