// sluice-probe-gates: raw CUDA only (no sluice code). K streams each with a
// host function pending at once. A GPU stream that runs a host function tells
// the host that its earlier work is done (a signal) and holds its later work
// until the function returned (a gate). Two ways to do it on the device,
// compared here with the same host side:
//
//   memop   a stream memory write of the signal word, then a stream memory
//           wait on the gate word (sluice's `signal` path, and what CUDA's own
//           host node does in effect: the stream waits in its hardware queue);
//   kernel  one kernel of one thread that stores the signal word and spins on
//           the gate word (with __nanosleep between reads) until it opens: the
//           stream's later work waits behind a running kernel, not a waiting
//           queue entry;
//   mixed   stream 0 as memop, the others as kernel: what sluice's rule gives
//           when the first stream's host function finds nothing else holding.
//
// Every stream is first held on one flag word (cuStreamWaitValue64), so all K
// signals become due at once when the host stores the flag. Parts, per way:
//
//   seen    K = --streams: how many signals the host sees within --seen-ms
//           while every gate stays closed (then all gates open);
//   hold    K = 1, 32 and --streams: the host opens gate k --hold-us after it
//           saw signal k (a host function that works that long, one per
//           stream, all at once), from the flag's store until an event
//           recorded behind every gate has completed: median and min of
//           --trials, and the ratio K / 1 (the fan-out target of
//           bench/host_fn.cpp: 2.0 at K = 64).
//   copies  what the kernel's gates cost other work while held: --copy-mib MiB
//           from pinned host memory to the device and back on a stream of its
//           own (median of 5, GB/s) with nothing held, and while --streams
//           gate kernels spin (every signal seen, every gate closed), each
//           reading its gate word in host memory every 0.5 us or so.
//
// Words live in mapped pinned memory; generations grow, so no word is reset.
// CUDA_DEVICE_MAX_CONNECTIONS is 32 unless the environment sets it.
//
//   sluice-probe-gates [--streams=N] [--trials=N] [--hold-us=U] [--seen-ms=M]
//                      [--ways=memop,kernel,mixed] [--copy-mib=M (256; 0: no copies)]
//                      [--pauses=NS,... (500)]
#include "../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using raw::check;
using clock_type = std::chrono::steady_clock;

__global__ void gate_kernel(unsigned pause_cap_ns, volatile unsigned long long* signal,
                            const volatile unsigned long long* gate,
                            unsigned long long generation) {
  *signal = generation;
  __threadfence_system();
  // As sluice's gate kernel (backends/cuda_hip/host_gate.cu): 16 reads 250 ns
  // apart, then the pause doubling up to pause_cap_ns.
  unsigned pause = pause_cap_ns < 250 ? pause_cap_ns : 250;
  unsigned reads = 0;
  while (*gate < generation) {
    __nanosleep(pause);
    if (++reads >= 16 && pause < pause_cap_ns)
      pause = pause * 2 < pause_cap_ns ? pause * 2 : pause_cap_ns;
  }
}

struct words {
  volatile unsigned long long* host = nullptr;
  unsigned long long* device = nullptr;
  explicit words(std::size_t n) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, n * sizeof(unsigned long long), cudaHostAllocMapped), "cudaHostAlloc");
    std::memset(p, 0, n * sizeof(unsigned long long));
    host = static_cast<volatile unsigned long long*>(p);
    void* d = nullptr;
    check(cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer");
    device = static_cast<unsigned long long*>(d);
  }
};

struct probe {
  int streams = 64;
  raw::wait_fn wait = nullptr;
  raw::wait_fn write = nullptr;
  std::vector<cudaStream_t> s;
  std::vector<cudaEvent_t> done;
  words flag{1}, signal, gate;
  unsigned long long generation = 0;
  unsigned pause_cap_ns = 500;  // the gate kernel's longest pause between reads

  explicit probe(int n)
      : streams(n), signal(static_cast<std::size_t>(n)), gate(static_cast<std::size_t>(n)) {
    wait = raw::memop_entry("cuStreamWaitValue64");
    write = raw::memop_entry("cuStreamWriteValue64");
    s.resize(static_cast<std::size_t>(n));
    done.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      check(cudaStreamCreateWithFlags(&s[static_cast<std::size_t>(i)], cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
      check(cudaEventCreateWithFlags(&done[static_cast<std::size_t>(i)], cudaEventDisableTiming),
            "cudaEventCreateWithFlags");
    }
    // The kernel loaded before any stream is held: CUDA loads modules lazily
    // (CUDA_MODULE_LOADING=LAZY, the default), and a first launch while
    // streams wait for the host waited for them (the first run of this probe
    // hung there on 2x H100).
    gate_kernel<<<1, 1, 0, s[0]>>>(500, signal.device, gate.device, 0);
    check(cudaGetLastError(), "gate_kernel launch");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  void memop(raw::wait_fn fn, cudaStream_t st, unsigned long long* word, unsigned long long v,
             unsigned flags) {
    const CUresult r =
        fn(reinterpret_cast<CUstream>(st), reinterpret_cast<CUdeviceptr>(word), v, flags);
    if (r != CUDA_SUCCESS) {
      std::fprintf(stderr, "%s: stream memory operation failed (%d)\n", raw::program,
                   static_cast<int>(r));
      std::exit(2);
    }
  }

  // Enqueues, on the first k streams: hold on the flag, signal, gate, record.
  // way: "memop", "kernel" or "mixed" (stream 0 memop, the others kernel).
  void enqueue(int k, const std::string& way) {
    ++generation;
    for (int i = 0; i < k; ++i) {
      const auto u = static_cast<std::size_t>(i);
      memop(wait, s[u], flag.device, generation, CU_STREAM_WAIT_VALUE_GEQ);
      if (way == "kernel" || (way == "mixed" && i > 0)) {
        gate_kernel<<<1, 1, 0, s[u]>>>(pause_cap_ns, signal.device + i, gate.device + i,
                                       generation);
        check(cudaGetLastError(), "gate_kernel launch");
      } else {
        memop(write, s[u], signal.device + i, generation, CU_STREAM_WRITE_VALUE_DEFAULT);
        memop(wait, s[u], gate.device + i, generation, CU_STREAM_WAIT_VALUE_GEQ);
      }
      check(cudaEventRecord(done[u], s[u]), "cudaEventRecord");
    }
  }

  // Stores the flag; opens gate i hold after signal i was seen (never, with a
  // negative hold, until `give_up`). Returns the seconds from the flag's store
  // until every event completed, and the signals seen.
  std::pair<double, int> run(int k, std::chrono::microseconds hold,
                             std::chrono::milliseconds give_up) {
    std::vector<clock_type::time_point> seen(static_cast<std::size_t>(k));
    std::vector<char> was_seen(static_cast<std::size_t>(k), 0),
        opened(static_cast<std::size_t>(k), 0);
    int seen_count = 0, open_count = 0;
    const auto t0 = clock_type::now();
    *flag.host = generation;
    while (open_count < k) {
      const auto now = clock_type::now();
      for (int i = 0; i < k; ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (!was_seen[u] && signal.host[i] >= generation) {
          was_seen[u] = 1;
          seen[u] = now;
          ++seen_count;
        }
        if (was_seen[u] && !opened[u] && hold.count() >= 0 && now - seen[u] >= hold) {
          gate.host[i] = generation;
          opened[u] = 1;
          ++open_count;
        }
      }
      if (now - t0 >= give_up) {  // open the rest, and report what was seen
        for (int i = 0; i < k; ++i) gate.host[i] = generation;
        for (int i = 0; i < k; ++i) {
          if (!was_seen[static_cast<std::size_t>(i)] && signal.host[i] >= generation) ++seen_count;
        }
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        return {-1.0, seen_count};
      }
    }
    for (int i = 0; i < k; ++i) {
      while (cudaEventQuery(done[static_cast<std::size_t>(i)]) == cudaErrorNotReady) {
      }
    }
    const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return {seconds, seen_count};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

//! Copies of `bytes` each way on a stream of their own: GB/s, median of 5;
//! -1 when one did not end within 10 s.
struct copier {
  std::size_t bytes;
  void* host = nullptr;
  void* device = nullptr;
  cudaStream_t s{};
  cudaEvent_t from{}, to{};
  explicit copier(std::size_t n) : bytes(n) {
    check(cudaHostAlloc(&host, n, cudaHostAllocDefault), "cudaHostAlloc");
    check(cudaMalloc(&device, n), "cudaMalloc");
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreate(&from), "cudaEventCreate");
    check(cudaEventCreate(&to), "cudaEventCreate");
    std::memset(host, 1, n);
  }
  double gbps(bool to_device) {
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) {
      check(cudaEventRecord(from, s), "cudaEventRecord");
      check(cudaMemcpyAsync(to_device ? device : host, to_device ? host : device, bytes,
                            to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s),
            "cudaMemcpyAsync");
      check(cudaEventRecord(to, s), "cudaEventRecord");
      // Bounded: a copy held behind the gates is a finding, not a hang.
      const auto until = clock_type::now() + std::chrono::seconds(10);
      cudaError_t q = cudaErrorNotReady;
      while ((q = cudaEventQuery(to)) == cudaErrorNotReady && clock_type::now() < until) {
      }
      if (q == cudaErrorNotReady) return -1;
      check(q, "cudaEventQuery");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
      v.push_back(static_cast<double>(bytes) / (static_cast<double>(ms) * 1e6));
    }
    return median(v);
  }
};

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-gates";
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  int streams = 64, trials = 20, hold_us = 1000, seen_ms = 200, copy_mib = 256;
  std::string ways = "memop,kernel,mixed";
  std::vector<unsigned> pauses = {500};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--streams=", 0) == 0)
      streams = std::atoi(a.c_str() + 10);
    else if (a.rfind("--trials=", 0) == 0)
      trials = std::atoi(a.c_str() + 9);
    else if (a.rfind("--hold-us=", 0) == 0)
      hold_us = std::atoi(a.c_str() + 10);
    else if (a.rfind("--seen-ms=", 0) == 0)
      seen_ms = std::atoi(a.c_str() + 10);
    else if (a.rfind("--ways=", 0) == 0)
      ways = a.substr(7);
    else if (a.rfind("--copy-mib=", 0) == 0)
      copy_mib = std::atoi(a.c_str() + 11);
    else if (a.rfind("--pauses=", 0) == 0) {
      pauses.clear();
      for (const char* c = a.c_str() + 9; *c != '\0';) {
        char* end = nullptr;
        pauses.push_back(static_cast<unsigned>(std::strtoul(c, &end, 10)));
        c = *end == ',' ? end + 1 : end;
        if (end == nullptr || (*end != ',' && *end != '\0')) break;
      }
    } else {
      std::fprintf(stderr,
                   "usage: sluice-probe-gates [--streams=N] [--trials=N] [--hold-us=U] "
                   "[--seen-ms=M] [--ways=memop,kernel,mixed] [--copy-mib=M] [--pauses=NS,...]\n");
      return 1;
    }
  }
  if (streams < 1 || trials < 1 || hold_us < 0 || seen_ms < 1 || copy_mib < 0) return 1;
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf(
      "sluice-probe-gates: %s, %d streams, CUDA_DEVICE_MAX_CONNECTIONS=%s, hold %d us, "
      "%d trials\n",
      prop.name, streams, connections, hold_us, trials);
  probe p(streams);
  int status = 0;
  for (const char* way : {"memop", "kernel", "mixed"}) {
    if (ways.find(way) == std::string::npos) continue;
    p.enqueue(streams, way);
    const auto closed =
        p.run(streams, std::chrono::microseconds(-1), std::chrono::milliseconds(seen_ms));
    std::printf("%s seen: %d of %d signals within %d ms, every gate closed\n", way, closed.second,
                streams, seen_ms);
    std::fflush(stdout);
    double one = 0;
    std::vector<int> ks = {1, 32, streams};
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    for (int k : ks) {
      if (k > streams) continue;
      std::vector<double> t;
      int lost = 0;
      for (int trial = 0; trial < trials; ++trial) {
        p.enqueue(k, way);
        const auto r =
            p.run(k, std::chrono::microseconds(hold_us), std::chrono::milliseconds(5000));
        if (r.first < 0)
          ++lost;
        else
          t.push_back(r.first * 1e6);
      }
      const double m = median(t);
      if (k == 1) one = m;
      std::printf(
          "%s hold K=%d: median %.1f us, min %.1f us, ratio K/1 %.2f%s\n", way, k, m,
          t.empty() ? 0.0 : *std::min_element(t.begin(), t.end()), one > 0 ? m / one : 0.0,
          lost > 0 ? (" (" + std::to_string(lost) + " trials not done within 5 s)").c_str() : "");
      std::fflush(stdout);
      if (lost > 0) status = 1;
    }
  }
  if (copy_mib > 0) {
    copier c(static_cast<std::size_t>(copy_mib) << 20);
    const double h2d = c.gbps(true), d2h = c.gbps(false);
    std::printf("copies, %d MiB, nothing held: to the device %.2f GB/s, to the host %.2f GB/s\n",
                copy_mib, h2d, d2h);
    // The kernel's gates only: memory-wait gates can hold the copy stream's
    // queue itself (the hold part above). For each longest pause of --pauses
    // (the kernel's reads of its gate word: 16 at 250 ns, then doubling up to it): the
    // copies, and the gate's latency (K = 1, opened as soon as the signal is
    // seen: median of --trials, us from the flag's store to its event).
    for (const unsigned cap : pauses) {
      const char* way = "kernel";
      p.pause_cap_ns = cap;
      std::vector<double> one_gate;
      for (int trial = 0; trial < trials; ++trial) {
        p.enqueue(1, way);
        const auto r = p.run(1, std::chrono::microseconds(0), std::chrono::milliseconds(5000));
        if (r.first >= 0) one_gate.push_back(r.first * 1e6);
      }
      p.enqueue(streams, way);
      *p.flag.host = p.generation;
      // Every signal seen (200 ms at most): the gates are what the device now holds.
      int seen = 0;
      for (const auto until = clock_type::now() + std::chrono::milliseconds(200);
           seen < streams && clock_type::now() < until;) {
        seen = 0;
        for (int i = 0; i < streams; ++i) seen += p.signal.host[i] >= p.generation ? 1 : 0;
      }
      const double h = c.gbps(true);
      const double d = h < 0 ? -1 : c.gbps(false);
      if (h < 0 || d < 0) {
        std::printf(
            "pause up to %u ns: copies, %d MiB, %d %s gates held: a copy did not end within "
            "10 s\n",
            cap, copy_mib, streams, way);
        status = 1;
      } else
        std::printf(
            "pause up to %u ns: one gate opened at once %.1f us (median); copies, %d MiB, %d %s "
            "gates held (%d signals seen): to the device %.2f GB/s (%.3f of nothing held), to the "
            "host %.2f GB/s (%.3f)\n",
            cap, median(one_gate), copy_mib, streams, way, seen, h, h / h2d, d, d / d2h);
      std::fflush(stdout);
      for (int i = 0; i < streams; ++i) p.gate.host[i] = p.generation;  // open every gate
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
  }
  return status;
}
