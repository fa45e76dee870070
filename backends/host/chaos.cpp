// Chaos mode of the host backend: see chaos.hpp.
#include "chaos.hpp"

#include "settings.hpp"

#include <chrono>
#include <thread>

namespace sluice::detail::chaos {

std::atomic<std::uint64_t> seed{0};

namespace {

std::atomic<std::uint64_t> next_stream{1};

//! splitmix64: a fresh, well-mixed sequence per thread from the run's seed.
std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

std::uint64_t next_random() noexcept {
  // Threads draw their sequence number in the order they first pause.
  thread_local std::uint64_t state =
      mix(seed.load(std::memory_order_relaxed) ^ mix(next_stream.fetch_add(1)));
  state = mix(state);
  return state;
}

}  // namespace

void configure() {
  const int value = settings::host_chaos();
  seed.store(static_cast<std::uint64_t>(value), std::memory_order_relaxed);
}

std::uint64_t draw() noexcept { return next_random(); }

void pause_slow(site where) noexcept {
  const std::uint64_t r = next_random() ^ static_cast<std::uint64_t>(where);
  if ((r & 3U) != 0) return;  // pause at one site in four
  const std::uint64_t amount = (r >> 8U) % 1000U;
  switch ((r >> 4U) % 3U) {
    case 0:
      for (std::uint64_t i = 0; i <= amount % 4U; ++i) std::this_thread::yield();
      break;
    case 1: {  // spin up to 50 us
      const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(amount * 50);
      while (std::chrono::steady_clock::now() < end) {
      }
      break;
    }
    default:  // an injected delay (not synchronization): up to 300 us
      std::this_thread::sleep_for(std::chrono::microseconds(amount * 3 / 10));
      break;
  }
}

}  // namespace sluice::detail::chaos
