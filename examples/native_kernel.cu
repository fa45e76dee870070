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
// was downloaded. heat.hpp's run_pipeline enqueues that pipeline, shared with
// kokkos_pipeline; this file passes it the step: one kernel on K. The result
// is checked against a sequential run on the host.
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

namespace {

namespace ex = sluice_example;

constexpr std::size_t chunks = 8;
constexpr int steps = 8;  // heat steps per chunk

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

  // The chunks in pinned memory and two slots of two device buffers (heat.hpp).
  ex::heat::pipeline_memory m(gpu, chunks, n);
  // One heat step on K from buffer `from` of m to buffer `to`: one kernel.
  const auto step = [&m, n](sluice::stream_ref s, std::size_t from, std::size_t to) {
    enqueue_step(s, m.buffers[from].data(), m.buffers[to].data(), n);
  };
  // run_pipeline (heat.hpp) enqueues the copies on C, the events between C and
  // K, and `step` for every step of every chunk.
  const ex::heat::pipeline_times t = ex::heat::run_pipeline(m, c, k, steps, o.trace_file, step);
  ex::heat::print_overlap(t, "compute stream (K)", "steps");
  return {ex::heat::check_result(m, steps), t.busy.percent};
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
