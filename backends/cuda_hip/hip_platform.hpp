// Where HIP's two platforms differ, for hip_api (hip_api.hpp): AMD (ROCm; written
// and built against ROCm 5.2) and NVIDIA (HIP 5.2's headers over CUDA 11.8, built
// with -DSLUICE_HIP_PLATFORM=nvidia: docs/hip-nvidia.md). The vendor facts and
// calls of each platform; sluice's own choices per platform are in tuning/hip.hpp.
// Header lines below refer to ROCm 5.2.3's /usr/include/hip/hip_runtime_api.h
// (Debian libamdhip64-dev 5.2.3); the NVIDIA platform's to
// /usr/include/hip/nvidia_detail/nvidia_hip_runtime_api.h of the same package.
#pragma once

#include <sluice/peer.hpp>

#include <hip/hip_runtime_api.h>
#if defined(__HIP_PLATFORM_NVIDIA__)
#include <cuda.h>  // driver types of cuStreamWaitValue64 / cuStreamWriteValue64 (nothing links libcuda)
#include "nvml_link.hpp"
#else
#include <hsa/hsa_ext_amd.h>  // hsa_amd_link_info_type_t, the link types hipExtGetLinkTypeAndHopCount reports
#endif

#include <cstdint>
#include <string>

namespace sluice::gpu {

namespace hip_platform {
#if defined(__HIP_PLATFORM_NVIDIA__)
// HIP's NVIDIA platform: every hip* call is an inline wrapper over the CUDA
// runtime (nvidia_hip_runtime_api.h), which is CUDA's, linked statically.
// HIP 5.2 does not define the memory-pool enumerators for NVIDIA (only the
// types, nvidia_hip_runtime_api.h:412-416, as typedefs of CUDA's): CUDA's own.
constexpr auto mem_allocation_pinned = cudaMemAllocationTypePinned;
constexpr auto mem_location_device = cudaMemLocationTypeDevice;
constexpr auto pool_reuse_internal_dependencies = cudaMemPoolReuseAllowInternalDependencies;
constexpr auto pool_release_threshold = cudaMemPoolAttrReleaseThreshold;
constexpr auto mem_access_read_write = cudaMemAccessFlagsProtReadWrite;
// Under HIP sit CUDA's streams: CUDA's hardware channels and lazy module loading
// (cuda_api.hpp; what sluice sets: tuning/hip.hpp).
constexpr const char* hardware_queues_variable = "CUDA_DEVICE_MAX_CONNECTIONS";
constexpr int default_hardware_queues = 8;
constexpr const char* module_loading_variable = "CUDA_MODULE_LOADING";
constexpr const char* kernel_driver_file = "/proc/driver/nvidia/version";
constexpr const char* kernel_driver_marker = "Kernel Module";
// Under HIP the CUDA runtime, which reads CUDA's switch that serializes kernel launches
// (cuda_api.hpp), not HIP's.
constexpr const char* launch_blocking_variables[] = {"CUDA_LAUNCH_BLOCKING"};
//! hipRuntimeGetVersion and hipDriverGetVersion give CUDA's numbers here: "11.8 (CUDA)"
//! from 11080 (the facts of a report then say which platform ran).
inline std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) + " (CUDA)";
}
// hipStreamWaitValue64 / hipStreamWriteValue64 of the NVIDIA headers call the
// driver API (cuStreamWaitValue64, nvidia_hip_runtime_api.h:2712): a program using
// them must link libcuda, absent where no driver is installed (CI). As in
// cuda_api, the entry points are fetched from the runtime at first use
// (cudaGetDriverEntryPoint, CUDA 11.3 and later; CUDA 11.8's has no
// driverStatus argument).
using value_op_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
struct memory_ops {
  value_op_fn wait = nullptr;
  value_op_fn write = nullptr;
  hipError_t failure = hipSuccess;
};
inline value_op_fn driver_entry_point(const char* symbol, hipError_t* failure) noexcept {
  void* fn = nullptr;
  const cudaError_t e = cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault);
  if (e != cudaSuccess || fn == nullptr) {
    (void)cudaGetLastError();
    *failure = e != cudaSuccess ? hipCUDAErrorTohipError(e) : hipErrorNotFound;
    return nullptr;
  }
  return reinterpret_cast<value_op_fn>(fn);
}
inline const memory_ops& stream_memory_ops() noexcept {
  static const memory_ops ops = [] {
    memory_ops o;
    o.wait = driver_entry_point("cuStreamWaitValue64", &o.failure);
    o.write = o.wait != nullptr ? driver_entry_point("cuStreamWriteValue64", &o.failure) : nullptr;
    if (o.write == nullptr) o.wait = nullptr;
    return o;
  }();
  return ops;
}
constexpr const char* wait_value_api = "cuStreamWaitValue64";
constexpr const char* write_value_api = "cuStreamWriteValue64";
//! Later work on s waits until *word >= value (CU_STREAM_WAIT_VALUE_GEQ: cyclic
//! on 64 bits, so exactly unsigned >= for sluice's zero-extended 32-bit values).
inline hipError_t wait_value(hipStream_t s, void* word, std::uint64_t value) noexcept {
  const auto& ops = stream_memory_ops();
  if (ops.wait == nullptr) return ops.failure;
  return hipCUResultTohipError(
      ops.wait(s, reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WAIT_VALUE_GEQ));
}
inline hipError_t write_value(hipStream_t s, void* word, std::uint64_t value) noexcept {
  const auto& ops = stream_memory_ops();
  if (ops.write == nullptr) return ops.failure;
  return hipCUResultTohipError(
      ops.write(s, reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WRITE_VALUE_DEFAULT));
}
// hipExtGetLinkTypeAndHopCount is AMD's only (it reads HSA's link info): on
// NVIDIA the link comes from NVML (nvml_link.hpp), as for sluice::cuda; unknown
// without NVML.
inline link_kind link_kind_of(int from, int to) noexcept {
  if (!nvml::library::get().ok) return link_kind::unknown;
  char a[32] = {};
  char b[32] = {};
  if (hipDeviceGetPCIBusId(a, static_cast<int>(sizeof a), from) != hipSuccess ||
      hipDeviceGetPCIBusId(b, static_cast<int>(sizeof b), to) != hipSuccess) {
    (void)hipGetLastError();
    return link_kind::unknown;
  }
  return nvml::link_between(a, b);
}
#else
// HIP's AMD platform (ROCm).
constexpr auto mem_allocation_pinned = hipMemAllocationTypePinned;
constexpr auto mem_location_device = hipMemLocationTypeDevice;
constexpr auto pool_reuse_internal_dependencies = hipMemPoolReuseAllowInternalDependencies;
constexpr auto pool_release_threshold = hipMemPoolAttrReleaseThreshold;
constexpr auto mem_access_read_write = hipMemAccessFlagsProtReadWrite;
// Streams map onto GPU_MAX_HW_QUEUES hardware queues per device (default 4: ROCm clr
// rocclr/utils/flags.hpp, `release(uint, GPU_MAX_HW_QUEUES, 4, ...)`).
constexpr const char* hardware_queues_variable = "GPU_MAX_HW_QUEUES";
constexpr int default_hardware_queues = 4;
// HIP 5.2 documents no lazy kernel loading to turn off.
constexpr const char* module_loading_variable = "";
// The amdgpu kernel driver's version: the first number in this file (the
// DKMS module has it; the in-tree module may not, and then none is reported).
constexpr const char* kernel_driver_file = "/sys/module/amdgpu/version";
constexpr const char* kernel_driver_marker = "";
// The switches that serialize kernel launches: HIP_LAUNCH_BLOCKING=1, and AMD_SERIALIZE_KERNEL=1,
// 2 or 3 (wait for completion before, after, or before and after the enqueue; HIP's
// documentation, "HIP environment variables", debug variables).
constexpr const char* launch_blocking_variables[] = {"HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL"};
//! "5.2.21153" from 50221153: HIP versions are major * 10000000 + minor * 100000 + patch
//! (HIP_VERSION, hip_version.h:12), not CUDA's major * 1000 + minor * 10.
inline std::string version_string(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string((v % 10000000) / 100000) + "." +
         std::to_string(v % 100000);
}
// HIP exports hipStreamWaitValue64 / hipStreamWriteValue64 from libamdhip64 itself
// (hip_runtime_api.h): no driver entry points to look up, unlike CUDA.
constexpr const char* wait_value_api = "hipStreamWaitValue64";
constexpr const char* write_value_api = "hipStreamWriteValue64";
// hipStreamWaitValueGte with the full mask: waits until (*ptr & mask) >= value
// (hip_runtime_api.h:2126, HIP 5.2), an unsigned compare.
inline hipError_t wait_value(hipStream_t s, void* word, std::uint64_t value) noexcept {
  return hipStreamWaitValue64(s, word, value, hipStreamWaitValueGte, ~std::uint64_t{0});
}
inline hipError_t write_value(hipStream_t s, void* word, std::uint64_t value) noexcept {
  return hipStreamWriteValue64(s, word, value, 0);
}
// Unlike the CUDA runtime, HIP on AMD reports the link type: hipExtGetLinkTypeAndHopCount
// (hip_runtime_api.h:1607) returns an hsa_amd_link_info_type_t (hsa/hsa_ext_amd.h:1222-1248:
// PCIE = 2, XGMI = 4). A failed query is unknown, and its error is cleared.
inline link_kind link_kind_of(int from, int to) noexcept {
  std::uint32_t type = 0;
  std::uint32_t hops = 0;
  if (hipExtGetLinkTypeAndHopCount(from, to, &type, &hops) != hipSuccess) {
    (void)hipGetLastError();
    return link_kind::unknown;
  }
  switch (type) {
    case HSA_AMD_LINK_INFO_TYPE_XGMI: return link_kind::xgmi;
    case HSA_AMD_LINK_INFO_TYPE_PCIE: return link_kind::pcie;
    default: return link_kind::unknown;
  }
}
#endif
}  // namespace hip_platform

}  // namespace sluice::gpu
