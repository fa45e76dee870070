// sluice-probe-staging: sluice's staged peer-copy pipeline (backends/cuda_hip/
// staging.cpp) on ONE device, next to the raw CUDA copies it is made of, in the
// same run. With source and destination on device 0 the pipeline runs every
// step it runs between two GPUs (device-to-host chunks into pinned slots on
// one stream, host-to-device chunks on another, events between them), and both
// directions share one PCIe link, as each GPU's link carries one direction
// between two GPUs. So it says how close the pipeline comes to the link, not
// what it does between two GPUs (that is `sluice bench p2p`, staged rows):
//
//   raw_d2h   cudaMemcpyAsync device -> pinned, whole buffer, one call
//   raw_h2d   cudaMemcpyAsync pinned -> device, whole buffer, one call
//   raw_both  the two at once on two streams (the link's duplex bandwidth)
//   raw_serial  device -> pinned -> device, one after the other (no pipeline)
//   staged    detail::staged_copy_for_probe(device 0 -> device 0): bytes / time
//
// Times: CUDA events around each copy on its stream, median of --trials.
// The staged copy's destination is checked after its timed trials.
#include <sluice/detail/interop.hpp>
#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <cuda_runtime.h>

#include "../../tests/pattern.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "sluice-probe-staging: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 5;
  std::size_t max_mib = 1024;
  std::size_t min_mib = 8;
  std::size_t factor = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--trials=", 0) == 0) trials = std::max(1, std::atoi(a.c_str() + 9));
    else if (a.rfind("--max-mib=", 0) == 0) max_mib = std::strtoull(a.c_str() + 10, nullptr, 10);
    else if (a.rfind("--min-mib=", 0) == 0)
      min_mib = std::max<std::size_t>(1, std::strtoull(a.c_str() + 10, nullptr, 10));
    else if (a.rfind("--factor=", 0) == 0)
      factor = std::max<std::size_t>(2, std::strtoull(a.c_str() + 9, nullptr, 10));
    else {
      std::fprintf(stderr, "usage: sluice-probe-staging [--trials=N] [--min-mib=M] [--max-mib=M] [--factor=F]\n");
      return 2;
    }
  }
  if (sluice::device_count() == 0) {
    std::printf("sluice-probe-staging: no cuda device: nothing measured\n");
    return 77;
  }
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const char* chunk = std::getenv("SLUICE_STAGING_CHUNK_KIB");
  std::printf("sluice-probe-staging: %s (device 0), %s; staging slots %s KiB; median of %d trials\n",
              prop.name, sluice::backend_version().c_str(), chunk != nullptr ? chunk : "8192 (default)",
              trials);
  std::printf("%10s %10s %10s %10s %12s %10s %14s %14s\n", "MiB", "raw_d2h", "raw_h2d", "raw_both",
              "raw_serial", "staged", "staged/d2h", "staged/serial");
  sluice::stream s{sluice::device{0}};
  cudaStream_t raw1 = nullptr, raw2 = nullptr;
  ok(cudaStreamCreateWithFlags(&raw1, cudaStreamNonBlocking), "cudaStreamCreate");
  ok(cudaStreamCreateWithFlags(&raw2, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  for (cudaEvent_t* e : {&a, &b, &c, &d})
    ok(cudaEventCreateWithFlags(e, cudaEventDefault), "cudaEventCreateWithFlags");
  int status = 0;
  for (std::size_t mib = min_mib; mib <= max_mib; mib *= factor) {
    const std::size_t bytes = mib << 20;
    sluice::device_buffer<unsigned char> src{sluice::device{0}, bytes}, dst{sluice::device{0}, bytes},
        dst2{sluice::device{0}, bytes};
    sluice::pinned_buffer<unsigned char> host{bytes}, host2{bytes};
    for (std::size_t i = 0; i < bytes; ++i) host[i] = sluice::test_data::pattern_byte(i, 7);
    sluice::copy(s, src.data(), host.data(), bytes);
    s.synchronize();
    std::vector<double> d2h, h2d, both, serial, staged;
    const auto gbs = [bytes](float ms) { return static_cast<double>(bytes) / (ms * 1e6); };
    for (int t = 0; t < trials; ++t) {
      float ms = 0;
      ok(cudaEventRecord(a, raw1), "record");
      ok(cudaMemcpyAsync(host2.data(), src.data(), bytes, cudaMemcpyDeviceToHost, raw1), "d2h");
      ok(cudaEventRecord(b, raw1), "record");
      ok(cudaEventSynchronize(b), "sync");
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      d2h.push_back(gbs(ms));
      ok(cudaEventRecord(a, raw1), "record");
      ok(cudaMemcpyAsync(dst2.data(), host.data(), bytes, cudaMemcpyHostToDevice, raw1), "h2d");
      ok(cudaEventRecord(b, raw1), "record");
      ok(cudaEventSynchronize(b), "sync");
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      h2d.push_back(gbs(ms));
      // Both directions at once: from the first start to the last end.
      ok(cudaEventRecord(a, raw1), "record");
      ok(cudaStreamWaitEvent(raw2, a, 0), "wait");
      ok(cudaMemcpyAsync(host2.data(), src.data(), bytes, cudaMemcpyDeviceToHost, raw1), "d2h");
      ok(cudaMemcpyAsync(dst2.data(), host.data(), bytes, cudaMemcpyHostToDevice, raw2), "h2d");
      ok(cudaEventRecord(c, raw2), "record");
      ok(cudaStreamWaitEvent(raw1, c, 0), "wait");
      ok(cudaEventRecord(b, raw1), "record");
      ok(cudaEventSynchronize(b), "sync");
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      both.push_back(2.0 * gbs(ms));  // two buffers moved
      ok(cudaEventRecord(a, raw1), "record");
      ok(cudaMemcpyAsync(host2.data(), src.data(), bytes, cudaMemcpyDeviceToHost, raw1), "d2h");
      ok(cudaMemcpyAsync(dst2.data(), host2.data(), bytes, cudaMemcpyHostToDevice, raw1), "h2d");
      ok(cudaEventRecord(b, raw1), "record");
      ok(cudaEventSynchronize(b), "sync");
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      serial.push_back(gbs(ms));
      // sluice's pipeline, on sluice's stream.
      const sluice::peer_piece piece{dst.data(), src.data(), bytes};
      ok(cudaEventRecord(a, sluice::native_handle(s)), "record");
      sluice::detail::staged_copy_for_probe(s, 0, 0, &piece, 1);
      ok(cudaEventRecord(d, sluice::native_handle(s)), "record");
      ok(cudaEventSynchronize(d), "sync");
      ok(cudaEventElapsedTime(&ms, a, d), "elapsed");
      staged.push_back(gbs(ms));
    }
    sluice::copy(s, host2.data(), dst.data(), bytes);
    s.synchronize();
    const bool same = std::memcmp(host.data(), host2.data(), bytes) == 0;
    if (!same) status = 1;
    std::printf("%10zu %10.1f %10.1f %10.1f %12.1f %10.1f %14.3f %14.3f%s\n", mib, median(d2h),
                median(h2d), median(both), median(serial), median(staged),
                median(staged) / median(d2h), median(staged) / median(serial),
                same ? "" : "  DATA WRONG");
  }
  std::printf("(GB/s = 1e9 bytes per second; raw_both counts both buffers)\n");
  for (cudaEvent_t e : {a, b, c, d}) ok(cudaEventDestroy(e), "cudaEventDestroy");
  ok(cudaStreamDestroy(raw1), "cudaStreamDestroy");
  ok(cudaStreamDestroy(raw2), "cudaStreamDestroy");
  return status;
}
