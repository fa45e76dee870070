// sluice::cuda's tuning: the defaults sluice chooses for the CUDA runtime, kept apart from the
// vendor calls and facts of cuda_api.hpp, whose traits type inherits them (so the shared code
// reads them as api::<name>). Each value has one line of why and the run record
// (docs/results/runs/) that holds its measurement, or "no run record". The SLUICE_* variables
// that override some of them are read where the values are used.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::gpu {

struct cuda_tuning {
  // --- host functions -----------------------------------------------------
  //! A host function's path while SLUICE_HOST_FUNC_PATH is unset (host_func/host_path.hpp,
  //! host_gate.hpp).
  // The gate kernel holds no hardware queue: 64 streams' blocking host functions took 1.21x one.
  // Run record: docs/results/runs/2026-11-27-gate-kernel-2xh200.md
  static constexpr const char* default_host_path = "kernel";

  // --- streams and the runtime's environment --------------------------------
  //! Streams of each priority level made ahead while the device is idle (stream_pool.hpp).
  // cudaStreamCreate* waits for pending work once a context holds about 33 streams; 64: 2 a queue.
  // Run record: docs/results/runs/2026-11-26-stream-pool.md
  static constexpr int stream_reserve_default = 64;
  //! CUDA_DEVICE_MAX_CONNECTIONS where it is unset before the runtime starts (it takes effect only
  //! then); 0 would leave it alone.
  // CUDA's maximum: with its default 8 a held stream can stall an unrelated one in its channel.
  // No run record (CUDA programming guide).
  static constexpr int preferred_hardware_queues = 32;
  //! CUDA_MODULE_LOADING where it is unset before the runtime starts (IND-4: no call waits for a
  //! held stream).
  // Under LAZY, CUDA's default, a kernel's first launch waited for a held stream of the device.
  // Run record: docs/results/runs/2026-12-01-cold-start-and-serializing-tools-h200.md
  static constexpr const char* preferred_module_loading = "EAGER";

  // --- memory ---------------------------------------------------------------
  //! The release threshold of sluice's memory pools (cuda_api::pool_create): never release.
  // At 0 each synchronize frees it; its remapping waited for held streams under compute-sanitizer.
  // No run record.
  static constexpr std::uint64_t pool_release_threshold_bytes = UINT64_MAX;

  // --- peers ----------------------------------------------------------------
  //! Whether SLUICE_DIAGNOSE suggests issuing peer copies on the source's stream (push).
  // A push beat a pull at every size, pulls on the SM kernel too (64 KiB: 25.27 vs 19.14 GB/s).
  // Run record: docs/results/runs/2026-11-25-p2p-per-direction-2xh100.md
  static constexpr bool peer_push_preferred = true;
  //! Single peer copies up to these many KiB run as sluice's SM copy kernel (peer_copy.hpp,
  //! sm_copy_limit): on the source's stream (push), on the destination's (pull).
  // Push: the copy engine won at every size over NVLink.
  // Run record: docs/results/runs/2026-11-25-p2p-per-direction-2xh100.md
  static constexpr int peer_sm_push_default_kib = 0;
  // Pull: the SM kernel won up to 16 MiB (1.07-4.4x), the copy engine from 64 MiB.
  // Run record: docs/results/runs/2026-11-25-p2p-per-direction-2xh100.md
  static constexpr int peer_sm_pull_default_kib = 16 * 1024;
  //! copy_peer_batch: batches whose pieces are all up to these many KiB run as sluice's SM batch
  //! kernel (peer_copy.hpp, sm_batch_limit).
  // 64 pieces of 16-256 KiB: 12-15 us against 264-333 us for 64 raw calls (one H200).
  // Run record: docs/results/runs/2026-11-25-batched-copies-one-h200.md
  static constexpr int peer_sm_batch_default_kib = 256;
  //! Strided copy_peer over the link (more than one run, aligned) up to these many KiB: sluice's
  //! strided SM kernel (peer_plan.hpp sm_strided_max); larger ones the vendor's 3-D peer copy.
  // Small faces of many short rows: one kernel, where the copy engine moves row by row. CUDA's
  // batch value, not measured for strided copies.
  // No run record.
  static constexpr int peer_sm_strided_default_kib = 256;
  //! Strided copies (copy, copy_peer, batch pieces) whose rows are at most these many bytes wide
  //! go to the strided SM kernel whatever their size (peer_plan.hpp sm_strided_narrow_row).
  // An x face of doubles is one 8-byte row per cell of the face: the copy engine moves it row by
  // row, a kernel as fast as it moves wide rows. Not measured at this width.
  // No run record.
  static constexpr std::size_t peer_sm_strided_narrow_row_bytes = 256;
};

}  // namespace sluice::gpu
