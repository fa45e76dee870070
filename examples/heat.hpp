// examples/heat.hpp: the computation of kokkos_pipeline and native_kernel, and
// its check. The input is N chunks, each an independent 1-D rod whose two end
// values are held fixed; a step of the explicit heat equation is
//
//   u'(i) = u(i) + alpha * (u(i - 1) - 2 u(i) + u(i + 1))     (alpha = 1/4)
//
// The device's result is checked against the same steps run sequentially on
// the host: every value within 1e-12 (the values lie in [0, 1]; a device
// compiler may contract a * b + c into one fused multiply-add, so
// bit-identical results are not promised; the output says whether they were).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
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

}  // namespace sluice_example::heat
