// sluice-probe-xdev: raw CUDA only (no sluice code). What the CUDA runtime does
// with the calls sluice makes when the stream's device is not the calling
// thread's current device, and with host-to-host copies behind a held stream.
// Each line is one check with the vendor's result; nothing is asserted.
//
//   1. cudaMemcpyAsync pinned -> pinned on a stream held by a stream memory
//      wait (cuStreamWaitValue64 on mapped pinned memory, as a sluice gate):
//      does the call return while the stream is held? A helper thread
//      releases the stream after --hold-ms and the call's duration is printed.
//   2. (2+ devices) With device 0 current, on a stream of device 1, with
//      memory from a memory pool of device 1 (cudaMallocFromPoolAsync, no
//      access granted to device 0): cudaMemcpyAsync device -> pinned,
//      pinned -> device, cudaMemsetAsync, cudaEventRecord, cudaFreeAsync.
//      The same with device 1 current, and with cudaMalloc memory.
//
//   sluice-probe-xdev [--hold-ms=MS]
#include "../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using raw::check;
using raw::wait_entry;
using raw::wait_fn;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

//! One line per vendor call: its name, the conditions, the result.
void report(const char* what, cudaError_t e) {
  std::printf("  %-72s %s%s%s\n", what, cudaGetErrorName(e), e == cudaSuccess ? "" : ": ",
              e == cudaSuccess ? "" : cudaGetErrorString(e));
  (void)cudaGetLastError();  // no stale error for the next line
}

void host_to_host_behind_a_hold(int hold_ms) {
  std::printf("1. pinned -> pinned cudaMemcpyAsync on a held stream (device 0)\n");
  check(cudaSetDevice(0), "cudaSetDevice(0)");
  const wait_fn wait = wait_entry();
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* word = nullptr;
  check(cudaHostAlloc(&word, 8, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  std::memset(word, 0, 8);
  void* dev_word = nullptr;
  check(cudaHostGetDevicePointer(&dev_word, word, 0), "cudaHostGetDevicePointer");
  constexpr std::size_t n = 1 << 20;
  void* a = nullptr;
  void* b = nullptr;
  check(cudaHostAlloc(&a, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  check(cudaHostAlloc(&b, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  std::memset(a, 0x5A, n);
  std::memset(b, 0, n);
  if (wait(s, reinterpret_cast<CUdeviceptr>(dev_word), 1, CU_STREAM_WAIT_VALUE_GEQ) !=
      CUDA_SUCCESS) {
    std::printf("  cuStreamWaitValue64 failed: not checked\n");
    return;
  }
  const auto t0 = clock_type::now();
  std::atomic<double> released_at{-1.0};
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    released_at = ms_since(t0);
    static_cast<std::atomic<std::uint64_t>*>(word)->store(1);
  });
  const cudaError_t e = cudaMemcpyAsync(b, a, n, cudaMemcpyDefault, s);
  const double returned = ms_since(t0);
  const bool copied_on_return = static_cast<unsigned char*>(b)[0] == 0x5A;
  releaser.join();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  std::printf(
      "  cudaMemcpyAsync(pinned, pinned, 1 MiB, cudaMemcpyDefault): %s; returned after "
      "%.1f ms, the stream was released at %.1f ms (held for %d ms): %s; data copied when "
      "it returned: %s\n",
      cudaGetErrorName(e), returned, released_at.load(), hold_ms,
      returned >= released_at.load() && released_at.load() >= 0
          ? "BLOCKED until the stream was released"
          : "returned while the stream was held",
      copied_on_return ? "yes" : "no");
  (void)cudaFreeHost(a);
  (void)cudaFreeHost(b);
  (void)cudaFreeHost(word);
  (void)cudaStreamDestroy(s);
}

void another_current_device() {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  std::printf("2. calls on a stream of device 1 with another device current\n");
  if (count < 2) {
    std::printf("  needs 2 devices, found %d: not checked\n", count);
    return;
  }
  check(cudaSetDevice(1), "cudaSetDevice(1)");
  cudaStream_t s1{};
  check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t e1{};
  check(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 1;
  cudaMemPool_t pool{};
  check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  constexpr std::size_t n = 256 * 1024 + 7;
  void* pooled = nullptr;
  check(cudaMallocFromPoolAsync(&pooled, n, pool, s1), "cudaMallocFromPoolAsync");
  check(cudaStreamSynchronize(s1), "cudaStreamSynchronize");
  void* plain = nullptr;
  check(cudaMalloc(&plain, n), "cudaMalloc");
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");

  {
    // The same copies with device 0 current, other ways: explicit kinds, and
    // the driver's cuMemcpyAsync.
    check(cudaSetDevice(0), "cudaSetDevice");
    std::printf(" device 0 current, other ways:\n");
    report("cudaMemcpyAsync(pinned <- pool memory of device 1, DeviceToHost, stream of dev 1)",
           cudaMemcpyAsync(pinned, pooled, n, cudaMemcpyDeviceToHost, s1));
    report("cudaMemcpyAsync(pool memory of device 1 <- pinned, HostToDevice, stream of dev 1)",
           cudaMemcpyAsync(pooled, pinned, n, cudaMemcpyHostToDevice, s1));
    using memcpy_fn = CUresult (*)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemcpyAsync", &fn, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess && fn != nullptr) {
      const CUresult r = reinterpret_cast<memcpy_fn>(fn)(
          reinterpret_cast<CUdeviceptr>(pinned), reinterpret_cast<CUdeviceptr>(pooled), n, s1);
      report("cuMemcpyAsync(pinned <- pool memory of device 1, stream of device 1)",
             static_cast<cudaError_t>(r));
    } else {
      std::printf("  cuMemcpyAsync: no entry point\n");
    }
    report("cudaStreamSynchronize(stream of device 1)", cudaStreamSynchronize(s1));
  }
  for (const int current : {0, 1}) {
    check(cudaSetDevice(current), "cudaSetDevice");
    std::printf(" device %d current:\n", current);
    report("cudaMemcpyAsync(pinned <- pool memory of device 1, stream of device 1)",
           cudaMemcpyAsync(pinned, pooled, n, cudaMemcpyDefault, s1));
    report("cudaMemcpyAsync(pool memory of device 1 <- pinned, stream of device 1)",
           cudaMemcpyAsync(pooled, pinned, n, cudaMemcpyDefault, s1));
    report("cudaMemsetAsync(pool memory of device 1, stream of device 1)",
           cudaMemsetAsync(pooled, 0, n, s1));
    report("cudaMemcpyAsync(pinned <- cudaMalloc memory of device 1, stream of device 1)",
           cudaMemcpyAsync(pinned, plain, n, cudaMemcpyDefault, s1));
    report("cudaEventRecord(event of device 1, stream of device 1)", cudaEventRecord(e1, s1));
    report("cudaStreamSynchronize(stream of device 1)", cudaStreamSynchronize(s1));
    void* extra = nullptr;
    report("cudaMallocFromPoolAsync(pool of device 1, stream of device 1)",
           cudaMallocFromPoolAsync(&extra, 4096, pool, s1));
    if (extra != nullptr)
      report("cudaFreeAsync(that memory, stream of device 1)", cudaFreeAsync(extra, s1));
    report("cudaStreamSynchronize(stream of device 1)", cudaStreamSynchronize(s1));
  }
  check(cudaSetDevice(1), "cudaSetDevice(1)");
  (void)cudaFreeAsync(pooled, s1);
  (void)cudaStreamSynchronize(s1);
  (void)cudaFree(plain);
  (void)cudaFreeHost(pinned);
  (void)cudaEventDestroy(e1);
  (void)cudaStreamDestroy(s1);
  (void)cudaMemPoolDestroy(pool);
}

//! What finding out the current device costs (median of 21 runs of 100000 calls).
void cost_of_current_device_queries() {
  std::printf("3. cost of asking for the current device (ns per call, median of 21 x 100000)\n");
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  using ctx_fn = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  ctx_fn get_ctx = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    get_ctx = reinterpret_cast<ctx_fn>(fn);
  const auto median_ns = [](auto&& call) {
    std::vector<double> runs;
    for (int r = 0; r < 21; ++r) {
      const auto t0 = clock_type::now();
      for (int i = 0; i < 100000; ++i) call();
      runs.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() /
                     100000.0);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
  };
  volatile int sink = 0;
  std::printf("  cudaGetDevice          %.1f\n", median_ns([&] {
                int d = 0;
                (void)cudaGetDevice(&d);
                sink = sink + d;
              }));
  std::printf("  cudaStreamGetDevice    %.1f\n", median_ns([&] {
                int d = 0;
                (void)cudaStreamGetDevice(s, &d);
                sink = sink + d;
              }));
  if (get_ctx != nullptr) {
    std::printf("  cuCtxGetCurrent        %.1f\n", median_ns([&] {
                  CUcontext c{};
                  (void)get_ctx(&c);
                  sink = sink + (c != nullptr ? 1 : 0);
                }));
  }
  (void)cudaStreamDestroy(s);
}

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-xdev";
  int hold_ms = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--hold-ms=", 0) == 0) {
      hold_ms = std::atoi(arg.c_str() + 10);
    } else {
      std::fprintf(stderr, "usage: sluice-probe-xdev [--hold-ms=MS]\n");
      return 2;
    }
  }
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  std::printf("sluice-probe-xdev: raw CUDA (runtime %d, driver API %d)\n", runtime, driver);
  host_to_host_behind_a_hold(hold_ms);
  another_current_device();
  cost_of_current_device_queries();
  return 0;
}
