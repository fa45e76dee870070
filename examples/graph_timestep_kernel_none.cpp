// graph_timestep without a kernel (graph_timestep_kernel.hpp): the host
// backend has no native work, and HIP's graphs here are sluice's replay,
// which refuses native work in a capture.
#include "graph_timestep_kernel.hpp"

namespace graph_timestep {

bool have_kernel() noexcept { return false; }

int add_energy(sluice::native_stream_t, const double*, std::size_t, double*) { return -1; }

}  // namespace graph_timestep
