// What the simulated runtime (sim.cpp) lends its model of strided copies and
// host registration (sim_strided.cpp): a copy run with the rules of the
// model's cudaMemcpyAsync, and the registry of memory the runtime knows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace sim {

//! Enqueues `move`, a copy of `bytes` bytes in all from around src to around
//! dst, on stream h, with the rules of the model's copies: pool memory of a
//! device that neither is current nor was granted access is refused
//! (cudaErrorInvalidValue), unless `peer` (as cudaMemcpyPeerAsync); host memory
//! to host memory runs on the calling thread once the stream drained; a copy
//! touching memory the runtime does not know (pageable) returns once done.
//! dst and src decide the kind of memory (their first bytes).
cudaError_t copy(void* dst, const void* src, std::size_t bytes, std::function<void()> move,
                 cudaStream_t h, int cbid, bool peer);

//! cudaHostRegister's model: [p, p + n) becomes pinned host memory the runtime
//! knows (cudaPointerGetAttributes: cudaMemoryTypeHost; copies with it are
//! asynchronous). Null p or zero n: cudaErrorInvalidValue; a range touching
//! memory the runtime already knows: cudaErrorHostMemoryAlreadyRegistered.
cudaError_t register_host(void* p, std::size_t n);
//! cudaHostUnregister's: waits for the work in flight on every stream (as
//! cudaFreeHost does here), then forgets the range registered at p (not a
//! registered range's start: cudaErrorHostMemoryNotRegistered).
cudaError_t unregister_host(void* p);

//! Whether [p, p + footprint) starts inside pinned host memory the runtime knows (registered or
//! cudaMallocHost'ed) and runs past its end: the model's copies and fills refuse such a range
//! (cudaErrorInvalidValue), as CUDA did on an H200 (sim.cpp, host_block_overrun).
bool host_overrun(const void* p, std::size_t footprint);

//! The model's cudaDevAttrMaxPitch (common.hpp), a failing call's last
//! error, and whether a device exists: common.hpp's, for files that cannot
//! include it (it defines the runtime's calls once per library).
std::size_t max_pitch();
cudaError_t fail(cudaError_t e);
bool valid_device(int d);

}  // namespace sim
