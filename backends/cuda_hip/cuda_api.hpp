// The CUDA runtime as a vendor API traits type for the shared GPU backend
// (backends/cuda_hip/). Types, constants, static forwarders and what CUDA does
// or cannot do, each with a one-line reason; sluice's measured defaults for CUDA
// are in tuning/cuda.hpp, which the traits type inherits. Each forwarder returns
// a `status` (the vendor code and the name of the vendor call) so that errors
// name the failing call without a second table.
#pragma once

#include "cuda_copies.hpp"
#include "cuda_driver.hpp"
#include "host_gate.hpp"
#include "nvml_link.hpp"
#include "sm_copy.hpp"
#include "tuning/cuda.hpp"

#include <sluice/backend.hpp>
#include <sluice/error.hpp>
#include <sluice/peer.hpp>

#include <cuda.h>  // driver types for the stream memory operations (types only: nothing links libcuda)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace sluice::gpu {

struct cuda_api : cuda_tuning, cuda_copies {
  using error_t = cudaError_t;
  using stream_t = cudaStream_t;
  using event_t = cudaEvent_t;
  using status = cuda_status;  // the strided copies' and registration's forwarders: cuda_copies.hpp

  static constexpr backend_kind kind = backend_kind::cuda;
  static constexpr const char* name = "cuda";
  static constexpr const char* vendor = "CUDA";
  static constexpr error_t success = cudaSuccess;
  static constexpr error_t not_ready = cudaErrorNotReady;

  // cudaStreamDestroy returns at once and releases the stream after its work (CUDA runtime docs).
  static constexpr bool stream_destroy_blocks = false;
  // Set to 1, it makes every kernel launch wait for the kernel (CUDA programming guide): the
  // gate kernel's launch would not return, so host functions take the signal
  // (host_func/host_path.hpp).
  static constexpr const char* launch_blocking_variables[] = {"CUDA_LAUNCH_BLOCKING"};
  // Streams map onto CUDA_DEVICE_MAX_CONNECTIONS hardware channels (default 8, at most 32),
  // round-robin in creation order (CUDA programming guide); what sluice sets: tuning/cuda.hpp.
  static constexpr const char* hardware_queues_variable = "CUDA_DEVICE_MAX_CONNECTIONS";
  static constexpr int default_hardware_queues = 8;
  // CUDA 12+ loads a kernel's module at its first launch under CUDA_MODULE_LOADING=LAZY, the
  // default; what sluice sets: tuning/cuda.hpp.
  static constexpr const char* module_loading_variable = "CUDA_MODULE_LOADING";
  // CUDA's default priority 0 is also its least priority (low == normal, PRIO-2).
  static constexpr int default_priority = 0;

  // --- errors -------------------------------------------------------------
  static const char* error_name(error_t e) noexcept { return cudaGetErrorName(e); }
  static const char* error_string(error_t e) noexcept { return cudaGetErrorString(e); }
  //! Clears the thread's last error (cudaErrorPeerAccessAlreadyEnabled would otherwise linger).
  static void clear_last_error() noexcept { (void)cudaGetLastError(); }
  //! The portable code of a vendor error, and whether the context is lost.
  static errc classify(error_t e, bool* sticky) noexcept {
    *sticky = false;
    switch (e) {
      case cudaErrorMemoryAllocation: return errc::out_of_memory;
      case cudaErrorInvalidDevice:
      case cudaErrorNoDevice:
      case cudaErrorInsufficientDriver: return errc::invalid_device;
      case cudaErrorNotReady: return errc::not_ready;
      case cudaErrorNotSupported: return errc::not_supported;
      case cudaErrorPeerAccessUnsupported:
      case cudaErrorPeerAccessNotEnabled:
      // "The hardware resources required to enable peer access have been exhausted"
      // (driver_types.h): the device is at its peer limit; copies stay staged.
      case cudaErrorTooManyPeers: return errc::peer_access_unavailable;
      case cudaErrorInvalidResourceHandle: return errc::invalid_handle;
      case cudaErrorInvalidValue:
      case cudaErrorInvalidPitchValue:
      // The range was registered outside sluice (registered_host_memory's overlap rule).
      case cudaErrorHostMemoryAlreadyRegistered: return errc::invalid_argument;
      // The errors after which the CUDA context is unusable (cudaError_t docs: "the
      // process must be terminated and relaunched").
      case cudaErrorIllegalAddress:
      case cudaErrorLaunchFailure:
      case cudaErrorHardwareStackError:
      case cudaErrorIllegalInstruction:
      case cudaErrorMisalignedAddress:
      case cudaErrorInvalidAddressSpace:
      case cudaErrorInvalidPc:
      case cudaErrorAssert:
      case cudaErrorECCUncorrectable:
      case cudaErrorLaunchTimeout:
      case cudaErrorTensorMemoryLeak: *sticky = true; return errc::device_fault;
      default: return errc::backend_failure;
    }
  }
  //! Errors that mean "this machine has no usable CUDA device": no GPU, or no
  //! driver at all (CUDA 13 without libcuda reports cudaErrorInsufficientDriver).
  static bool means_no_device(error_t e) noexcept {
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver;
  }

  // --- devices ------------------------------------------------------------
  static status get_device_count(int* n) noexcept {
    return {cudaGetDeviceCount(n), "cudaGetDeviceCount"};
  }
  static status get_device(int* d) noexcept { return {cudaGetDevice(d), "cudaGetDevice"}; }
  //! The calling thread's current context (the driver's; null if none or not
  //! found). Copies use it to see whether the stream's device is current: it
  //! costs a fifth of cudaGetDevice
  //! (docs/results/runs/2026-11-23-cuda-2xh200-first-conformance-run.md).
  using context_t = void*;
  static context_t current_context() noexcept { return cuda_driver::current_context(); }
  //! Whether device d (whose context is `ctx`) is the calling thread's current device.
  static bool device_is_current(int /*d*/, context_t ctx) noexcept {
    return ctx != nullptr && current_context() == ctx;
  }
  static status set_device(int d) noexcept { return {cudaSetDevice(d), "cudaSetDevice"}; }
  static status device_synchronize() noexcept {
    return {cudaDeviceSynchronize(), "cudaDeviceSynchronize"};
  }
  static status device_name(int d, std::string* out) {
    cudaDeviceProp p{};
    const status s{cudaGetDeviceProperties(&p, d), "cudaGetDeviceProperties"};
    if (s.ok()) *out = p.name;
    return s;
  }
  static status priority_range(int* least, int* greatest) noexcept {
    return {cudaDeviceGetStreamPriorityRange(least, greatest), "cudaDeviceGetStreamPriorityRange"};
  }
  static status runtime_version(int* v) noexcept {
    return {cudaRuntimeGetVersion(v), "cudaRuntimeGetVersion"};
  }
  static status driver_version(int* v) noexcept {
    return {cudaDriverGetVersion(v), "cudaDriverGetVersion"};
  }
  // The kernel driver's own version (580.159.04), which the runtime does not
  // report: first line of this file, the first number after the marker.
  static constexpr const char* kernel_driver_file = "/proc/driver/nvidia/version";
  static constexpr const char* kernel_driver_marker = "Kernel Module";
  //! "13.0" from 13000.
  static std::string version_string(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  }

  // --- streams ------------------------------------------------------------
  static status stream_create(stream_t* s, int priority) noexcept {
    // Non-blocking: sluice streams never synchronize with the legacy default stream.
    return {cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, priority),
            "cudaStreamCreateWithPriority"};
  }
  static status stream_destroy(stream_t s) noexcept {
    return {cudaStreamDestroy(s), "cudaStreamDestroy"};
  }
  // --- borrowed streams (sluice::borrow) -------------------------------------
  //! The null stream and the two default streams (legacy, per-thread) synchronize
  //! implicitly with other streams (IND-1): never borrowed (NAT-3).
  static bool is_default_stream(stream_t s) noexcept {
    return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
  }
  //! The device of a stream (cudaStreamGetDevice, CUDA 12.8 and later).
  static constexpr bool can_tell_stream_device = true;
  static status stream_device(stream_t s, int* d) noexcept {
    return {cudaStreamGetDevice(s, d), "cudaStreamGetDevice"};
  }
  static status stream_priority(stream_t s, int* p) noexcept {
    return {cudaStreamGetPriority(s, p), "cudaStreamGetPriority"};
  }
  static status stream_query(stream_t s) noexcept {
    return {cudaStreamQuery(s), "cudaStreamQuery"};
  }
  static status stream_synchronize(stream_t s) noexcept {
    return {cudaStreamSynchronize(s), "cudaStreamSynchronize"};
  }
  static status stream_wait_event(stream_t s, event_t e) noexcept {
    return {cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent"};
  }
  // Host functions: stream_signal_then_wait below and sluice's word watcher
  // (host_func/word_watch.hpp) where the stream has a hardware queue of its own,
  // else this callback (docs/design.md, "Which host functions use the word
  // watcher").
  //! Enqueues F(data) on s. CUDA runs it on one runtime thread for all streams and
  //! forbids CUDA calls in it: sluice's F only hands over to its own threads.
  template <void (*F)(void*)>
  static status launch_host_func(stream_t s, void* data) noexcept {
    return {cudaLaunchHostFunc(s, F, data), "cudaLaunchHostFunc"};
  }

  // --- events -------------------------------------------------------------
  static status event_create(event_t* e, bool timing, bool blocking_sync) noexcept {
    unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
    if (blocking_sync) flags |= cudaEventBlockingSync;
    return {cudaEventCreateWithFlags(e, flags), "cudaEventCreateWithFlags"};
  }
  static status event_destroy(event_t e) noexcept {
    return {cudaEventDestroy(e), "cudaEventDestroy"};
  }
  static status event_record(event_t e, stream_t s) noexcept {
    return {cudaEventRecord(e, s), "cudaEventRecord"};
  }
  static status event_query(event_t e) noexcept { return {cudaEventQuery(e), "cudaEventQuery"}; }
  static status event_synchronize(event_t e) noexcept {
    return {cudaEventSynchronize(e), "cudaEventSynchronize"};
  }
  static status event_elapsed(float* ms, event_t a, event_t b) noexcept {
    return {cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime"};
  }

  // --- graphs ---------------------------------------------------------------
  // A graph_exec's operations captured once into a vendor graph, launched
  // with one call (graph_exec.cpp). Relaxed: other threads' calls (cudaMalloc)
  // leave the capture valid. An event recorded inside a capture without
  // cudaEventRecordExternal is no node and cannot be used outside afterwards.
  static constexpr bool native_graphs = true;
  using graph_t = cudaGraph_t;
  using graph_exec_t = cudaGraphExec_t;
  static status begin_capture(stream_t s) noexcept {
    return {cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture"};
  }
  static status end_capture(stream_t s, graph_t* g) noexcept {
    return {cudaStreamEndCapture(s, g), "cudaStreamEndCapture"};
  }
  static status graph_instantiate(graph_exec_t* e, graph_t g) noexcept {
    return {cudaGraphInstantiateWithFlags(e, g, 0), "cudaGraphInstantiateWithFlags"};
  }
  static status graph_launch(graph_exec_t e, stream_t s) noexcept {
    return {cudaGraphLaunch(e, s), "cudaGraphLaunch"};
  }
  static status graph_exec_destroy(graph_exec_t e) noexcept {
    return {cudaGraphExecDestroy(e), "cudaGraphExecDestroy"};
  }
  static status graph_destroy(graph_t g) noexcept {
    return {cudaGraphDestroy(g), "cudaGraphDestroy"};
  }
  static status event_record_external(event_t e, stream_t s) noexcept {
    return {cudaEventRecordWithFlags(e, s, cudaEventRecordExternal), "cudaEventRecordWithFlags"};
  }
  // Work given to a capturing stream's native handle (kernels): captured by
  // the vendor between sluice's operations (graph_capture.cpp), each run of
  // it a graph of its own, launched by a replay or added whole as a child
  // node to the vendor graph of an exec.
  static constexpr bool captures_native_work = true;
  //! Whether the vendor captures s now (its own capture or anyone's).
  static status stream_is_capturing(stream_t s, bool* yes) noexcept {
    cudaStreamCaptureStatus state = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(s, &state);
    *yes = e == cudaSuccess && state != cudaStreamCaptureStatusNone;
    return {e, "cudaStreamIsCapturing"};
  }
  static status graph_node_count(graph_t g, std::size_t* n) noexcept {
    return {cudaGraphGetNodes(g, nullptr, n), "cudaGraphGetNodes"};
  }
  //! Appends g, whole, to the capture on s: after what s's next captured
  //! operation would wait for, and before it.
  static status capture_add_graph(stream_t s, graph_t g) noexcept {
    cudaStreamCaptureStatus state = cudaStreamCaptureStatusNone;
    cudaGraph_t into = nullptr;
    const cudaGraphNode_t* deps = nullptr;
    std::size_t count = 0;
    cudaError_t e = cudaStreamGetCaptureInfo(s, &state, nullptr, &into, &deps, nullptr, &count);
    if (e != cudaSuccess) return {e, "cudaStreamGetCaptureInfo"};
    if (state != cudaStreamCaptureStatusActive)
      return {cudaErrorIllegalState, "cudaStreamGetCaptureInfo"};
    cudaGraphNode_t node = nullptr;
    e = cudaGraphAddChildGraphNode(&node, into, deps, count, g);
    if (e != cudaSuccess) return {e, "cudaGraphAddChildGraphNode"};
    return {
        cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1, cudaStreamSetCaptureDependencies),
        "cudaStreamUpdateCaptureDependencies"};
  }

  // --- memory -------------------------------------------------------------
  using pool_t = cudaMemPool_t;
  //! sluice's own pool for device_buffer on device d. Hidden cross-stream dependencies are
  //! off: with cudaMemPoolReuseAllowInternalDependencies (on in the default pool) an
  //! allocation on one stream may be made to wait for a free on another, which would
  //! break IND-1.
  static status pool_create(pool_t* pool, int d) noexcept {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = d;
    status s{cudaMemPoolCreate(pool, &props), "cudaMemPoolCreate"};
    if (!s.ok()) return s;
    int off = 0;
    s = {cudaMemPoolSetAttribute(*pool, cudaMemPoolReuseAllowInternalDependencies, &off),
         "cudaMemPoolSetAttribute"};
    if (!s.ok()) return s;
    // Keep freed memory in the pool (tuning/cuda.hpp says why).
    std::uint64_t keep = pool_release_threshold_bytes;
    return {cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep),
            "cudaMemPoolSetAttribute"};
  }
  static status malloc_from_pool(void** p, std::size_t n, pool_t pool, stream_t s) noexcept {
    return {cudaMallocFromPoolAsync(p, n, pool, s), "cudaMallocFromPoolAsync"};
  }
  static status free_async(void* p, stream_t s) noexcept {
    return {cudaFreeAsync(p, s), "cudaFreeAsync"};
  }
  //! Pinned, mapped into every device's address space (flags and pinned buffers).
  static status host_alloc(void** p, std::size_t n) noexcept {
    return {cudaHostAlloc(p, n, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc"};
  }
  // cudaFreeHost synchronizes the device (CUDA runtime API docs, "API synchronization behavior"):
  // sluice calls it on its reaper thread, never on the caller's.
  static status free_host(void* p) noexcept { return {cudaFreeHost(p), "cudaFreeHost"}; }
  static status host_device_pointer(void** d, void* h) noexcept {
    return {cudaHostGetDevicePointer(d, h, 0), "cudaHostGetDevicePointer"};
  }
  //! True for memory the device cannot address: plain (pageable) host memory.
  static status is_pageable(const void* p, bool* pageable) noexcept {
    cudaPointerAttributes a{};
    const status s{cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes"};
    *pageable = s.ok() && a.type == cudaMemoryTypeUnregistered;
    return s;
  }
  //! The device whose memory p is (device memory only: not host-accessible),
  //! or -1 (pinned, managed, pageable or unknown memory).
  static status device_memory_of(const void* p, int* device) noexcept {
    cudaPointerAttributes a{};
    const status s{cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes"};
    *device = s.ok() && a.type == cudaMemoryTypeDevice ? a.device : -1;
    return s;
  }
  static status memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) noexcept {
    return {cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), "cudaMemcpyAsync"};
  }
  static status memset_async(void* dst, int value, std::size_t n, stream_t s) noexcept {
    return {cudaMemsetAsync(dst, value, n, s), "cudaMemsetAsync"};
  }
  //! Pieces from device src_dev to device dst_dev as one operation on s, in no order among
  //! themselves (cudaMemcpyBatchAsync, CUDA 12.8 and later; the source read in stream order).
  static status memcpy_peer_batch_async(void* const* dsts, const void* const* srcs,
                                        const std::size_t* sizes, std::size_t count, int dst_dev,
                                        int src_dev, stream_t s) noexcept {
    cudaMemcpyAttributes a{};
    a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    a.srcLocHint.type = cudaMemLocationTypeDevice;
    a.srcLocHint.id = src_dev;
    a.dstLocHint.type = cudaMemLocationTypeDevice;
    a.dstLocHint.id = dst_dev;
    std::size_t first = 0;
    return {cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &a, &first, 1, s),
            "cudaMemcpyBatchAsync"};
  }
  static status memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev,
                                  std::size_t n, stream_t s) noexcept {
    return {cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), "cudaMemcpyPeerAsync"};
  }
  //! A vendor graph's small fill and copy within one device's memory as
  //! sluice's kernels (sm_copy.cu).
  static status graph_fill_kernel(void* dst, unsigned char v, std::size_t n, stream_t s) noexcept {
    return {static_cast<cudaError_t>(::sluice::detail::sm_copy::launch_graph_fill(dst, v, n, s)),
            "the graph fill kernel's launch"};
  }
  static status graph_copy_kernel(void* dst, const void* src, std::size_t n, stream_t s) noexcept {
    return {static_cast<cudaError_t>(::sluice::detail::sm_copy::launch_graph_copy(dst, src, n, s)),
            "the graph copy kernel's launch"};
  }
  //! sluice's SM copy kernel (sm_copy.cu, compiled by nvcc into this library).
  static status sm_copy(void* dst, const void* src, std::size_t n, stream_t s,
                        unsigned blocks) noexcept {
    return {static_cast<cudaError_t>(::sluice::detail::sm_copy::launch(dst, src, n, s, blocks)),
            "the SM copy kernel's launch"};
  }
  static status sm_copy_batch(const ::sluice::detail::sm_copy::piece* pieces, unsigned count,
                              stream_t s, unsigned blocks_per_piece) noexcept {
    return {static_cast<cudaError_t>(
                ::sluice::detail::sm_copy::launch_batch(pieces, count, s, blocks_per_piece)),
            "the SM copy kernel's launch"};
  }
  //! A host-function batch's signal and gate as one kernel (host_gate.cu,
  //! compiled by nvcc into this library): the path where other streams of
  //! the device hold for the host (stream.cpp, docs/design.md "The gate kernel").
  static status stream_gate_kernel(stream_t s, void* signal_word, std::uint64_t signal_value,
                                   const void* gate_word, std::uint64_t gate_value) noexcept {
    return {static_cast<cudaError_t>(::sluice::detail::host_gate::launch(
                s, signal_word, signal_value, gate_word, gate_value)),
            "the host-function gate kernel's launch"};
  }
  //! The gate kernel launched with nothing to do (host_gate::prepare).
  static status prepare_gate_kernel(stream_t s) noexcept {
    return {static_cast<cudaError_t>(::sluice::detail::host_gate::prepare(s)),
            "the host-function gate kernel's launch"};
  }
  static status multiprocessor_count(int* n, int d) noexcept {
    return {cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, d), "cudaDeviceGetAttribute"};
  }

  // --- stream memory operations ------------------------------------------
  // On 64-bit words: CU_STREAM_WAIT_VALUE_GEQ compares cyclically,
  // (int64_t)(*addr - value) >= 0 (cuda.h). sluice's values are 32-bit and
  // zero-extended, so on 64 bits that is exactly the unsigned f >= v of MEM-5
  // (on 32 bits, 0x80000000 >= 1 would be false).
  // The entry points come from the runtime at first use (cuda_driver.hpp).
  //! Later work on s waits until *device_word >= value (64-bit word, unsigned values below 2^32).
  static status stream_wait_value(stream_t s, void* device_word, std::uint64_t value) noexcept {
    const auto& ops = cuda_driver::stream_memory_ops();
    if (ops.wait == nullptr) return {ops.failure, cuda_driver::entry_point_api};
    const CUresult r =
        ops.wait(s, reinterpret_cast<CUdeviceptr>(device_word), value, CU_STREAM_WAIT_VALUE_GEQ);
    // The driver's codes for these calls share cudaError_t's numbering (cuda.h, driver_types.h).
    return {static_cast<error_t>(r), "cuStreamWaitValue64"};
  }
  //! After prior work on s, stores value to *device_word.
  static status stream_write_value(stream_t s, void* device_word, std::uint64_t value) noexcept {
    const auto& ops = cuda_driver::stream_memory_ops();
    if (ops.write == nullptr) return {ops.failure, cuda_driver::entry_point_api};
    const CUresult r = ops.write(s, reinterpret_cast<CUdeviceptr>(device_word), value,
                                 CU_STREAM_WRITE_VALUE_DEFAULT);
    return {static_cast<error_t>(r), "cuStreamWriteValue64"};
  }
  //! What stream_signal_then_wait did: status, and whether nothing was enqueued.
  struct signal_status {
    status result;
    bool nothing_enqueued = false;
  };
  //! A host function's two stream operations: after prior work on s, store
  //! signal_value to *signal_word (sluice's watcher sees it), then hold later
  //! work until *gate_word >= gate_value. One cuStreamBatchMemOp (its
  //! operations run in order) where the driver has it: one driver call per
  //! host function, as cudaLaunchHostFunc; else the two calls.
  static signal_status stream_signal_then_wait(stream_t s, void* signal_word,
                                               std::uint64_t signal_value, void* gate_word,
                                               std::uint64_t gate_value) noexcept {
    const auto& ops = cuda_driver::stream_memory_ops();
    if (ops.wait == nullptr) return {{ops.failure, cuda_driver::entry_point_api}, true};
    if (ops.batch != nullptr) {
      CUstreamBatchMemOpParams p[2]{};
      p[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      p[0].writeValue.address = reinterpret_cast<CUdeviceptr>(signal_word);
      p[0].writeValue.value64 = signal_value;
      p[0].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      p[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
      p[1].waitValue.address = reinterpret_cast<CUdeviceptr>(gate_word);
      p[1].waitValue.value64 = gate_value;
      p[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
      const CUresult r = ops.batch(s, 2, p, 0);
      return {{static_cast<error_t>(r), "cuStreamBatchMemOp"}, r != CUDA_SUCCESS};
    }
    const status written = stream_write_value(s, signal_word, signal_value);
    if (!written.ok()) return {written, true};
    return {stream_wait_value(s, gate_word, gate_value), false};
  }
  //! The runtime is being unloaded (process exit): frees may then fail harmlessly.
  static bool means_shutdown(error_t e) noexcept { return e == cudaErrorCudartUnloading; }

  // --- peers --------------------------------------------------------------
  static status can_access_peer(int* yes, int from, int to) noexcept {
    return {cudaDeviceCanAccessPeer(yes, from, to), "cudaDeviceCanAccessPeer"};
  }
  //! Enables the current device's access to `peer`'s memory.
  static status enable_peer_access(int peer) noexcept {
    return {cudaDeviceEnablePeerAccess(peer, 0), "cudaDeviceEnablePeerAccess"};
  }
  static constexpr error_t peer_access_already_enabled = cudaErrorPeerAccessAlreadyEnabled;
  static status p2p_rank(int* v, int from, int to) noexcept {
    return {cudaDeviceGetP2PAttribute(v, cudaDevP2PAttrPerformanceRank, from, to),
            "cudaDeviceGetP2PAttribute"};
  }
  static status p2p_atomics(int* v, int from, int to) noexcept {
    return {cudaDeviceGetP2PAttribute(v, cudaDevP2PAttrNativeAtomicSupported, from, to),
            "cudaDeviceGetP2PAttribute"};
  }
  // The CUDA runtime does not say whether a peer link is NVLink or PCIe: NVML
  // does (nvml_link.hpp), matched by PCI bus id.
  static link_kind link_kind_of(int from, int to) noexcept {
    if (!nvml::library::get().ok) return link_kind::unknown;  // asks the runtime nothing then
    char a[32] = {};
    char b[32] = {};
    if (cudaDeviceGetPCIBusId(a, static_cast<int>(sizeof a), from) != cudaSuccess ||
        cudaDeviceGetPCIBusId(b, static_cast<int>(sizeof b), to) != cudaSuccess) {
      (void)cudaGetLastError();
      return link_kind::unknown;
    }
    return nvml::link_between(a, b);
  }
  //! Lets device `peer` access memory of `pool` (peer access alone does not cover
  //! stream-ordered pool memory: CUDA programming guide, stream ordered allocator).
  static status pool_grant_access(pool_t pool, int peer) noexcept {
    cudaMemAccessDesc desc{};
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = peer;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    return {cudaMemPoolSetAccess(pool, &desc, 1), "cudaMemPoolSetAccess"};
  }
};

}  // namespace sluice::gpu
