// sluice::hip's tuning: the defaults sluice chooses for the HIP runtime on each of HIP's
// platforms, kept apart from the vendor calls and facts of hip_api.hpp and hip_platform.hpp;
// hip_api inherits them (so the shared code reads them as api::<name>). Each value has one line
// of why and the run record (docs/results/runs/) that holds its measurement, or "no run record":
// nothing of sluice::hip has run on an AMD GPU (none is reachable), and on HIP's NVIDIA platform
// most values follow CUDA's (tuning/cuda.hpp). The SLUICE_* variables that override some of them
// are read where the values are used.
#pragma once

#include <hip/hip_common.h>  // __HIP_PLATFORM_NVIDIA__ where the build is for HIP's NVIDIA platform

#include <cstddef>
#include <cstdint>

namespace sluice::gpu {

struct hip_tuning {
  // --- host functions -----------------------------------------------------
  //! A host function's path while SLUICE_HOST_FUNC_PATH is unset (host_func/host_path.hpp,
  //! host_gate.hpp).
#if defined(__HIP_PLATFORM_NVIDIA__)
  // As on CUDA: with every host function on the gate kernel the whole suite passed, 49 of 49.
  // Run record: docs/results/runs/2026-11-27-gate-kernel.md
  static constexpr const char* default_host_path = "kernel";
#else
  // The vendor callback: neither the gate kernel nor `auto` has run on AMD (both opt in).
  // No run record (no AMD GPU).
  static constexpr const char* default_host_path = "callback";
#endif

  // --- streams and the runtime's environment --------------------------------
  //! Streams of each priority level made ahead while the device is idle (stream_pool.hpp).
  // As CUDA's: HIP does not say stream creation never waits; on NVIDIA it is CUDA's, which does.
  // No run record on AMD; CUDA's: docs/results/runs/2026-11-26-stream-pool.md
  static constexpr int stream_reserve_default = 64;
#if defined(__HIP_PLATFORM_NVIDIA__)
  //! CUDA_DEVICE_MAX_CONNECTIONS and CUDA_MODULE_LOADING where unset before the runtime starts.
  // Under HIP sit CUDA's streams, channels and module loading: the values of tuning/cuda.hpp.
  // Run record of EAGER: docs/results/runs/2026-12-01-cold-start-and-serializing-tools-h200.md
  static constexpr int preferred_hardware_queues = 32;
  static constexpr const char* preferred_module_loading = "EAGER";
#else
  //! GPU_MAX_HW_QUEUES: left to HIP's default (0: sluice does not set it).
  // No run record (not verified on an AMD GPU).
  static constexpr int preferred_hardware_queues = 0;
  //! HIP 5.2 documents no lazy kernel loading to turn off: nothing to ask for.
  static constexpr const char* preferred_module_loading = "";
#endif

  // --- memory ---------------------------------------------------------------
  //! The release threshold of sluice's memory pools (hip_api::pool_create): never release.
  // At 0 each synchronize frees it; its remapping waited for held streams under compute-sanitizer.
  // No run record.
  static constexpr std::uint64_t pool_release_threshold_bytes = UINT64_MAX;

  // --- peers ----------------------------------------------------------------
  //! Whether SLUICE_DIAGNOSE suggests issuing peer copies on the source's stream (push).
  // No direction recommended: not measured on AMD, nor apart from sluice::cuda on NVIDIA.
  // No run record.
  static constexpr bool peer_push_preferred = false;
  //! Single peer copies up to these many KiB run as sluice's SM copy kernel (peer_copy.hpp,
  //! sm_copy_limit): on the source's stream (push), on the destination's (pull).
  // Off in both directions until measured on AMD GPUs, on either platform.
  // No run record.
  static constexpr int peer_sm_push_default_kib = 0;
  static constexpr int peer_sm_pull_default_kib = 0;
  //! copy_peer_batch: batches whose pieces are all up to these many KiB run as sluice's SM batch
  //! kernel (peer_copy.hpp, sm_batch_limit).
  // CUDA's value; on the NVIDIA platform 64 pieces of 16 KiB took 18 us against 124-125 us for
  // 64 raw calls (2x H100). Not measured on AMD.
  // Run record: docs/results/runs/2026-11-26-p2p-cuda-hip-2xh100.md
  static constexpr int peer_sm_batch_default_kib = 256;
  //! Strided copy_peer over the link (more than one run, aligned) up to these many KiB: sluice's
  //! strided SM kernel (peer_plan.hpp sm_strided_max); larger ones one hipMemcpyPeerAsync per row
  //! (HIP 5.2 has no 3-D peer copy: hip_copies.hpp).
  // As the batch value: the alternative is a vendor call per row. Not measured on either platform.
  // No run record.
  static constexpr int peer_sm_strided_default_kib = 256;
  //! Strided copies (copy, copy_peer, batch pieces) whose rows are at most these many bytes wide
  //! go to the strided SM kernel whatever their size (peer_plan.hpp sm_strided_narrow_row).
  // An x face of doubles is one 8-byte row per cell of the face: HIP 5.2's alternative across devices
  // is one hipMemcpyPeerAsync per row. Not measured on either platform.
  // No run record.
  static constexpr std::size_t peer_sm_strided_narrow_row_bytes = 4096;
};

}  // namespace sluice::gpu
