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
// was downloaded (and that download waited for its compute).
//
// The result is checked against a plain sequential run of the same steps on
// the host (heat.hpp, shared with native_kernel).
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
#include <string>
#include <vector>

namespace {

namespace ex = sluice_example;
using exec_t = sluice::kokkos::execution_space;
using view_t =
    Kokkos::View<double*, sluice::kokkos::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr std::size_t chunks = 8;
constexpr int steps = 8;  // even: each chunk's result ends in the first buffer of its slot

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
  const std::size_t bytes = n * sizeof(double);
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
  const view_t views[4] = {sluice::kokkos::view(buffers[0]), sluice::kokkos::view(buffers[1]),
                           sluice::kokkos::view(buffers[2]), sluice::kokkos::view(buffers[3])};

#if !defined(SLUICE_BACKEND_HOST)
  // K's Kokkos instance is made on first use, and making one allocates (which
  // may wait for the device): made here, before the measured work.
  (void)sluice::kokkos::instance(k);
#endif

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
        const view_t from = views[2 * slot + static_cast<std::size_t>(t % 2)];
        const view_t to = views[2 * slot + static_cast<std::size_t>(1 - t % 2)];
        sluice::kokkos::submit(k,
                               [from, to, n](const exec_t& exec) { heat_step(exec, from, to, n); });
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
      "span (timing events on device 0): first upload began %.2f ms, last download ended "
      "%.2f ms after the start event\n",
      ex::ms_after(start, up_begin.front()), ex::ms_after(start, downloaded.back()));
  std::printf(
      "overlap of the copy stream (C) and the Kokkos stream (K): %.0f%% of the shorter busy "
      "time (copies busy %.1f ms, kernels busy %.1f ms, both at once %.1f ms; the first upload "
      "and the last download overlap nothing: with copies of equal length the best possible is "
      "about %.0f%%)\n",
      overlap, copy_ms, compute_ms, both,
      100.0 * static_cast<double>(2 * chunks - 2) / static_cast<double>(2 * chunks));
  return {ex::heat::check_result(output.data(), chunks, n, steps), overlap};
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
