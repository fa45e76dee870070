// sluice-probe-channels: raw CUDA only (no sluice code). Which streams share a
// hardware queue ("channel", CUDA_DEVICE_MAX_CONNECTIONS of them) and so
// serialize falsely: for each stream i of a layout, i is held on a stream
// memory wait, an event is recorded on every other stream, and after
// --wait-ms the streams whose event has not completed are the ones tied to i.
// Prints, per layout, each stream's ties and whether they follow the creation
// order modulo some M (the vendor's round-robin), among all streams or among
// those of one priority.
//
// Layouts (each in a fresh context):
//   same         --streams streams of priority 0, created one after another
//   interleaved  priorities 0 and greatest alternating, as sluice's pool made them
//   blocks       all of priority 0 first, then all of the greatest
//
//   sluice-probe-channels [--streams=N] [--wait-ms=M] [--layouts=same,interleaved,blocks]
//   [--memset] [--memop=write|wait] [--memop-version=V]
//   (--memset: each other stream also runs a 4 KiB memset before its record;
//   --memop: a stream memory write, or a wait already satisfied, before it, as
//   sluice's flags and host-function gates do; --memop-version: the CUDA
//   version whose stream memory operations are used, hold included: 12000,
//   the default, the _v2 functions of CUDA 12 and 13; 11080 CUDA 11.8's, which
//   sluice::hip calls on HIP's NVIDIA platform, built against CUDA 11.8.
//   Built against CUDA 11.8's runtime, as scripts/hip-nvidia-build also does,
//   the runtime's own version is used whatever is asked.)
#include "../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

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

struct layout_result {
  std::vector<int> priority;              // per stream
  std::vector<std::vector<int>> tied_to;  // per stream: the others that did not complete
};

struct memops {
  raw::wait_fn wait = nullptr;
  raw::wait_fn write = nullptr;
};

layout_result run_layout(const std::string& layout, int n, int wait_ms, const memops& ops,
                         bool memset_work, const std::string& memop) {
  check(cudaDeviceReset(), "cudaDeviceReset");
  int least = 0;
  int greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  layout_result r;
  r.priority.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    int p = 0;
    if (layout == "interleaved") p = i % 2 == 0 ? 0 : greatest;
    if (layout == "blocks") p = i < n / 2 ? 0 : greatest;
    r.priority[static_cast<std::size_t>(i)] = p;
  }
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(n));
  std::vector<cudaEvent_t> events(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    check(cudaStreamCreateWithPriority(&streams[static_cast<std::size_t>(i)], cudaStreamNonBlocking,
                                       r.priority[static_cast<std::size_t>(i)]),
          "cudaStreamCreateWithPriority");
    check(cudaEventCreateWithFlags(&events[static_cast<std::size_t>(i)], cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
  }
  void* host = nullptr;
  check(cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  auto* word = static_cast<std::atomic<std::uint64_t>*>(host);
  new (word) std::atomic<std::uint64_t>(0);
  void* dev_word = nullptr;
  check(cudaHostGetDevicePointer(&dev_word, host, 0), "cudaHostGetDevicePointer");
  r.tied_to.resize(static_cast<std::size_t>(n));
  unsigned char* scratch = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&scratch), static_cast<std::size_t>(n) * 4096),
        "cudaMalloc");
  for (int i = 0; i < n; ++i) {
    const auto value = static_cast<std::uint64_t>(i + 1);
    raw::wait_value(ops.wait, streams[static_cast<std::size_t>(i)], dev_word, value);
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      const cudaStream_t sj = streams[static_cast<std::size_t>(j)];
      if (memset_work)
        check(cudaMemsetAsync(scratch + static_cast<std::size_t>(j) * 4096, j & 0xFF, 4096, sj),
              "cudaMemsetAsync");
      // The word the streams write (a slot each) lies beside the held one;
      // a wait on the held word for a value it already has passes at once.
      if (memop == "write" &&
          ops.write(reinterpret_cast<CUstream>(sj),
                    reinterpret_cast<CUdeviceptr>(static_cast<char*>(dev_word) + 8 +
                                                  8 * static_cast<std::size_t>(j % 7)),
                    value, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWriteValue64");
      if (memop == "wait") raw::wait_value(ops.wait, sj, dev_word, value - 1);
      check(cudaEventRecord(events[static_cast<std::size_t>(j)], sj), "cudaEventRecord");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      const cudaError_t q = cudaEventQuery(events[static_cast<std::size_t>(j)]);
      if (q == cudaErrorNotReady)
        r.tied_to[static_cast<std::size_t>(i)].push_back(j);
      else
        check(q, "cudaEventQuery");
    }
    word->store(value, std::memory_order_release);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  for (auto e : events) check(cudaEventDestroy(e), "cudaEventDestroy");
  for (auto s : streams) check(cudaStreamDestroy(s), "cudaStreamDestroy");
  check(cudaFreeHost(host), "cudaFreeHost");
  check(cudaFree(scratch), "cudaFree");
  return r;
}

//! Whether "i and j tied" is exactly "index(i) == index(j) mod m" for the given indices.
bool fits_modulus(const layout_result& r, const std::vector<int>& index,
                  const std::vector<bool>& in, int m) {
  const int n = static_cast<int>(r.tied_to.size());
  for (int i = 0; i < n; ++i) {
    if (!in[static_cast<std::size_t>(i)]) continue;
    for (int j = 0; j < n; ++j) {
      if (j == i || !in[static_cast<std::size_t>(j)]) continue;
      bool tied = false;
      for (int t : r.tied_to[static_cast<std::size_t>(i)]) tied = tied || t == j;
      const bool same =
          index[static_cast<std::size_t>(i)] % m == index[static_cast<std::size_t>(j)] % m;
      if (tied != same) return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-channels";
  int n = 96;
  int wait_ms = 20;
  std::string layouts = "same,interleaved,blocks";
  bool memset_work = false;
  std::string memop = "none";
  int memop_version = 12000;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg.rfind("--streams=", 0) == 0)
      n = std::atoi(arg.c_str() + 10);
    else if (arg.rfind("--wait-ms=", 0) == 0)
      wait_ms = std::atoi(arg.c_str() + 10);
    else if (arg.rfind("--layouts=", 0) == 0)
      layouts = arg.substr(10);
    else if (arg == "--memset")
      memset_work = true;
    else if (arg == "--memop=write" || arg == "--memop=wait")
      memop = arg.substr(8);
    else if (arg.rfind("--memop-version=", 0) == 0)
      memop_version = std::atoi(arg.c_str() + 16);
    else {
      std::fprintf(stderr,
                   "usage: sluice-probe-channels [--streams=N] [--wait-ms=M] [--layouts=...] "
                   "[--memset] [--memop=write|wait] [--memop-version=V]\n");
      return 2;
    }
  }
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf(
      "sluice-probe-channels: raw CUDA (runtime %d); %s; CUDA_DEVICE_MAX_CONNECTIONS=%s; %d "
      "streams; %d ms; %s%s%s; stream memory operations of CUDA %d\n",
      CUDART_VERSION, prop.name, connections != nullptr ? connections : "unset", n, wait_ms,
      memset_work ? "memset, " : "", memop == "none" ? "" : memop.c_str(),
      memop == "none" ? "record" : " and record",
      CUDART_VERSION >= 12050 ? memop_version : CUDART_VERSION);
  memops ops;
  ops.wait = raw::memop_entry("cuStreamWaitValue64", memop_version);
  ops.write = raw::memop_entry("cuStreamWriteValue64", memop_version);
  std::size_t at = 0;
  while (at <= layouts.size()) {
    const std::size_t comma = layouts.find(',', at);
    const std::string layout =
        layouts.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? layouts.size() + 1 : comma + 1;
    if (layout.empty()) continue;
    const layout_result r = run_layout(layout, n, wait_ms, ops, memset_work, memop);
    std::printf("layout=%s\n", layout.c_str());
    for (int i = 0; i < n; ++i) {
      std::printf("  stream %2d (priority %2d) tied to:", i,
                  r.priority[static_cast<std::size_t>(i)]);
      for (int t : r.tied_to[static_cast<std::size_t>(i)]) std::printf(" %d", t);
      std::printf("\n");
    }
    // Creation order among all streams, and among the streams of each priority.
    std::vector<int> global(static_cast<std::size_t>(n));
    std::vector<int> per_priority(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      global[static_cast<std::size_t>(i)] = i;
      int k = 0;
      for (int j = 0; j < i; ++j)
        k += r.priority[static_cast<std::size_t>(j)] == r.priority[static_cast<std::size_t>(i)] ? 1
                                                                                                : 0;
      per_priority[static_cast<std::size_t>(i)] = k;
    }
    const std::vector<bool> all(static_cast<std::size_t>(n), true);
    std::string fits;
    for (int m = 1; m <= 128; ++m)
      if (fits_modulus(r, global, all, m)) fits += " global-mod-" + std::to_string(m);
    for (const int p : {r.priority.front(), r.priority.back()}) {
      std::vector<bool> in(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i)
        in[static_cast<std::size_t>(i)] = r.priority[static_cast<std::size_t>(i)] == p;
      for (int m = 1; m <= 128; ++m)
        if (fits_modulus(r, per_priority, in, m))
          fits += " priority" + std::to_string(p) + "-mod-" + std::to_string(m);
      if (r.priority.front() == r.priority.back()) break;
    }
    std::printf("layout=%s fits:%s\n", layout.c_str(), fits.empty() ? " none" : fits.c_str());
  }
  return 0;
}
