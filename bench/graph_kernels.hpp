// The graph bench's third program (bench/graph.cpp), where the backend's
// vendor captures native work: 64 tiny kernels in a chain on one native
// stream, the first 32 each writing one slot of buffer a, the last 32 each
// copying one slot of a into b (graph_kernels.cu). Elsewhere there is none.
#pragma once

#include <sluice/native.hpp>

#include <cstddef>

namespace sluice_bench {

//! Whether this build has the kernels (CUDA).
bool have_tiny_kernels() noexcept;

//! Launches the 64 kernels on s; the vendor's error code of the last launch
//! that failed (0: all launched).
int tiny_kernels(sluice::native_stream_t s, unsigned char* a, unsigned char* b, std::size_t slots,
                 std::size_t slot_bytes);

}  // namespace sluice_bench
