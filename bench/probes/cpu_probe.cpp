// sluice-probe-cpu: no sluice, no vendor. What the host's CPU costs for the
// primitives that sluice's enqueue and its engine threads are made of, so
// that a host-bound figure measured on one machine can be read against
// another's (docs/comm.md: the GPU machines ran sluice's enqueue 3-6x slower
// than the 2-core VM). Per primitive, the median of --trials timed batches,
// in ns per operation:
//   add chain      one dependent integer add (about one cycle: 1/GHz)
//   clock          std::chrono::steady_clock::now()
//   atomic add     an uncontended fetch_add (seq_cst)
//   mutex          an uncontended std::mutex lock and unlock
//   malloc 64 B    malloc and free of 64 bytes
//   ping-pong      one hand-over of a cache line between two threads spinning
//                  on it (half a round trip)
//   wake           a condition_variable notify to a sleeping thread and its
//                  answer, per hand-over (half a round trip, futex and
//                  scheduler included)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double ns_per_op(int trials, long ops, F&& body) {
  std::vector<double> t;
  for (int i = 0; i < trials; ++i) {
    const auto start = clock_type::now();
    body(ops);
    const auto end = clock_type::now();
    t.push_back(std::chrono::duration<double, std::nano>(end - start).count() /
                static_cast<double>(ops));
  }
  return median(t);
}

volatile std::uint64_t sink;

}  // namespace

int main(int argc, char** argv) {
  int trials = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--trials=", 9) == 0) {
      trials = std::atoi(argv[i] + 9);
    } else {
      std::fprintf(stderr, "usage: sluice-probe-cpu [--trials=7]\n");
      return 2;
    }
  }
  if (trials < 1) trials = 1;
  std::printf("sluice-probe-cpu: median of %d batches, ns per operation\n", trials);
  // A second thread from the start, idle: glibc takes cheaper paths for locks
  // and malloc while a process has one thread, and sluice's never has.
  std::mutex idle_m;
  std::condition_variable idle_cv;
  bool idle_done = false;
  std::thread idle([&] {
    std::unique_lock<std::mutex> lock(idle_m);
    idle_cv.wait(lock, [&] { return idle_done; });
  });

  const double add = ns_per_op(trials, 200000000L, [](long n) {
    std::uint64_t x = sink;
    for (long i = 0; i < n; ++i) {
      asm volatile("" : "+r"(x));  // the compiler may not fold the chain
      x += 1;
    }
    sink = x;
  });
  std::printf("  add chain    %8.3f  (about %.2f GHz)\n", add, 1.0 / add);

  const double clk = ns_per_op(trials, 2000000L, [](long n) {
    std::int64_t s = 0;
    for (long i = 0; i < n; ++i) s += clock_type::now().time_since_epoch().count();
    sink = static_cast<std::uint64_t>(s);
  });
  std::printf("  clock        %8.3f\n", clk);

  std::atomic<std::uint64_t> counter{0};
  const double atom = ns_per_op(trials, 20000000L, [&](long n) {
    for (long i = 0; i < n; ++i) counter.fetch_add(1);
  });
  std::printf("  atomic add   %8.3f\n", atom);

  std::mutex m;
  const double mtx = ns_per_op(trials, 10000000L, [&](long n) {
    for (long i = 0; i < n; ++i) {
      m.lock();
      m.unlock();
    }
  });
  std::printf("  mutex        %8.3f\n", mtx);

  const double mal = ns_per_op(trials, 10000000L, [](long n) {
    for (long i = 0; i < n; ++i) {
      void* p = std::malloc(64);
      sink = reinterpret_cast<std::uintptr_t>(p);
      std::free(p);
    }
  });
  std::printf("  malloc 64 B  %8.3f\n", mal);

  // Two threads hand a counter back and forth: each waits for the other's
  // value, then stores the next one.
  {
    alignas(64) std::atomic<long> turn{0};
    const long rounds = 1000000;
    std::vector<double> t;
    for (int i = 0; i < trials; ++i) {
      turn.store(0);
      std::thread other([&] {
        for (long k = 1; k < 2 * rounds; k += 2) {
          while (turn.load(std::memory_order_acquire) != k) {
          }
          turn.store(k + 1, std::memory_order_release);
        }
      });
      const auto start = clock_type::now();
      for (long k = 0; k < 2 * rounds; k += 2) {
        while (turn.load(std::memory_order_acquire) != k) {
        }
        turn.store(k + 1, std::memory_order_release);
      }
      while (turn.load(std::memory_order_acquire) != 2 * rounds) {
      }
      const auto end = clock_type::now();
      other.join();
      t.push_back(std::chrono::duration<double, std::nano>(end - start).count() /
                  static_cast<double>(2 * rounds));
    }
    std::printf("  ping-pong    %8.3f\n", median(t));
  }

  // The same with sleeping threads: a condition variable each way.
  {
    std::mutex wm;
    std::condition_variable cv;
    long turn = 0;
    const long rounds = 20000;
    std::vector<double> t;
    for (int i = 0; i < trials; ++i) {
      turn = 0;
      std::thread other([&] {
        for (long k = 1; k < 2 * rounds; k += 2) {
          std::unique_lock<std::mutex> lock(wm);
          cv.wait(lock, [&] { return turn == k; });
          turn = k + 1;
          cv.notify_all();
        }
      });
      const auto start = clock_type::now();
      for (long k = 0; k < 2 * rounds; k += 2) {
        std::unique_lock<std::mutex> lock(wm);
        cv.wait(lock, [&] { return turn == k; });
        turn = k + 1;
        cv.notify_all();
      }
      {
        std::unique_lock<std::mutex> lock(wm);
        cv.wait(lock, [&] { return turn == 2 * rounds; });
      }
      const auto end = clock_type::now();
      other.join();
      t.push_back(std::chrono::duration<double, std::nano>(end - start).count() /
                  static_cast<double>(2 * rounds));
    }
    std::printf("  wake         %8.3f\n", median(t));
  }
  {
    std::lock_guard<std::mutex> lock(idle_m);
    idle_done = true;
  }
  idle_cv.notify_all();
  idle.join();
  return 0;
}
