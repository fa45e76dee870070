// What the GPU backend's peer copies need beyond src/peer_plan (which decides
// each copy's path): the SM copy kernel's limits (peer.cpp) and sluice's staged
// pipeline through pinned memory for devices without peer access (staging.cpp).
#pragma once

#include "peer_plan.hpp"
#include "vendor.hpp"

#include <sluice/peer.hpp>

#include <cstddef>

namespace sluice::detail {

struct device_state;
struct stream_state;

//! Single peer copies over the link of at most these many bytes, 16-byte
//! aligned at both ends, run as sluice's SM copy kernel (sm_copy.cu) on the
//! stream's device rather than on a copy engine. The limit depends on which end
//! the stream is on: `push` (the source's stream: the kernel writes over the
//! link) and `pull` (the destination's: it reads over the link).
//! SLUICE_PEER_SM_PUSH_MAX_KIB and SLUICE_PEER_SM_PULL_MAX_KIB (0 .. 1048576;
//! 0: never); SLUICE_PEER_SM_MAX_KIB sets both where those are unset. Defaults:
//! api::peer_sm_push_default_kib and api::peer_sm_pull_default_kib, measured per
//! vendor (tuning/cuda.hpp; tuning/hip.hpp: 0, never measured).
struct sm_copy_limits {
  std::size_t push = 0;
  std::size_t pull = 0;
};
const sm_copy_limits& sm_copy_limit();
//! copy_peer_batch: when every piece is at most this many bytes (and 16-byte
//! aligned), sluice's SM batch kernel moves them, 64 per launch:
//! SLUICE_PEER_SM_BATCH_MAX_KIB (0 .. 1048576; 0: never), default
//! api::peer_sm_batch_default_kib (256 KiB, tuning/cuda.hpp, tuning/hip.hpp).
//! On one H200 64 pieces of 16, 64 and 256 KiB took 12.2, 11.9 and 15.4 us
//! against 333, 276 and 264 us for 64 raw cudaMemcpyPeerAsync calls and 313,
//! 244 and 254 us for cudaMemcpyBatchAsync, which gains little over the calls
//! there (sluice-probe-batch:
//! docs/results/runs/2026-11-25-batched-copies-one-h200.md). Between two H100s
//! over NVLink 64 pieces of 16 KiB took 20.6-21.1 us against 121.8 us for 64
//! raw calls and 47.7-47.8 us for one cudaMemcpyBatchAsync
//! (docs/results/runs/2026-11-25-p2p-first-run-2xh100.md).
constexpr int sm_batch_default_kib = gpu::api::peer_sm_batch_default_kib;
std::size_t sm_batch_limit();
//! What src/peer_plan needs to plan a copy on a stream of device d: the SM
//! kernel's shape and the limits of single copies (or of batches, `batch`).
peer_limits peer_limits_of(const device_state& d, bool batch);

//! The enqueue parts of copy_peer and copy_peer_batch (peer.cpp), after their
//! checks, by the path of `plan`: what a graph's launch makes again, by the
//! path reported at capture.
void enqueue_copy_peer(stream_state& st, void* dst, device dst_dev, const void* src, device src_dev,
                       std::size_t bytes, const copy_plan& plan, const char* api);
void enqueue_copy_peer_batch(stream_state& st, device dst_dev, device src_dev,
                             const peer_piece* pieces, std::size_t count, const copy_plan& plan,
                             const peer_limits& limits, const char* api);
//! The same for the strided forms (strided.cpp); `site`: the call's, for diagnostics.
void enqueue_strided_peer(stream_state& st, device dst_dev, device src_dev,
                          const strided_peer_plan& plan, const peer_limits& limits, const char* api,
                          const void* site);
void enqueue_strided_peer_batch(stream_state& st, device dst_dev, device src_dev,
                                const strided_batch_plan& plan, const peer_limits& limits,
                                const char* api, const void* site);

//! Copies the pieces from device src_dev to device dst_dev through pinned host
//! memory, as one operation of u (u is on one of the two devices): sluice's
//! double-buffered pipeline (staging.cpp), for devices without peer access.
void staged_copy(stream_state& u, int dst_dev, int src_dev, const peer_piece* pieces,
                 std::size_t count, const char* api_name);
//! The same for strided pieces (checked plans): bands of rows go into the
//! slots by 2-D copies, packed, and out of them the same way.
void staged_copy_strided(stream_state& u, int dst_dev, int src_dev, const strided_plan* pieces,
                         std::size_t count, const char* api_name);
//! Hands the staging sets of a recycled stream to the engine's pool.
void recycle_staging(stream_state& s) noexcept;

}  // namespace sluice::detail
