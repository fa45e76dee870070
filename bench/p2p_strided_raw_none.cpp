// The raw side of sluice-bench-p2p-strided where none is built (p2p_strided_raw.hpp):
// the host backend has no vendor calls to compare with.
#include "p2p_strided_raw.hpp"

namespace strided_raw {

struct pack_context {};

const char* unavailable() noexcept { return "not available on this backend (no vendor calls)"; }
bool kernels_run() noexcept { return false; }
int copy_3d(const face*, std::size_t, int, int, sluice::native_stream_t) noexcept { return -1; }
pack_context* make_pack_context(int, int) noexcept { return nullptr; }
void free_pack_context(pack_context*) noexcept {}
int pack_copy_unpack(pack_context*, const face*, std::size_t, void*, void*, sluice::native_stream_t,
                     sluice::native_stream_t) noexcept {
  return -1;
}

}  // namespace strided_raw
