// graph_timestep: a launch-bound timestep captured once and launched many
// times, checked against the same timestep enqueued step by step.
//
// The state is a periodic 1-D field u of n doubles in pinned memory; each step
//   stream s: u copied to the device (d_u); s records `fork`;
//   stream t: waits on `fork`, copies the field's first cell back (the right
//             neighbour's halo) while s copies its last cell (the left one's);
//             t records `join`, s waits on `join`;
//   stream s: on CUDA, a kernel on s's native handle adds the sum of the
//             squares of d_u to a device accumulator (the field's energy,
//             graph_timestep_kernel.cu; --no-kernel: none);
//   stream s: a host function updates u from the two halos and u itself
//             (u[i] = (u[i-1] + 2 u[i] + u[i+1]) / 4, periodic).
// Eager: the calls above made again for each of the steps. Graph: the calls
// made once inside a sluice::capture of s, then graph_exec::launch(s) per
// step. Both start from the same u; the results (and the accumulated
// energies) must be equal to the bit (the same operations in the same
// order). Prints both times.
//
//   sluice-example-graph-timestep-<backend> [--steps=N] [--cells=N] [--no-kernel]
// Exit status: 0 the results agree, 1 otherwise (bad arguments included), 77 no device.
#include "graph_timestep_kernel.hpp"

#include <sluice/graph.hpp>
#include <sluice/sluice.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct field {
  std::size_t n;
  sluice::pinned_buffer<double> u, left_halo, right_halo;
  sluice::device_buffer<double> d_u, d_energy;
  std::vector<double> scratch;  // the host function's
  bool kernel;                  // the energy kernel runs in each step
  field(sluice::device d, std::size_t cells, bool with_kernel)
      : n(cells),
        u(cells),
        left_halo(1),
        right_halo(1),
        d_u(d, cells),
        d_energy(d, 1),
        scratch(cells),
        kernel(with_kernel) {
    for (std::size_t i = 0; i < n; ++i) u[i] = i == n / 2 ? 1.0 : 0.0;
  }
};

struct streams {
  sluice::stream s, t;
  sluice::event fork, join;
  explicit streams(sluice::device d) : s(d), t(d), fork(d), join(d) {}
};

//! One timestep's calls, the same whether they run now or are recorded.
void timestep(streams& q, field& f) {
  const std::size_t n = f.n;
  sluice::copy(q.s, f.d_u.data(), f.u.data(), n * sizeof(double));
  q.fork.record(q.s);
  q.t.wait(q.fork);
  sluice::copy(q.t, f.right_halo.data(), f.d_u.data(), sizeof(double));
  sluice::copy(q.s, f.left_halo.data(), f.d_u.data() + (n - 1), sizeof(double));
  if (f.kernel) {
    const int e =
        graph_timestep::add_energy(sluice::native_handle(q.s), f.d_u.data(), n, f.d_energy.data());
    if (e != 0)
      throw std::runtime_error("the energy kernel's launch failed: error " + std::to_string(e));
  }
  q.join.record(q.t);
  q.s.wait(q.join);
  q.s.host_func([&f] {
    const std::size_t cells = f.n;
    for (std::size_t i = 0; i < cells; ++i) {
      const double left = i == 0 ? f.left_halo[0] : f.u[i - 1];
      const double right = i + 1 == cells ? f.right_halo[0] : f.u[i + 1];
      f.scratch[i] = (left + 2 * f.u[i] + right) / 4;
    }
    std::memcpy(f.u.data(), f.scratch.data(), cells * sizeof(double));
  });
}

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

//! The accumulated energy of f, read back.
double energy_of(streams& q, field& f) {
  sluice::pinned_buffer<double> back(1);
  sluice::copy(q.s, back.data(), f.d_energy.data(), sizeof(double));
  q.s.synchronize();
  return back[0];
}

int run(int steps, std::size_t cells, bool kernel) {
  const sluice::device dev(0);
  streams q(dev);
  std::printf("device 0 (%s): %d timesteps of a %zu-cell field, streams s and t; kernel: %s\n",
              dev.name().c_str(), steps, cells,
              kernel                          ? "the energy kernel on s's native handle"
              : graph_timestep::have_kernel() ? "none (--no-kernel)"
                                              : "none (this backend captures no native work)");

  field eager(dev, cells, kernel);
  sluice::fill(q.s, eager.d_energy.data(), 0, sizeof(double));
  const auto eager_start = clock_type::now();
  for (int i = 0; i < steps; ++i) timestep(q, eager);
  const double eager_enqueued = ms_since(eager_start);
  q.s.synchronize();
  const double eager_ms = ms_since(eager_start);

  field graphed(dev, cells, kernel);
  sluice::fill(q.s, graphed.d_energy.data(), 0, sizeof(double));
  q.s.synchronize();
  const auto capture_start = clock_type::now();
  sluice::graph g = [&] {
    sluice::capture cap(q.s);
    timestep(q, graphed);
    return cap.end();
  }();
  const sluice::graph_exec exec = g.instantiate();
  const double capture_ms = ms_since(capture_start);
  const auto graph_start = clock_type::now();
  for (int i = 0; i < steps; ++i) exec.launch(q.s);
  const double graph_enqueued = ms_since(graph_start);
  q.s.synchronize();
  const double graph_ms = ms_since(graph_start);

  std::printf("graph: %zu operations, captured and instantiated in %.3f ms; launches: %s\n",
              g.size(), capture_ms, exec.how().c_str());
  std::printf("eager: %d steps in %.3f ms (%.2f us per step; the calls took %.3f ms)\n", steps,
              eager_ms, 1000 * eager_ms / steps, eager_enqueued);
  std::printf("graph: %d launches in %.3f ms (%.2f us per step; the launches took %.3f ms)\n",
              steps, graph_ms, 1000 * graph_ms / steps, graph_enqueued);
  double sum = 0;
  for (std::size_t i = 0; i < cells; ++i) {
    if (std::memcmp(&eager.u[i], &graphed.u[i], sizeof(double)) != 0) {
      std::printf("FAIL: cell %zu: eager %.17g, graph %.17g\n", i, eager.u[i], graphed.u[i]);
      return 1;
    }
    sum += graphed.u[i];
  }
  // The stencil keeps the field's sum: 1 (one unit of heat) up to rounding.
  if (sum < 1 - 1e-9 || sum > 1 + 1e-9) {
    std::printf("FAIL: the field sums to %.17g, not 1: a step went wrong\n", sum);
    return 1;
  }
  if (kernel) {
    const double e_eager = energy_of(q, eager), e_graph = energy_of(q, graphed);
    if (std::memcmp(&e_eager, &e_graph, sizeof(double)) != 0 || !(e_graph > 0)) {
      std::printf("FAIL: energy: eager %.17g, graph %.17g\n", e_eager, e_graph);
      return 1;
    }
    std::printf("energy: %.12f accumulated by the kernel over the steps, the same in both\n",
                e_graph);
  }
  std::printf("data: the graph's field equals the eager loop's in every cell (sum %.12f)\n", sum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 1000;
  long cells = 1024;
  bool kernel = graph_timestep::have_kernel();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    try {
      if (a.rfind("--steps=", 0) == 0)
        steps = std::stoi(a.substr(8));
      else if (a.rfind("--cells=", 0) == 0)
        cells = std::stol(a.substr(8));
      else if (a == "--no-kernel")
        kernel = false;
      else
        steps = -1;
    } catch (const std::exception&) {
      steps = -1;
    }
    if (steps < 1 || cells < 3) {
      std::fprintf(stderr,
                   "usage: %s [--steps=N (>=1, default 1000)] [--cells=N (>=3)] [--no-kernel]\n",
                   argv[0]);
      return 1;
    }
  }
  try {
    if (sluice::device_count() == 0) {
      std::printf("graph_timestep: no %s device: nothing ran\n", sluice::backend_name());
      return 77;
    }
    return run(steps, static_cast<std::size_t>(cells), kernel);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_timestep: error: %s\n", e.what());
    return 1;
  }
}
