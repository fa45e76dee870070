// graph_timestep's kernel (graph_timestep.cpp), where the backend captures
// native work in a graph (CUDA): the sum of the squares of the device's copy
// of the field, added to an accumulator on the device, in a fixed order so
// that two runs of the same steps agree to the bit. Elsewhere there is none.
#pragma once

#include <sluice/native.hpp>

#include <cstddef>

namespace graph_timestep {

//! Whether this build has the kernel.
bool have_kernel() noexcept;

//! Enqueues `*acc += sum of u[i]^2` on s; the vendor's error code of the launch (0: launched).
int add_energy(sluice::native_stream_t s, const double* u, std::size_t n, double* acc);

}  // namespace graph_timestep
