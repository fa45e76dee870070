// The HIP runtime as a vendor API traits type for the shared GPU backend
// (backends/cuda_hip/), on either of HIP's platforms: AMD (ROCm; written and
// built against ROCm 5.2) or NVIDIA (HIP 5.2's headers over CUDA 11.8, built
// with -DSLUICE_HIP_PLATFORM=nvidia: docs/hip-nvidia.md). The same members as
// cuda_api (cuda_api.hpp), with the same meaning; every HIP-specific fact is
// here, with a one-line reason and where it was seen, every difference between
// HIP's two platforms in the namespace hip_platform (hip_platform.hpp), and
// sluice's measured defaults for HIP in tuning/hip.hpp, which the traits type
// inherits. Header lines below refer to ROCm 5.2.3's
// /usr/include/hip/hip_runtime_api.h (Debian libamdhip64-dev 5.2.3); the NVIDIA
// platform's to /usr/include/hip/nvidia_detail/nvidia_hip_runtime_api.h of the
// same package.
#pragma once

#include "hip_copies.hpp"
#include "hip_platform.hpp"
#include "host_gate.hpp"
#include "sm_copy.hpp"
#include "tuning/hip.hpp"

#include <sluice/backend.hpp>
#include <sluice/error.hpp>
#include <sluice/peer.hpp>

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <string>

namespace sluice::gpu {

struct hip_api : hip_tuning, hip_copies {
  using error_t = hipError_t;
  using stream_t = hipStream_t;
  using event_t = hipEvent_t;
  using status = hip_status;  // the strided copies' and registration's forwarders: hip_copies.hpp

  static constexpr backend_kind kind = backend_kind::hip;
  static constexpr const char* name = "hip";
  static constexpr const char* vendor = "HIP";
  static constexpr error_t success = hipSuccess;
  static constexpr error_t not_ready = hipErrorNotReady;

  // hipStreamDestroy waits for the stream's pending work before it returns (ROCm clr
  // hipamd/src/hip_stream.cpp), unlike cudaStreamDestroy: sluice destroys it on its reaper.
  // On the NVIDIA platform it is cudaStreamDestroy, which does not wait: kept, so that a
  // run there takes the code path AMD takes.
  static constexpr bool stream_destroy_blocks = true;
  // The switches that serialize kernel launches (hip_platform): a launch then waits for the
  // kernels before or after it, the gate kernel among them, which waits for the host; host
  // functions take the signal instead where the default would spin it (host_func/host_path.hpp).
  static constexpr const auto& launch_blocking_variables = hip_platform::launch_blocking_variables;
  // The hardware queues streams map onto, and the variable of lazy module loading (hip_platform;
  // what sluice sets: tuning/hip.hpp).
  static constexpr const char* hardware_queues_variable = hip_platform::hardware_queues_variable;
  static constexpr int default_hardware_queues = hip_platform::default_hardware_queues;
  static constexpr const char* module_loading_variable = hip_platform::module_loading_variable;
  // HIP's default priority 0 (Priority::Normal) lies strictly inside its range least 1 /
  // greatest -1 on AMD (hipDeviceGetStreamPriorityRange, hipamd/src/hip_stream.cpp): unlike
  // CUDA, low, normal and high are three distinct values (PRIO-2). On the NVIDIA platform the
  // range is CUDA's (least 0), and 0 is also the least priority there, as for sluice::cuda.
  static constexpr int default_priority = 0;

  // --- errors -------------------------------------------------------------
  static const char* error_name(error_t e) noexcept { return hipGetErrorName(e); }
  static const char* error_string(error_t e) noexcept { return hipGetErrorString(e); }
  //! Clears the thread's last error (hipErrorPeerAccessAlreadyEnabled would otherwise linger).
  static void clear_last_error() noexcept { (void)hipGetLastError(); }
  //! The portable code of a vendor error, and whether the context is lost.
  static errc classify(error_t e, bool* sticky) noexcept {
    *sticky = false;
    switch (e) {
      // hipErrorOutOfMemory == hipErrorMemoryAllocation (2) and hipErrorInvalidHandle ==
      // hipErrorInvalidResourceHandle (400) are aliases in 5.2 (hip_runtime_api.h:235-237,
      // 282-284): one case each.
      case hipErrorOutOfMemory: return errc::out_of_memory;
      case hipErrorInvalidDevice:
      case hipErrorNoDevice:
      case hipErrorInsufficientDriver: return errc::invalid_device;
      case hipErrorNotReady: return errc::not_ready;
      case hipErrorNotSupported: return errc::not_supported;
      // HIP 5.2 names hipErrorTooManyPeers in its documentation but defines no such
      // code: a peer limit surfaces as whatever error ROCm returns (not seen here).
      case hipErrorPeerAccessUnsupported:
      case hipErrorPeerAccessNotEnabled: return errc::peer_access_unavailable;
      case hipErrorInvalidHandle: return errc::invalid_handle;
      case hipErrorInvalidValue:
      case hipErrorInvalidPitchValue:
      // The range was registered outside sluice (registered_host_memory's overlap rule).
      case hipErrorHostMemoryAlreadyRegistered: return errc::invalid_argument;
      // The device-fault errors of the 5.2 enum (hip_runtime_api.h:231-345). CUDA's
      // HardwareStackError, IllegalInstruction, MisalignedAddress, InvalidAddressSpace,
      // InvalidPc and TensorMemoryLeak have no HIP counterpart there.
      case hipErrorIllegalAddress:
      case hipErrorLaunchFailure:
      case hipErrorAssert:
      case hipErrorECCNotCorrectable:
      case hipErrorLaunchTimeOut: *sticky = true; return errc::device_fault;
      default: return errc::backend_failure;
    }
  }
  //! Errors that mean "this machine has no usable HIP device": no GPU
  //! (hipGetDeviceCount returns hipErrorNoDevice, hip_runtime_api.h:255), or no driver.
  static bool means_no_device(error_t e) noexcept {
    return e == hipErrorNoDevice || e == hipErrorInsufficientDriver;
  }

  // --- devices ------------------------------------------------------------
  static status get_device_count(int* n) noexcept {
    return {hipGetDeviceCount(n), "hipGetDeviceCount"};
  }
  static status get_device(int* d) noexcept { return {hipGetDevice(d), "hipGetDevice"}; }
  //! HIP: no context to compare; device_is_current asks hipGetDevice.
  using context_t = void*;
  static context_t current_context() noexcept { return nullptr; }
  static bool device_is_current(int d, context_t /*ctx*/) noexcept {
    int current = -1;
    return hipGetDevice(&current) == hipSuccess && current == d;
  }
  static status set_device(int d) noexcept { return {hipSetDevice(d), "hipSetDevice"}; }
  static status device_synchronize() noexcept {
    return {hipDeviceSynchronize(), "hipDeviceSynchronize"};
  }
  static status device_name(int d, std::string* out) {
    hipDeviceProp_t p{};
    const status s{hipGetDeviceProperties(&p, d), "hipGetDeviceProperties"};
    if (s.ok()) *out = p.name;
    return s;
  }
  static status priority_range(int* least, int* greatest) noexcept {
    return {hipDeviceGetStreamPriorityRange(least, greatest), "hipDeviceGetStreamPriorityRange"};
  }
  static status runtime_version(int* v) noexcept {
    return {hipRuntimeGetVersion(v), "hipRuntimeGetVersion"};
  }
  static status driver_version(int* v) noexcept {
    return {hipDriverGetVersion(v), "hipDriverGetVersion"};
  }
  // The kernel driver's version: the first number in this file after the marker (hip_platform).
  static constexpr const char* kernel_driver_file = hip_platform::kernel_driver_file;
  static constexpr const char* kernel_driver_marker = hip_platform::kernel_driver_marker;
  //! The runtime's version number as text ("5.2.21153" on AMD, "11.8" on NVIDIA: hip_platform).
  static std::string version_string(int v) { return hip_platform::version_string(v); }

  // --- streams ------------------------------------------------------------
  static status stream_create(stream_t* s, int priority) noexcept {
    // Non-blocking: sluice streams never synchronize with the null stream.
    return {hipStreamCreateWithPriority(s, hipStreamNonBlocking, priority),
            "hipStreamCreateWithPriority"};
  }
  static status stream_destroy(stream_t s) noexcept {
    return {hipStreamDestroy(s), "hipStreamDestroy"};
  }
  // --- borrowed streams (sluice::borrow) -------------------------------------
  //! The null stream and the per-thread default stream synchronize implicitly
  //! with other streams (IND-1): never borrowed (NAT-3).
  static bool is_default_stream(stream_t s) noexcept {
    return s == nullptr || s == hipStreamPerThread;
  }
  //! HIP 5.2 has no hipStreamGetDevice: the device of a borrowed stream is not checked.
  static constexpr bool can_tell_stream_device = false;
  static status stream_device(stream_t, int* d) noexcept {
    *d = -1;
    return {hipSuccess, "hipStreamGetDevice"};
  }
  static status stream_priority(stream_t s, int* p) noexcept {
    return {hipStreamGetPriority(s, p), "hipStreamGetPriority"};
  }
  static status stream_query(stream_t s) noexcept { return {hipStreamQuery(s), "hipStreamQuery"}; }
  static status stream_synchronize(stream_t s) noexcept {
    return {hipStreamSynchronize(s), "hipStreamSynchronize"};
  }
  static status stream_wait_event(stream_t s, event_t e) noexcept {
    return {hipStreamWaitEvent(s, e, 0), "hipStreamWaitEvent"};
  }
  // Host functions: stream_signal_then_wait below and sluice's word watcher
  // (host_func/word_watch.hpp) where the stream has a hardware queue of its own,
  // else this callback (docs/design.md, "Which host functions use the word
  // watcher").
  //! Enqueues F(data) on s. sluice's F only hands over to its own threads.
  // hipLaunchHostFunc is declared (hip_runtime_api.h:5321) but not exported by
  // libamdhip64.so.5.2 (undefined reference at link): hipStreamAddCallback instead, whose
  // callback also gets the stream and a status; the adapter drops both and always calls F
  // (F must run to release its data and open the stream's gate).
  template <void (*F)(void*)>
  static status launch_host_func(stream_t s, void* data) noexcept {
    constexpr hipStreamCallback_t adapter = [](hipStream_t, hipError_t, void* d) { F(d); };
    return {hipStreamAddCallback(s, adapter, data, 0), "hipStreamAddCallback"};
  }

  // --- events -------------------------------------------------------------
  static status event_create(event_t* e, bool timing, bool blocking_sync) noexcept {
    unsigned flags = timing ? hipEventDefault : hipEventDisableTiming;
    // Passed on, but hipEventSynchronize may still spin (TODO in hip_runtime_api.h:2287; EVT-10 is
    // a MAY).
    if (blocking_sync) flags |= hipEventBlockingSync;
    return {hipEventCreateWithFlags(e, flags), "hipEventCreateWithFlags"};
  }
  static status event_destroy(event_t e) noexcept {
    return {hipEventDestroy(e), "hipEventDestroy"};
  }
  static status event_record(event_t e, stream_t s) noexcept {
    return {hipEventRecord(e, s), "hipEventRecord"};
  }
  static status event_query(event_t e) noexcept { return {hipEventQuery(e), "hipEventQuery"}; }
  static status event_synchronize(event_t e) noexcept {
    return {hipEventSynchronize(e), "hipEventSynchronize"};
  }
  static status event_elapsed(float* ms, event_t a, event_t b) noexcept {
    return {hipEventElapsedTime(ms, a, b), "hipEventElapsedTime"};
  }

  // --- graphs ---------------------------------------------------------------
  // None native: HIP 5.2's capture runs stream memory operations and
  // callbacks at once, makes no record nodes from captured event records and
  // does not order two launches of one exec on different streams
  // (docs/vendor-differences.md); sluice replays its recorded operations.
  static constexpr bool native_graphs = false;
  using graph_t = void*;
  using graph_exec_t = void*;
  static status begin_capture(stream_t) noexcept { return {hipErrorNotSupported, "(none)"}; }
  static status end_capture(stream_t, graph_t*) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }
  static status graph_instantiate(graph_exec_t*, graph_t) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }
  static status graph_launch(graph_exec_t, stream_t) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }
  static status graph_exec_destroy(graph_exec_t) noexcept { return {hipSuccess, "(none)"}; }
  static status graph_destroy(graph_t) noexcept { return {hipSuccess, "(none)"}; }
  static status event_record_external(event_t, stream_t) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }
  // Native work on a capturing stream is not captured: end() refuses the
  // capture (a replay has nothing to run it from).
  static constexpr bool captures_native_work = false;
  //! Whether the vendor captures s now (a capture by the stream's owner).
  static status stream_is_capturing(stream_t s, bool* yes) noexcept {
#if defined(__HIP_PLATFORM_NVIDIA__)
    // HIP 5.2's NVIDIA platform declares its graph calls for nvcc only.
    cudaStreamCaptureStatus state = cudaStreamCaptureStatusNone;
    const hipError_t e = hipCUDAErrorTohipError(cudaStreamIsCapturing(s, &state));
    *yes = e == hipSuccess && state != cudaStreamCaptureStatusNone;
    return {e, "cudaStreamIsCapturing"};
#else
    hipStreamCaptureStatus state = hipStreamCaptureStatusNone;
    const hipError_t e = hipStreamIsCapturing(s, &state);
    *yes = e == hipSuccess && state != hipStreamCaptureStatusNone;
    return {e, "hipStreamIsCapturing"};
#endif
  }
  static status graph_node_count(graph_t, std::size_t*) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }
  static status capture_add_graph(stream_t, graph_t) noexcept {
    return {hipErrorNotSupported, "(none)"};
  }

  // --- memory -------------------------------------------------------------
  using pool_t = hipMemPool_t;
  //! sluice's own pool for device_buffer on device d. Hidden cross-stream dependencies are
  //! off: with hipMemPoolReuseAllowInternalDependencies (on by default, hip_runtime_api.h:787)
  //! an allocation on one stream may be made to wait for a free on another, which would
  //! break IND-1.
  static status pool_create(pool_t* pool, int d) noexcept {
    hipMemPoolProps props{};
    props.allocType = hip_platform::mem_allocation_pinned;
    props.location.type = hip_platform::mem_location_device;
    props.location.id = d;
    status s{hipMemPoolCreate(pool, &props), "hipMemPoolCreate"};
    if (!s.ok()) return s;
    int off = 0;
    s = {hipMemPoolSetAttribute(*pool, hip_platform::pool_reuse_internal_dependencies, &off),
         "hipMemPoolSetAttribute"};
    if (!s.ok()) return s;
    // Keep freed memory in the pool (tuning/hip.hpp says why).
    std::uint64_t keep = pool_release_threshold_bytes;
    return {hipMemPoolSetAttribute(*pool, hip_platform::pool_release_threshold, &keep),
            "hipMemPoolSetAttribute"};
  }
  static status malloc_from_pool(void** p, std::size_t n, pool_t pool, stream_t s) noexcept {
    return {hipMallocFromPoolAsync(p, n, pool, s), "hipMallocFromPoolAsync"};
  }
  static status free_async(void* p, stream_t s) noexcept {
    return {hipFreeAsync(p, s), "hipFreeAsync"};
  }
  //! Pinned, mapped into every device's address space (flags and pinned buffers).
  // With hipHostMallocMapped the memory is coherent (fine-grained) whatever HIP_HOST_COHERENT
  // says (hipamd/src/hip_memory.cpp, hipHostMalloc): device waits see host stores to flags.
  static status host_alloc(void** p, std::size_t n) noexcept {
    return {hipHostMalloc(p, n, hipHostMallocPortable | hipHostMallocMapped), "hipHostMalloc"};
  }
  // hipHostFree waits for the null stream of every device (hipamd/src/hip_memory.cpp, ihipFree):
  // sluice calls it on its reaper thread, never on the caller's.
  static status free_host(void* p) noexcept { return {hipHostFree(p), "hipHostFree"}; }
  static status host_device_pointer(void** d, void* h) noexcept {
    return {hipHostGetDevicePointer(d, h, 0), "hipHostGetDevicePointer"};
  }
  //! True for memory the device cannot address: plain (pageable) host memory.
  // 5.2 has no "unregistered" memory type (hipMemoryType, hip_runtime_api.h:159-166):
  // hipPointerGetAttributes fails with hipErrorInvalidValue for memory HIP does not know,
  // which here means pageable; that error is cleared and the call reported as a success.
  // On the NVIDIA platform the wrapper returns hipErrorInvalidValue for every type but
  // device and host (nvidia_hip_runtime_api.h:1858-1875), CUDA's unregistered among them.
  static status is_pageable(const void* p, bool* pageable) noexcept {
    hipPointerAttribute_t a{};
    bool known = false;
    const status s = pointer_attributes(p, &a, &known);
    *pageable = s.ok() && !known;
    return s;
  }
  //! The device whose memory p is (device memory only: not host-accessible),
  //! or -1 (pinned, managed, pageable or unknown memory).
  static status device_memory_of(const void* p, int* device) noexcept {
    hipPointerAttribute_t a{};
    bool known = false;
    const status s = pointer_attributes(p, &a, &known);
    *device = known && a.memoryType == hipMemoryTypeDevice && !a.isManaged ? a.device : -1;
    return s;
  }
  //! hipPointerGetAttributes, with memory HIP does not know (5.2: it fails
  //! with hipErrorInvalidValue; pageable memory) cleared and reported as a
  //! success with *known false.
  static status pointer_attributes(const void* p, hipPointerAttribute_t* a, bool* known) noexcept {
    const status s{hipPointerGetAttributes(a, p), "hipPointerGetAttributes"};
    if (s.code == hipErrorInvalidValue) {
      (void)hipGetLastError();
      *known = false;
      return {hipSuccess, s.api};
    }
    *known = s.ok();
    return s;
  }
  static status memcpy_async(void* dst, const void* src, std::size_t n, stream_t s) noexcept {
    return {hipMemcpyAsync(dst, src, n, hipMemcpyDefault, s), "hipMemcpyAsync"};
  }
  static status memset_async(void* dst, int value, std::size_t n, stream_t s) noexcept {
    return {hipMemsetAsync(dst, value, n, s), "hipMemsetAsync"};
  }
  //! HIP 5.2 has no batched copy: one hipMemcpyPeerAsync per piece, the first failure returned
  //! (sluice checked every piece before, so a failure is the device's or the runtime's).
  static status memcpy_peer_batch_async(void* const* dsts, const void* const* srcs,
                                        const std::size_t* sizes, std::size_t count, int dst_dev,
                                        int src_dev, stream_t s) noexcept {
    for (std::size_t i = 0; i < count; ++i) {
      const hipError_t e = hipMemcpyPeerAsync(dsts[i], dst_dev, srcs[i], src_dev, sizes[i], s);
      if (e != hipSuccess) return {e, "hipMemcpyPeerAsync"};
    }
    return {hipSuccess, "hipMemcpyPeerAsync"};
  }
  static status memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev,
                                  std::size_t n, stream_t s) noexcept {
    return {hipMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, s), "hipMemcpyPeerAsync"};
  }
  //! A vendor graph's small fill and copy within one device's memory as
  //! sluice's kernels (sm_copy.cu).
  static status graph_fill_kernel(void* dst, unsigned char v, std::size_t n, stream_t s) noexcept {
    return {static_cast<hipError_t>(::sluice::detail::sm_copy::launch_graph_fill(dst, v, n, s)),
            "the graph fill kernel's launch"};
  }
  static status graph_copy_kernel(void* dst, const void* src, std::size_t n, stream_t s) noexcept {
    return {static_cast<hipError_t>(::sluice::detail::sm_copy::launch_graph_copy(dst, src, n, s)),
            "the graph copy kernel's launch"};
  }
  //! sluice's SM copy kernel (sm_copy.cu, compiled by hipcc into this library).
  static status sm_copy(void* dst, const void* src, std::size_t n, stream_t s,
                        unsigned blocks) noexcept {
    return {static_cast<hipError_t>(::sluice::detail::sm_copy::launch(dst, src, n, s, blocks)),
            "the SM copy kernel's launch"};
  }
  static status sm_copy_batch(const ::sluice::detail::sm_copy::piece* pieces, unsigned count,
                              stream_t s, unsigned blocks_per_piece) noexcept {
    return {static_cast<hipError_t>(
                ::sluice::detail::sm_copy::launch_batch(pieces, count, s, blocks_per_piece)),
            "the SM copy kernel's launch"};
  }
  //! A host-function batch's signal and gate as one kernel (host_gate.cu,
  //! compiled by HIP's compiler into this library): the path where other streams of
  //! the device hold for the host (stream.cpp, docs/design.md "The gate kernel").
  static status stream_gate_kernel(stream_t s, void* signal_word, std::uint64_t signal_value,
                                   const void* gate_word, std::uint64_t gate_value) noexcept {
    return {static_cast<hipError_t>(::sluice::detail::host_gate::launch(
                s, signal_word, signal_value, gate_word, gate_value)),
            "the host-function gate kernel's launch"};
  }
  //! The gate kernel launched with nothing to do (host_gate::prepare).
  static status prepare_gate_kernel(stream_t s) noexcept {
    return {static_cast<hipError_t>(::sluice::detail::host_gate::prepare(s)),
            "the host-function gate kernel's launch"};
  }
  static status multiprocessor_count(int* n, int d) noexcept {
    return {hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, d),
            "hipDeviceGetAttribute"};
  }

  // --- stream memory operations ------------------------------------------
  // 64-bit words like the CUDA traits (flags and gates are 64-bit words holding 32-bit
  // values); how each platform reaches them: hip_platform.
  //! Later work on s waits until *device_word >= value.
  static status stream_wait_value(stream_t s, void* device_word, std::uint64_t value) noexcept {
    return {hip_platform::wait_value(s, device_word, value), hip_platform::wait_value_api};
  }
  //! After prior work on s, stores value to *device_word.
  static status stream_write_value(stream_t s, void* device_word, std::uint64_t value) noexcept {
    return {hip_platform::write_value(s, device_word, value), hip_platform::write_value_api};
  }
  //! What stream_signal_then_wait did: status, and whether nothing was enqueued.
  struct signal_status {
    status result;
    bool nothing_enqueued = false;
  };
  //! A host function's two stream operations: after prior work on s, store
  //! signal_value to *signal_word (sluice's watcher sees it), then hold later
  //! work until *gate_word >= gate_value. Two calls (HIP 5.2 has no batch of
  //! stream memory operations).
  static signal_status stream_signal_then_wait(stream_t s, void* signal_word,
                                               std::uint64_t signal_value, void* gate_word,
                                               std::uint64_t gate_value) noexcept {
    const status written = stream_write_value(s, signal_word, signal_value);
    if (!written.ok()) return {written, true};
    return {stream_wait_value(s, gate_word, gate_value), false};
  }
  //! The runtime is being torn down (process exit): frees may then fail harmlessly.
  static bool means_shutdown(error_t e) noexcept { return e == hipErrorDeinitialized; }

  // --- peers --------------------------------------------------------------
  static status can_access_peer(int* yes, int from, int to) noexcept {
    return {hipDeviceCanAccessPeer(yes, from, to), "hipDeviceCanAccessPeer"};
  }
  //! Enables the current device's access to `peer`'s memory.
  static status enable_peer_access(int peer) noexcept {
    return {hipDeviceEnablePeerAccess(peer, 0), "hipDeviceEnablePeerAccess"};
  }
  static constexpr error_t peer_access_already_enabled = hipErrorPeerAccessAlreadyEnabled;
  static status p2p_rank(int* v, int from, int to) noexcept {
    return {hipDeviceGetP2PAttribute(v, hipDevP2PAttrPerformanceRank, from, to),
            "hipDeviceGetP2PAttribute"};
  }
  static status p2p_atomics(int* v, int from, int to) noexcept {
    return {hipDeviceGetP2PAttribute(v, hipDevP2PAttrNativeAtomicSupported, from, to),
            "hipDeviceGetP2PAttribute"};
  }
  //! NVLink, XGMI or PCIe, as far as the platform tells (hip_platform::link_kind_of).
  static link_kind link_kind_of(int from, int to) noexcept {
    return hip_platform::link_kind_of(from, to);
  }
  //! Lets device `peer` access memory of `pool` (peer access alone does not cover
  //! stream-ordered pool memory: hipMemPoolSetAccess, hip_runtime_api.h:2866).
  static status pool_grant_access(pool_t pool, int peer) noexcept {
    hipMemAccessDesc desc{};
    desc.location.type = hip_platform::mem_location_device;
    desc.location.id = peer;
    desc.flags = hip_platform::mem_access_read_write;
    return {hipMemPoolSetAccess(pool, &desc, 1), "hipMemPoolSetAccess"};
  }
};

}  // namespace sluice::gpu
