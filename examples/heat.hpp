// examples/heat.hpp: what kokkos_pipeline and native_kernel share: the
// computation, its check, and the pipeline that streams the chunks through the
// device. The input is N chunks, each an independent 1-D rod whose two end
// values are held fixed; a step of the explicit heat equation is
//
//   u'(i) = u(i) + alpha * (u(i - 1) - 2 u(i) + u(i + 1))     (alpha = 1/4)
//
// The device's result is checked against the same steps run sequentially on
// the host: every value within 1e-12 (the values lie in [0, 1]; a device
// compiler may contract a * b + c into one fused multiply-add, so
// bit-identical results are not promised; the output says whether they were).
//
// run_pipeline enqueues everything but the steps themselves: the copies, the
// events that order the two streams, the timing events and the trace ranges.
// Each example passes the step it shows (a native kernel launch, a Kokkos
// kernel through sluice::kokkos::submit).
#pragma once

#include "example.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

// Device code (nvcc, hipcc) calls heat_value too.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define SLUICE_EXAMPLE_HOST_DEVICE __host__ __device__
#else
#define SLUICE_EXAMPLE_HOST_DEVICE
#endif

namespace sluice_example::heat {

constexpr double alpha = 0.25;
constexpr double tolerance = 1e-12;

//! The input: element i of chunk k, in [0, 1].
inline double initial(std::size_t k, std::size_t i) {
  return static_cast<double>((i * 37 + k * 11) % 97) / 96.0;
}

//! Value i of one step from `in` (n values): the two ends stay as they are.
SLUICE_EXAMPLE_HOST_DEVICE inline double heat_value(const double* in, std::size_t i,
                                                    std::size_t n) {
  if (i == 0 || i == n - 1) return in[i];
  return in[i] + alpha * (in[i - 1] - 2.0 * in[i] + in[i + 1]);
}

//! `steps` steps on the host, sequentially: the reference.
inline void reference_steps(std::vector<double>& u, std::vector<double>& tmp, int steps) {
  const std::size_t n = u.size();
  for (int t = 0; t < steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) tmp[i] = heat_value(u.data(), i, n);
    u.swap(tmp);
  }
}

//! Compares `chunks` results of n values each with the reference run of
//! `steps` steps; prints the outcome.
inline bool check_result(const double* result, std::size_t chunks, std::size_t n, int steps) {
  std::vector<double> u(n), tmp(n);
  double worst = 0;
  std::size_t worst_chunk = 0, worst_index = 0, differing = 0;
  bool changed = false;
  for (std::size_t k = 0; k < chunks; ++k) {
    for (std::size_t i = 0; i < n; ++i) u[i] = initial(k, i);
    reference_steps(u, tmp, steps);
    const double* got = result + k * n;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = std::fabs(got[i] - u[i]);
      changed = changed || u[i] != initial(k, i);
      if (got[i] != u[i]) ++differing;
      if (!(d <= worst)) {  // a NaN counts as the worst
        worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
        worst_chunk = k;
        worst_index = i;
      }
    }
  }
  const bool ok = changed && worst <= tolerance;
  std::printf(
      "check against a sequential run on the host (%zu chunks x %zu values, %d steps): "
      "%s; largest |difference| %.3g (tolerance %.0e), %zu values not bit-identical\n",
      chunks, n, steps, ok ? "match" : "MISMATCH", worst, tolerance, differing);
  if (!ok && worst > tolerance) {
    std::vector<double> again(n), scratch(n);
    for (std::size_t i = 0; i < n; ++i) again[i] = initial(worst_chunk, i);
    reference_steps(again, scratch, steps);
    std::printf("check: chunk %zu, value %zu: got %.17g, expected %.17g\n", worst_chunk,
                worst_index, result[worst_chunk * n + worst_index], again[worst_index]);
  }
  if (!changed) std::printf("check: the reference did not change the input: nothing was tested\n");
  return ok;
}

// --- the pipeline ----------------------------------------------------------

//! The pipeline's memory: `chunks` chunks of n values each in pinned host
//! memory (the input filled with initial(), the output with -1), and two slots
//! of two device buffers each: slot s holds buffers[2 s] and buffers[2 s + 1],
//! a step reads one of them and writes the other. The device buffers are zeroed
//! on a stream of their own (set-up, not measured).
struct pipeline_memory {
  pipeline_memory(sluice::device d, std::size_t chunk_count, std::size_t values)
      : chunks(chunk_count),
        n(values),
        input(chunk_count * values),
        output(chunk_count * values),
        buffers{{d, values}, {d, values}, {d, values}, {d, values}} {
    for (std::size_t j = 0; j < chunks; ++j)
      for (std::size_t i = 0; i < n; ++i) input[j * n + i] = initial(j, i);
    std::fill(output.begin(), output.end(), -1.0);
    const std::size_t bytes = n * sizeof(double);
    zero_on_own_stream(d, {{buffers[0].data(), bytes},
                           {buffers[1].data(), bytes},
                           {buffers[2].data(), bytes},
                           {buffers[3].data(), bytes}});
  }

  std::size_t chunks;
  std::size_t n;  //!< values per chunk
  sluice::pinned_buffer<double> input;
  sluice::pinned_buffer<double> output;
  sluice::device_buffer<double> buffers[4];
};

//! What run_pipeline measured with timing events, in milliseconds after its
//! start event.
struct pipeline_times {
  busy_overlap busy;               //!< C's busy time (a_ms), K's (b_ms), both at once
  double first_upload_began = 0;   //!< when the first upload began
  double last_download_ended = 0;  //!< when the last download ended
  //! The best overlap with copies of equal length: the first upload and the
  //! last download overlap nothing.
  double best_percent = 0;
};

//! Streams the chunks of `m` through the device, two slots double-buffered:
//!
//!   C: upload chunk j -> the first buffer of slot j % 2, record uploaded[j];
//!      wait computed[j - 1], download chunk j - 1 from its slot
//!   K: wait uploaded[j], `steps` calls step(k, from, to), record computed[j]
//!
//! where step(k, from, to) enqueues one heat step on k from m.buffers[from] to
//! m.buffers[to], the two buffers of the chunk's slot, alternating. C's own
//! order keeps a slot from being refilled before its chunk was downloaded.
//! Timing events around every upload, download and chunk's steps give each
//! stream's busy intervals; each of them is also a trace range ("upload chunk
//! j", "compute chunk j", "download chunk j"), written to `trace_file` unless
//! it is empty. Returns once both streams have finished.
template <class Step>
pipeline_times run_pipeline(pipeline_memory& m, sluice::stream_ref c, sluice::stream_ref k,
                            int steps, const std::string& trace_file, Step step) {
  const std::size_t n = m.n;
  const std::size_t bytes = n * sizeof(double);
  const sluice::device d = c.device();
  sluice::event start = timing_event(d);
  std::vector<sluice::event> up_begin, uploaded, down_begin, downloaded, k_begin, computed;
  for (std::size_t j = 0; j < m.chunks; ++j)
    for (auto* list : {&up_begin, &uploaded, &down_begin, &downloaded, &k_begin, &computed})
      list->push_back(timing_event(d));

  // After `steps` steps a chunk's result lies in the first buffer of its slot
  // when steps is even, in the second when it is odd.
  const std::size_t result = static_cast<std::size_t>(steps % 2);
  const auto download = [&](std::size_t j) {
    c.wait(computed[j]);
    const sluice::trace_range range(c, "download chunk " + std::to_string(j));
    down_begin[j].record(c);
    sluice::copy(c, m.output.data() + j * n, m.buffers[2 * (j % 2) + result].data(), bytes);
    downloaded[j].record(c);
  };

  trace_session trace(trace_file);
  start.record(c);
  k.wait(start);
  for (std::size_t j = 0; j < m.chunks; ++j) {
    const std::size_t slot = j % 2;
    {
      const sluice::trace_range range(c, "upload chunk " + std::to_string(j));
      up_begin[j].record(c);
      sluice::copy(c, m.buffers[2 * slot].data(), m.input.data() + j * n, bytes);
      uploaded[j].record(c);
    }
    if (j >= 1) download(j - 1);
    {
      k.wait(uploaded[j]);
      const sluice::trace_range range(k, "compute chunk " + std::to_string(j));
      k_begin[j].record(k);
      for (int t = 0; t < steps; ++t) {
        const std::size_t from = 2 * slot + static_cast<std::size_t>(t % 2);
        const std::size_t to = 2 * slot + static_cast<std::size_t>(1 - t % 2);
        step(k, from, to);
      }
      computed[j].record(k);
    }
  }
  download(m.chunks - 1);
  c.synchronize();
  k.synchronize();
  trace.finish();

  interval_set copy_busy, compute_busy;
  for (std::size_t j = 0; j < m.chunks; ++j) {
    copy_busy.push_back({ms_after(start, up_begin[j]), ms_after(start, uploaded[j])});
    copy_busy.push_back({ms_after(start, down_begin[j]), ms_after(start, downloaded[j])});
    compute_busy.push_back({ms_after(start, k_begin[j]), ms_after(start, computed[j])});
  }
  pipeline_times t;
  t.busy = overlap_of(copy_busy, compute_busy);
  t.first_upload_began = ms_after(start, up_begin.front());
  t.last_download_ended = ms_after(start, downloaded.back());
  t.best_percent =
      100.0 * static_cast<double>(2 * m.chunks - 2) / static_cast<double>(2 * m.chunks);
  return t;
}

//! Prints the overlap run_pipeline measured: `compute` names stream K (e.g.
//! "compute stream (K)"), `work` what K ran (e.g. "steps").
inline void print_overlap(const pipeline_times& t, const char* compute, const char* work) {
  std::printf(
      "overlap of the copy stream (C) and the %s: %.0f%% of the shorter busy time (copies busy "
      "%.1f ms, %s busy %.1f ms, both at once %.1f ms; the first upload and the last download "
      "overlap nothing: with copies of equal length the best possible is about %.0f%%)\n",
      compute, t.busy.percent, t.busy.a_ms, work, t.busy.b_ms, t.busy.both_ms, t.best_percent);
}

//! Checks m's output (after run_pipeline) against `steps` steps on the host
//! and prints the outcome.
inline bool check_result(const pipeline_memory& m, int steps) {
  return check_result(m.output.data(), m.chunks, m.n, steps);
}

}  // namespace sluice_example::heat
