// sluice-probe-queue-depth: how many operations of one kind can be enqueued on
// a CUDA stream that is held (by a sluice gate: a stream wait on a flag) before
// the enqueueing call blocks in the driver. A held stream cannot drain, so a
// caller that enqueues past this depth before releasing the hold deadlocks
// (docs/design.md, "Host-function batches and queue depth"). Kinds: raw cudaLaunchHostFunc, raw
// cudaMemsetAsync, sluice host_func, sluice wait_value (a stream wait whose flag is already set).
//
//   sluice-probe-queue-depth [--max=N]       (default N = 4096)
//
// Method: one thread enqueues on the held stream and counts returned calls;
// the main thread watches the count. When it has not moved for one second (the
// enqueuing thread is blocked) or reached N, the depth is the count; the gate
// is then opened and the stream drains. The one-second wait is the probe's
// measurement window, not synchronization of the work.
#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace {

void empty_host_function(void*) {}

//! Enqueues `enqueue_one` up to `max` times on a held stream; returns how many returned.
int depth(const char* name, int max, const std::function<void(sluice::stream_ref)>& enqueue_one) {
  sluice::stream s{sluice::device{0}};
  sluice::flag gate{0};
  s.wait_value(gate, 1);
  std::atomic<int> returned{0};
  std::thread producer([&] {
    for (int i = 0; i < max; ++i) {
      enqueue_one(s);
      returned.store(i + 1, std::memory_order_release);
    }
  });
  int last = -1;
  while (returned.load() < max) {
    const int now = returned.load();
    if (now == last) break;  // no progress for a whole window: blocked
    last = now;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const int result = returned.load();
  gate.store(1);
  producer.join();
  s.synchronize();
  std::printf("%-40s %6d%s\n", name, result,
              result >= max ? " (did not block)" : " (then blocked)");
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int max = 4096;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--max=", 6) == 0) max = std::atoi(argv[i] + 6);
  if (sluice::device_count() == 0) {
    std::printf("no CUDA device: sluice-probe-queue-depth needs one\n");
    return 0;
  }
  std::printf("%s, %s\n", sluice::device{0}.name().c_str(), sluice::backend_version().c_str());
  std::printf("%-40s %6s\n", "operation on a held stream", "depth");
  void* memory = nullptr;
  if (cudaMalloc(&memory, 64) != cudaSuccess) return 1;
  sluice::flag set{1};
  depth("raw cudaLaunchHostFunc", max, [](sluice::stream_ref s) {
    (void)cudaLaunchHostFunc(sluice::native_handle(s), empty_host_function, nullptr);
  });
  depth("raw cudaMemsetAsync (64 B)", max, [memory](sluice::stream_ref s) {
    (void)cudaMemsetAsync(memory, 0, 64, sluice::native_handle(s));
  });
  depth("raw cudaLaunchHostFunc + cudaMemsetAsync", max, [memory](sluice::stream_ref s) {
    (void)cudaLaunchHostFunc(sluice::native_handle(s), empty_host_function, nullptr);
    (void)cudaMemsetAsync(memory, 0, 64, sluice::native_handle(s));
  });
  depth("raw cudaEventRecord", max, [](sluice::stream_ref s) {
    static cudaEvent_t e = [] {
      cudaEvent_t made = nullptr;
      (void)cudaEventCreateWithFlags(&made, cudaEventDisableTiming);
      return made;
    }();
    (void)cudaEventRecord(e, sluice::native_handle(s));
  });
  depth("sluice wait_value (flag already set)", max,
        [&set](sluice::stream_ref s) { s.wait_value(set, 1); });
  depth("sluice write_value", max, [&set](sluice::stream_ref s) { s.write_value(set, 1); });
  depth("sluice write_value + wait_value", max, [&set](sluice::stream_ref s) {
    s.write_value(set, 1);
    s.wait_value(set, 1);
  });
  depth("sluice host_func", max, [](sluice::stream_ref s) { s.host_func([] {}); });
  depth("sluice host_func + fill (64 B)", max, [memory](sluice::stream_ref s) {
    s.host_func([] {});
    sluice::fill(s, static_cast<unsigned char*>(memory), 1, 64);
  });
  depth("sluice fill + copy + host_func (ORD-1)", max, [memory](sluice::stream_ref s) {
    static sluice::pinned_buffer<unsigned char> pinned{64};
    sluice::fill(s, static_cast<unsigned char*>(memory), 1, 64);
    sluice::copy(s, pinned.data(), static_cast<unsigned char*>(memory), 64);
    s.host_func([] {});
  });
  if (sluice::device_count() >= 2) {
    // Staged peer copies (devices 0 -> 1, peer access never enabled here), on
    // a held stream of device 0. sluice's pipeline enqueues three operations
    // per chunk on each of the two streams (a wait, a copy, a record): a 1 MiB
    // copy is one chunk, a 16 MiB copy sixteen (backends/cuda_hip/staging.cpp).
    const sluice::device d0{0}, d1{1};
    constexpr std::size_t big = std::size_t{16} << 20;
    sluice::device_buffer<unsigned char> src{d0, big}, dst{d1, big};
    void* raw_src = nullptr;
    void* raw_dst = nullptr;
    (void)cudaSetDevice(0);
    (void)cudaMalloc(&raw_src, big);
    (void)cudaSetDevice(1);
    (void)cudaMalloc(&raw_dst, big);
    (void)cudaSetDevice(0);
    for (const std::size_t bytes : {std::size_t{1} << 20, big}) {
      const std::string mib = std::to_string(bytes >> 20) + " MiB";
      depth(("sluice copy_peer staged " + mib).c_str(), max, [&](sluice::stream_ref s) {
        (void)sluice::copy_peer(s, dst.data(), d1, src.data(), d0, bytes);
      });
      depth(("raw cudaMemcpyPeerAsync staged " + mib).c_str(), max, [&](sluice::stream_ref s) {
        (void)cudaMemcpyPeerAsync(raw_dst, 1, raw_src, 0, bytes, sluice::native_handle(s));
      });
    }
    (void)cudaFree(raw_src);
    (void)cudaFree(raw_dst);
  }
  (void)cudaFree(memory);
  return 0;
}
