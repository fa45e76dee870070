// The graph bench's tiny kernels (graph_kernels.hpp) on a backend without
// them: the host backend has no native work, and HIP's graphs here are
// sluice's replay, which refuses native work in a capture.
#include "graph_kernels.hpp"

namespace sluice_bench {

bool have_tiny_kernels() noexcept { return false; }

int tiny_kernels(sluice::native_stream_t, unsigned char*, unsigned char*, std::size_t,
                 std::size_t) {
  return -1;
}

}  // namespace sluice_bench
