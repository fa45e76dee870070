// kokkos_pipeline: a Kokkos heat-equation stencil on chunks that stream
// through the device, with sluice doing the copies and the ordering.
//
// The input lies in pinned host memory in N chunks; each chunk is an
// independent 1-D rod whose two end values are held fixed. Per chunk, the
// device runs `steps` Jacobi steps of the explicit heat equation
//
//   u'(i) = u(i) + alpha * (u(i - 1) - 2 u(i) + u(i + 1))     (alpha = 1/4)
//
// as Kokkos kernels (one Kokkos::parallel_for per step, KOKKOS_LAMBDA) on the
// compute stream K through sluice::kokkos::submit, ping-ponging between the two
// buffers of the chunk's slot. Uploads and downloads run on the copy stream C,
// created with priority::high. Two slots, double-buffered:
//
//   C: upload chunk k -> slot k % 2, record uploaded[k];
//      wait computed[k - 1], download chunk k - 1 from slot (k - 1) % 2
//   K: wait uploaded[k], steps kernels on slot k % 2, record computed[k]
//
// so the upload of chunk k+1 and the download of chunk k-1 run while K computes
// chunk k. C's own order keeps a slot from being overwritten before its chunk
// was downloaded (and that download waited for its compute). heat.hpp's
// run_pipeline enqueues that pipeline, shared with native_kernel; this file
// passes it the step: one Kokkos kernel submitted on K.
//
// The result is checked against a plain sequential run of the same steps on
// the host (heat.hpp).
//
// Timing events around every upload, download and compute give the busy
// intervals of each stream from one start event; the overlap is the time both
// streams were busy divided by the shorter stream's busy time (example.hpp).
#include "example.hpp"
#include "heat.hpp"

#include <sluice/kokkos.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstring>

namespace {

namespace ex = sluice_example;
using exec_t = sluice::kokkos::execution_space;
using view_t =
    Kokkos::View<double*, sluice::kokkos::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr std::size_t chunks = 8;
constexpr int steps = 8;  // heat steps per chunk

//! One Jacobi step from `in` to `out` (n values; the two ends are copied), as
//! one Kokkos kernel on `exec`. A named function, not a lambda: the enclosing
//! function of a KOKKOS_LAMBDA must be one for nvcc.
void heat_step(const exec_t& exec, const view_t& in, const view_t& out, std::size_t n) {
  const double a = ex::heat::alpha;
  Kokkos::parallel_for(
      "heat_step", Kokkos::RangePolicy<exec_t>(exec, 0, n), KOKKOS_LAMBDA(const std::size_t i) {
        if (i == 0 || i == n - 1)
          out(i) = in(i);
        else
          out(i) = in(i) + a * (in(i - 1) - 2.0 * in(i) + in(i + 1));
      });
}

ex::outcome kokkos_pipeline(const ex::options& o) {
  const std::size_t n = o.bytes() / sizeof(double);  // values per chunk
  const sluice::device gpu(0);
  sluice::stream_options copy_options;
  copy_options.priority = sluice::priority::high;
  copy_options.name = "copies";
  sluice::stream_options compute_options;
  compute_options.name = "kokkos";
  const sluice::stream c(gpu, copy_options);     // uploads and downloads
  const sluice::stream k(gpu, compute_options);  // Kokkos kernels
  std::printf(
      "device 0 (%s), %s: stream C (priority %s, native %d) uploads and downloads, "
      "stream K (priority %s, native %d) runs Kokkos kernels through sluice::kokkos::submit; "
      "%zu chunks of %zu MiB (%zu doubles), %d heat steps each, double-buffered\n",
      gpu.name().c_str(), exec_t::name(), ex::to_string(c.priority()), c.native_priority(),
      ex::to_string(k.priority()), k.native_priority(), chunks, o.mib, n, steps);

  // The chunks in pinned memory and two slots of two device buffers (heat.hpp),
  // and a Kokkos view of each buffer: no copy, no ownership.
  ex::heat::pipeline_memory m(gpu, chunks, n);
  const view_t views[4] = {sluice::kokkos::view(m.buffers[0]), sluice::kokkos::view(m.buffers[1]),
                           sluice::kokkos::view(m.buffers[2]), sluice::kokkos::view(m.buffers[3])};

#if !defined(SLUICE_BACKEND_HOST)
  // K's Kokkos instance is made on first use, and making one allocates (which
  // may wait for the device): made here, before the measured work.
  (void)sluice::kokkos::instance(k);
#endif

  // One heat step on K from buffer `from` of m to buffer `to`: one Kokkos
  // kernel, submitted in K's order.
  const auto step = [&views, n](sluice::stream_ref s, std::size_t from, std::size_t to) {
    const view_t in = views[from];
    const view_t out = views[to];
    sluice::kokkos::submit(s, [in, out, n](const exec_t& exec) { heat_step(exec, in, out, n); });
  };
  // run_pipeline (heat.hpp) enqueues the copies on C, the events between C and
  // K, and `step` for every step of every chunk.
  const ex::heat::pipeline_times t = ex::heat::run_pipeline(m, c, k, steps, o.trace_file, step);
  std::printf(
      "span (timing events on device 0): first upload began %.2f ms, last download ended "
      "%.2f ms after the start event\n",
      t.first_upload_began, t.last_download_ended);
  ex::heat::print_overlap(t, "Kokkos stream (K)", "kernels");
  return {ex::heat::check_result(m, steps), t.busy.percent};
}

}  // namespace

int main(int argc, char** argv) {
  // MiB per chunk unless --mib says otherwise: 4 on the host backend (a CPU
  // runs the kernels), 64 on a GPU, where a chunk of 4 MiB takes microseconds.
  const std::size_t default_mib = sluice::backend() == sluice::backend_kind::host ? 4 : 64;
  const ex::description d{"sluice-example-kokkos-pipeline",
                          "a Kokkos heat stencil on a sluice stream (K) with uploads and downloads "
                          "on a high-priority stream (C), chunk by chunk, joined by events",
                          1, default_mib};
  // Without a device (a GPU backend on a machine without its GPU) Kokkos
  // cannot start: run() says so and exits with 77 before any Kokkos call. With
  // --help, run() prints the usage alone (Kokkos would print its own first).
  bool help = false;
  for (int i = 1; i < argc; ++i)
    help = help || std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0;
  if (help || sluice::device_count() == 0) return ex::run(argc, argv, d, kokkos_pipeline);
  const Kokkos::ScopeGuard kokkos(argc, argv);  // takes the --kokkos-* arguments out of argv
  return ex::run(argc, argv, d, kokkos_pipeline);
}
