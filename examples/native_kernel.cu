// native_kernel: your own kernel on a sluice stream, launched on the stream's
// native handle, with the copies on a second stream and events between them.
//
// The input lies in pinned host memory in N chunks, each an independent 1-D
// rod with fixed ends (heat.hpp); per chunk the device runs `steps` explicit
// heat steps, one kernel per step, on the compute stream K, ping-ponging
// between the two buffers of the chunk's slot. Uploads and downloads run on
// the copy stream C, created with priority::high. Two slots, double-buffered:
//
//   C: upload chunk k -> slot k % 2, record uploaded[k];
//      wait computed[k - 1], download chunk k - 1 from slot (k - 1) % 2
//   K: wait uploaded[k], `steps` kernels on slot k % 2, record computed[k]
//
// so the upload of chunk k+1 and the download of chunk k-1 run while K computes
// chunk k, and C's own order keeps a slot from being refilled before its chunk
// was downloaded. The result is checked against a sequential run on the host.
//
// One source for every backend:
//   CUDA: nvcc compiles this file; a step is the __global__ kernel below,
//         launched with <<<..., sluice::native_handle(K)>>>.
//   HIP:  the same, compiled by HIP's compiler (hipcc on AMD, nvcc on HIP's
//         NVIDIA platform: cmake/SluiceHip.cmake).
//   host: the C++ compiler compiles this file (examples/CMakeLists.txt); a
//         step is a host function on K over the chunk's device memory, which
//         the host backend keeps in host memory. The same values, in the
//         same stream order.
// Timing events around every upload, download and compute give each stream's
// busy intervals from one start event; the overlap is the time both streams
// were busy divided by the shorter stream's busy time (example.hpp).
#include "example.hpp"
#include "heat.hpp"

#include <sluice/sluice.hpp>

#if defined(SLUICE_BACKEND_CUDA) || defined(SLUICE_BACKEND_HIP)
#include <sluice/native.hpp>
#define SLUICE_EXAMPLE_KERNELS 1
#endif

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace ex = sluice_example;

constexpr std::size_t chunks = 8;
constexpr int steps = 8;  // even: each chunk's result ends in the first buffer of its slot

#if defined(SLUICE_EXAMPLE_KERNELS)
__global__ void heat_step(const double* in, double* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ex::heat::heat_value(in, i, n);
}
#endif

//! One step from `in` to `out` (n values) in k's order.
void enqueue_step(sluice::stream_ref k, const double* in, double* out, std::size_t n) {
#if defined(SLUICE_EXAMPLE_KERNELS)
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
#if defined(SLUICE_BACKEND_CUDA)
  (void)cudaGetLastError();  // an error left by an earlier call is not this launch's
  heat_step<<<blocks, threads, 0, sluice::native_handle(k)>>>(in, out, n);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess)
    throw std::runtime_error(std::string("heat_step launch: ") + cudaGetErrorString(launched));
#else
  (void)hipGetLastError();
  heat_step<<<blocks, threads, 0, sluice::native_handle(k)>>>(in, out, n);
  const hipError_t launched = hipGetLastError();
  if (launched != hipSuccess)
    throw std::runtime_error(std::string("heat_step launch: ") + hipGetErrorString(launched));
#endif
#else
  k.host_func([in, out, n] {
    for (std::size_t i = 0; i < n; ++i) out[i] = ex::heat::heat_value(in, i, n);
  });
#endif
}

ex::outcome native_kernel(const ex::options& o) {
  const std::size_t n = o.bytes() / sizeof(double);  // values per chunk
  const std::size_t bytes = n * sizeof(double);
  const sluice::device gpu(0);
  // Kernels go to the calling thread's current device, which sluice never
  // changes: make it the streams' device.
  gpu.make_current();
  sluice::stream_options copy_options;
  copy_options.priority = sluice::priority::high;
  copy_options.name = "copies";
  sluice::stream_options compute_options;
  compute_options.name = "kernels";
  const sluice::stream c(gpu, copy_options);     // uploads and downloads
  const sluice::stream k(gpu, compute_options);  // the heat steps
  std::printf(
      "device 0 (%s): stream C (priority %s, native %d) uploads and downloads, stream K "
      "(priority %s, native %d) runs the steps (%s); %zu chunks of %zu MiB (%zu doubles), %d "
      "heat steps each, double-buffered\n",
      gpu.name().c_str(), ex::to_string(c.priority()), c.native_priority(),
      ex::to_string(k.priority()), k.native_priority(),
#if defined(SLUICE_EXAMPLE_KERNELS)
      "a kernel per step on K's native handle",
#else
      "a host function per step: the host backend",
#endif
      chunks, o.mib, n, steps);

  sluice::pinned_buffer<double> input(chunks * n);
  sluice::pinned_buffer<double> output(chunks * n);
  for (std::size_t j = 0; j < chunks; ++j)
    for (std::size_t i = 0; i < n; ++i) input[j * n + i] = ex::heat::initial(j, i);
  std::fill(output.begin(), output.end(), -1.0);
  // Two slots of two buffers each: a step reads one buffer of the slot and writes the other.
  sluice::device_buffer<double> buffers[4] = {{gpu, n}, {gpu, n}, {gpu, n}, {gpu, n}};
  ex::zero_on_own_stream(gpu, {{buffers[0].data(), bytes},
                               {buffers[1].data(), bytes},
                               {buffers[2].data(), bytes},
                               {buffers[3].data(), bytes}});  // set-up, not measured

  sluice::event start = ex::timing_event(gpu);
  std::vector<sluice::event> up_begin, uploaded, down_begin, downloaded, k_begin, computed;
  for (std::size_t j = 0; j < chunks; ++j)
    for (auto* list : {&up_begin, &uploaded, &down_begin, &downloaded, &k_begin, &computed})
      list->push_back(ex::timing_event(gpu));

  const auto download = [&](std::size_t j) {
    c.wait(computed[j]);
    const sluice::trace_range range(c, "download chunk " + std::to_string(j));
    down_begin[j].record(c);
    sluice::copy(c, output.data() + j * n, buffers[2 * (j % 2)].data(), bytes);
    downloaded[j].record(c);
  };

  ex::trace_session trace(o.trace_file);
  start.record(c);
  k.wait(start);
  for (std::size_t j = 0; j < chunks; ++j) {
    const std::size_t slot = j % 2;
    {
      const sluice::trace_range range(c, "upload chunk " + std::to_string(j));
      up_begin[j].record(c);
      sluice::copy(c, buffers[2 * slot].data(), input.data() + j * n, bytes);
      uploaded[j].record(c);
    }
    if (j >= 1) download(j - 1);
    {
      k.wait(uploaded[j]);
      const sluice::trace_range range(k, "compute chunk " + std::to_string(j));
      k_begin[j].record(k);
      for (int t = 0; t < steps; ++t) {
        const double* from = buffers[2 * slot + static_cast<std::size_t>(t % 2)].data();
        double* to = buffers[2 * slot + static_cast<std::size_t>(1 - t % 2)].data();
        enqueue_step(k, from, to, n);
      }
      computed[j].record(k);
    }
  }
  download(chunks - 1);
  c.synchronize();
  k.synchronize();
  trace.finish();

  ex::interval_set copy_busy, compute_busy;
  for (std::size_t j = 0; j < chunks; ++j) {
    copy_busy.push_back({ex::ms_after(start, up_begin[j]), ex::ms_after(start, uploaded[j])});
    copy_busy.push_back({ex::ms_after(start, down_begin[j]), ex::ms_after(start, downloaded[j])});
    compute_busy.push_back({ex::ms_after(start, k_begin[j]), ex::ms_after(start, computed[j])});
  }
  const double copy_ms = ex::covered(copy_busy);
  const double compute_ms = ex::covered(compute_busy);
  const double both = ex::covered(ex::intersection(copy_busy, compute_busy));
  const double overlap = ex::percent_of_shorter(both, copy_ms, compute_ms);
  std::printf(
      "overlap of the copy stream (C) and the compute stream (K): %.0f%% of the shorter busy "
      "time (copies busy %.1f ms, steps busy %.1f ms, both at once %.1f ms; the first upload "
      "and the last download overlap nothing: with copies of equal length the best possible is "
      "about %.0f%%)\n",
      overlap, copy_ms, compute_ms, both,
      100.0 * static_cast<double>(2 * chunks - 2) / static_cast<double>(2 * chunks));
  return {ex::heat::check_result(output.data(), chunks, n, steps), overlap};
}

}  // namespace

int main(int argc, char** argv) {
  // MiB per chunk unless --mib says otherwise: 4 on the host backend (a CPU
  // runs the steps), 64 on a GPU, where a chunk of 4 MiB takes microseconds.
  const std::size_t default_mib = sluice::backend() == sluice::backend_kind::host ? 4 : 64;
  const ex::description d{"sluice-example-native-kernel",
                          "a heat stencil as your own kernel on a sluice stream's native handle "
                          "(K), uploads and downloads on a high-priority stream (C), chunk by "
                          "chunk, joined by events",
                          1, default_mib};
  return ex::run(argc, argv, d, native_kernel);
}
