// sluice/detail/interop.hpp: what interoperation modules (sluice::kokkos,
// sluice::comm), the tools, benches and probes need from the backend beyond
// the public API. Not part of the public API.
#pragma once

#include <sluice/error.hpp>
#include <sluice/peer.hpp>
#include <sluice/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::detail {

//! Work that someone else enqueues on a stream's native stream (a Kokkos
//! kernel), shown on the stream's track while a trace is collected.
struct foreign_op;

//! Call before the work is enqueued; null (and nothing done) while no trace is
//! collected. `kind` must outlive the trace ("kernel"); `label` is copied.
foreign_op* begin_foreign_op(stream_ref s, const char* kind, const char* label);
//! Call after the work is enqueued (GPU backends: the vendor call returned;
//! host backend: the work ran); gives op back. Null: nothing.
void end_foreign_op(foreign_op* op) noexcept;

//! Sets what the vendor runtime reads once, at its start, the way sluice
//! wants it unless the user set it (GPU backends: CUDA_DEVICE_MAX_CONNECTIONS,
//! CUDA_MODULE_LOADING; docs/api.md "GPU backend settings"); nothing on the
//! host backend. sluice's first call does it; a module that another library
//! may start the runtime before (sluice::kokkos: Kokkos::initialize) calls it
//! when it is loaded.
void prepare_runtime_environment() noexcept;

//! A failure of work that a module carried out for stream `s` off the stream
//! (sluice::comm: a message that failed or timed out), reported by the
//! stream's next ready(), synchronize() or event::record() on it, once, like
//! a host function's exception (HOST-4). Call it before releasing the
//! stream's wait for that work, so that whoever sees the work complete sees
//! the failure. Any thread. Throws errc::invalid_handle for a destroyed stream.
void report_stream_failure(stream_ref s, errc code, std::string message);

//! The device whose memory [p, p + 1) is when only that device can address it
//! (GPU backends: memory of cudaMalloc/hipMalloc and sluice's device_buffer),
//! or -1 (host-accessible memory: pinned, managed, pageable; every address on
//! the host backend). What sluice::comm stages through pinned memory for an
//! MPI that cannot read device memory.
int device_memory_of(const void* p) noexcept;

//! How many operations were enqueued on `s` since it was created, where the
//! backend sees every one (the host backend: every operation is sluice's);
//! `unknown_count` on the GPU backends (work enqueued on the native handle is
//! not seen) and for a destroyed stream. sluice::comm starts a small
//! collective before its stream gets there only when nothing else was
//! enqueued on the stream between it and the collective before it
//! (docs/comm.md "Back-to-back collectives").
constexpr std::uint64_t unknown_count = ~std::uint64_t{0};
std::uint64_t enqueued_count(stream_ref s) noexcept;

//! How many host-function batches (host functions enqueued back to back
//! share one) took each path since the process started. GPU backends: a
//! batch goes by `signal` (a stream memory write that sluice's word watcher
//! sees, and a stream memory wait for the gate) where no other stream of its
//! device holds for the host (a pending host function, a flag wait) when it
//! is enqueued, else by `kernel` (sluice's gate kernel stores the signal and
//! spins on the gate), or by `callback` (the vendor's host callback hands it
//! to a sluice thread) where the kernel's launch failed (counted in
//! `kernel_failures`) or on a borrowed stream: that rule is
//! SLUICE_HOST_FUNC_PATH=auto. The default on CUDA and on HIP's NVIDIA
//! platform is `kernel` for every batch (where its launch fails, or on a
//! borrowed stream, the callback), HIP's AMD platform's `callback`, and
//! `signal` under a tool that serializes kernel launches (host_function_path);
//! SLUICE_HOST_FUNC_PATH=auto|signal|kernel|callback chooses (docs/api.md). The
//! host backend: all 0 (its host functions need none). For benches and tests.
struct host_function_paths {
  unsigned long long signal = 0;
  unsigned long long callback = 0;
  unsigned long long kernel = 0;
  unsigned long long kernel_failures = 0;  // launches that failed: those batches took the callback
};
host_function_paths host_function_path_counts() noexcept;

//! The path this process's host functions take, and why. GPU backends:
//! "auto", "signal", "kernel" or "callback" (the paths above), or "invalid"
//! (SLUICE_HOST_FUNC_PATH names none: every host function fails), chosen once
//! per process: the variable where set, else the backend's default, except
//! that a default that spins a kernel (`kernel`, `auto`) gives way to `signal`
//! under a tool that serializes kernel launches, where the gate kernel hangs
//! (compute-sanitizer, Nsight Compute, CUDA_LAUNCH_BLOCKING=1). The choice
//! waits for the vendor's runtime to start (a tool may load its library
//! then). `evidence` is one line: "compute-sanitizer detected
//! (libsanitizer-collection.so loaded)". The host backend: "host", run by its
//! own threads. `sluice info` prints both, and so does SLUICE_DIAGNOSE=1.
struct host_function_path_choice {
  std::string path;
  std::string evidence;
};
host_function_path_choice host_function_path();

// --- for the probes (bench/probes) ----------------------------------------
// Internals of the GPU backends that a probe measures apart from the public
// calls that use them; the host backend has none of them (errc::not_supported).

//! sluice's staged peer-copy pipeline through pinned host memory (what
//! copy_peer and copy_peer_batch run between devices without peer access),
//! from device src_dev to device dst_dev as one operation of s, s on one of
//! the two devices: also where they are one device, where the public calls
//! copy locally. For sluice-probe-staging. Host backend: errc::not_supported.
void staged_copy_for_probe(stream_ref s, int dst_dev, int src_dev, const peer_piece* pieces,
                           std::size_t count);

//! The launch shape of sluice's SM batch kernel (what copy_peer_batch's
//! direct_sm and local_sm paths launch), for sluice-probe-batch, which
//! launches it directly.
struct sm_batch_kernel_shape {
  //! Threads per block.
  unsigned threads = 0;
  //! What both ends of every piece are aligned to; each thread copies this
  //! many bytes a step.
  std::size_t alignment = 0;
  //! Pieces per launch, at most.
  unsigned batch_pieces = 0;
  //! Whether kernels launch on the stream (the simulated runtime launches none).
  bool kernels_launch = false;
};
//! The shape, and whether this runtime launches kernels on s's native stream
//! (an SM copy of nothing is launched to find out). Host backend:
//! errc::not_supported.
sm_batch_kernel_shape sm_batch_kernel_for_probe(stream_ref s);
//! Launches the SM batch kernel once on s's native stream, as native work
//! (as after native_handle(s): sluice does not see it): count <= batch_pieces
//! pieces (else errc::invalid_argument), both ends of each aligned,
//! blocks_per_piece blocks for each. The vendor's error code of the launch (0:
//! launched). Host backend: errc::not_supported.
int launch_sm_batch_for_probe(stream_ref s, const peer_piece* pieces, unsigned count,
                              unsigned blocks_per_piece);

}  // namespace sluice::detail
