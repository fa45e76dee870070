// sluice-probe-held-stream: raw CUDA only (no sluice code). Holds stream A on a
// stream memory wait (cuStreamWaitValue64 on mapped pinned memory, the way a
// sluice gate does), then runs a memset and a device-to-pinned copy on a second
// stream B and polls B for up to --seconds. Prints whether B completed while A
// was held, then releases A.
//
// Written for compute-sanitizer: under its tools the conformance test
// IND_1__a_stream_completes_while_another_is_held failed whenever it was the
// first test of the process (docs/conformance/sanitizer.md). Run this program
// as the first and only thing in a process, with and without the tool, and with
// one warm-up at a time before the hold, to see which first use matters.
//
//   sluice-probe-held-stream [--warm=none|copy|wait|both] [--alloc-after-hold] [--seconds=S]
#include "../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

using raw::check;
using raw::wait_entry;
using raw::wait_fn;
using raw::wait_value;

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-held-stream";
  std::string warm = "none";
  bool alloc_after_hold = false;
  double seconds = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--warm=", 0) == 0) {
      warm = a.substr(7);
    } else if (a == "--alloc-after-hold") {
      alloc_after_hold = true;
    } else if (a.rfind("--seconds=", 0) == 0) {
      seconds = std::atof(a.c_str() + 10);
    } else {
      std::fprintf(stderr,
                   "usage: sluice-probe-held-stream [--warm=none|copy|wait|both] "
                   "[--alloc-after-hold] [--seconds=S]\n");
      return 2;
    }
  }
  if (warm != "none" && warm != "copy" && warm != "wait" && warm != "both") {
    std::fprintf(stderr, "sluice-probe-held-stream: unknown --warm=%s\n", warm.c_str());
    return 2;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(0)");
  const wait_fn w = wait_entry();

  constexpr std::size_t n = std::size_t{256} * 1024;
  auto* flag = static_cast<volatile std::uint64_t*>(nullptr);
  void* flag_host = nullptr;
  check(
      cudaHostAlloc(&flag_host, sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped),
      "cudaHostAlloc(flag)");
  flag = static_cast<volatile std::uint64_t*>(flag_host);
  *flag = 0;
  void* flag_dev = nullptr;
  check(cudaHostGetDevicePointer(&flag_dev, flag_host, 0), "cudaHostGetDevicePointer");
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  std::memset(pinned, 0, n);

  if (warm == "copy" || warm == "both") {  // one memset and device-to-pinned copy, then sync
    cudaStream_t s{};
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    void* d = nullptr;
    check(cudaMalloc(&d, 4096), "cudaMalloc");
    check(cudaMemsetAsync(d, 1, 4096, s), "cudaMemsetAsync");
    check(cudaMemcpyAsync(pinned, d, 4096, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    check(cudaFree(d), "cudaFree");
    check(cudaStreamDestroy(s), "cudaStreamDestroy");
  }
  if (warm == "wait" || warm == "both") {  // one stream memory wait that is already satisfied
    cudaStream_t s{};
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *flag = 1;
    wait_value(w, s, flag_dev, 1);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    check(cudaStreamDestroy(s), "cudaStreamDestroy");
    *flag = 0;
  }

  cudaStream_t held{};
  check(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* before = nullptr;
  check(cudaMalloc(&before, n), "cudaMalloc");
  void* spare = nullptr;
  check(cudaMalloc(&spare, n), "cudaMalloc");
  wait_value(w, held, flag_dev, 1);
  check(cudaMemsetAsync(before, 1, n, held), "cudaMemsetAsync(held)");

  // The second stream's own buffer: allocated before the hold, or after it.
  void* d = nullptr;
  if (!alloc_after_hold) d = spare;
  if (alloc_after_hold) check(cudaMalloc(&d, n), "cudaMalloc after the hold");
  cudaStream_t other{};
  check(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaMemsetAsync(d, 0x5A, n, other), "cudaMemsetAsync(other)");
  check(cudaMemcpyAsync(pinned, d, n, cudaMemcpyDefault, other), "cudaMemcpyAsync(other)");

  const auto t0 = std::chrono::steady_clock::now();
  const auto limit = std::chrono::duration<double>(seconds);
  bool done = false;
  while (std::chrono::steady_clock::now() - t0 < limit) {
    const cudaError_t q = cudaStreamQuery(other);
    if (q == cudaSuccess) {
      done = true;
      break;
    }
    if (q != cudaErrorNotReady) check(q, "cudaStreamQuery");
    std::this_thread::yield();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool held_still = cudaStreamQuery(held) == cudaErrorNotReady;
  *flag = 1;  // release
  check(cudaStreamSynchronize(held), "cudaStreamSynchronize(held)");
  check(cudaStreamSynchronize(other), "cudaStreamSynchronize(other)");
  const auto* bytes = static_cast<const unsigned char*>(pinned);
  bool data_ok = true;
  for (std::size_t i = 0; i < n; ++i) data_ok = data_ok && bytes[i] == 0x5A;
  std::printf("warm=%s alloc_after_hold=%d: other stream %s (%.1f ms), held stream %s, data %s\n",
              warm.c_str(), alloc_after_hold ? 1 : 0,
              done ? "completed while the first was held" : "did NOT complete while held", ms,
              held_still ? "was still held" : "was NOT held", data_ok ? "ok" : "WRONG");
  if (d != spare) check(cudaFree(d), "cudaFree");
  check(cudaFree(spare), "cudaFree");
  check(cudaFree(before), "cudaFree");
  check(cudaStreamDestroy(held), "cudaStreamDestroy");
  check(cudaStreamDestroy(other), "cudaStreamDestroy");
  check(cudaFreeHost(pinned), "cudaFreeHost");
  check(cudaFreeHost(flag_host), "cudaFreeHost");
  return done && held_still && data_ok ? 0 : 1;
}
