// What the stub (stub.cpp) and the simulated runtime (sim.cpp) define alike:
// devices, versions, errors and the driver entry points. Included once by each;
// each defines the five functions declared first.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fake {

const char* runtime_name();  // the device name the fake reports
int device_count();
CUresult wait_value64(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
CUresult write_value64(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
//! sluice's host-function gate kernel (backends/cuda_hip/host_gate.cu), the one
//! kernel the fakes run: store args' signal value, then wait for the gate word.
cudaError_t gate_kernel(cudaStream_t, void** args);
//! sluice's kernels for a vendor graph's small fills and copies
//! (backends/cuda_hip/sm_copy.cu, sluice_graph_fill and sluice_graph_copy):
//! run as the memset or copy they are.
cudaError_t graph_kernel(bool fill, cudaStream_t, void** args);
//! A kernel (its host stub) is launched, or its attributes asked for, on
//! device `device`: where the runtime loads kernels at their first use, the
//! simulated runtime loads it here (and may wait for the device).
void kernel_used(const void* host_stub, int device);
int stream_device(cudaStream_t);  // the null stream: the current device's

thread_local int current_device = 0;
thread_local cudaError_t last_error = cudaSuccess;

inline bool valid_device(int d) { return d >= 0 && d < device_count(); }

//! cudaDevAttrMaxPitch: 2^31 - 1, what CUDA's deviceQuery sample reports as the
//! "maximum memory pitch" of current NVIDIA GPUs (assumed here, not read from one).
constexpr int max_pitch = 2147483647;

//! The runtime's start. CUDA reads CUDA_DEVICE_MAX_CONNECTIONS (its hardware
//! queue count) and CUDA_MODULE_LOADING when it starts, for the whole process:
//! a program's setenv after its first runtime call comes too late. The fakes
//! note both variables at the first call of those that call started() (the
//! ones a program can make before anything else: versions, errors, device
//! count and choice, stream creation) and give them to the simulated runtime
//! (start_env). With SLUICE_SIM_REQUIRE_START_ENV=1 a start without
//! CUDA_DEVICE_MAX_CONNECTIONS ends the process at once (exit 86, naming the
//! call): sluice sets it before its first runtime call
//! (prepare_runtime_environment), so a start without it is a sluice path that
//! called the runtime first (ctest sim.tool.start_env.cuda).
struct start_snapshot {
  bool connections_set = false;
  char connections[32] = {};
  bool module_loading_set = false;
  char module_loading[32] = {};
};
inline start_snapshot start_env{};
inline void started(const char* call) noexcept {
  static const bool once = [call] {
    if (const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) {
      start_env.connections_set = true;
      std::snprintf(start_env.connections, sizeof start_env.connections, "%s", v);
    }
    if (const char* v = std::getenv("CUDA_MODULE_LOADING")) {
      start_env.module_loading_set = true;
      std::snprintf(start_env.module_loading, sizeof start_env.module_loading, "%s", v);
    }
    const char* required = std::getenv("SLUICE_SIM_REQUIRE_START_ENV");
    if (required != nullptr && std::strcmp(required, "1") == 0 && !start_env.connections_set) {
      std::fprintf(stderr,
                   "fake cudart: the runtime started (first call: %s) without "
                   "CUDA_DEVICE_MAX_CONNECTIONS: a later setenv does not reach it\n",
                   call);
      std::fflush(stderr);
      std::_Exit(86);
    }
    return true;
  }();
  (void)once;
}

//! cuStreamBatchMemOp: its 64-bit waits and writes enqueued in order, as the
//! calls above would; any other operation: CUDA_ERROR_NOT_SUPPORTED, with
//! nothing enqueued.
inline CUresult batch_mem_op(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                             unsigned int) {
  for (unsigned int i = 0; i < count; ++i)
    if (ops[i].operation != CU_STREAM_MEM_OP_WAIT_VALUE_64 &&
        ops[i].operation != CU_STREAM_MEM_OP_WRITE_VALUE_64)
      return CUDA_ERROR_NOT_SUPPORTED;
  for (unsigned int i = 0; i < count; ++i) {
    const CUresult r = ops[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64
                           ? wait_value64(s, ops[i].waitValue.address, ops[i].waitValue.value64,
                                          ops[i].waitValue.flags)
                           : write_value64(s, ops[i].writeValue.address, ops[i].writeValue.value64,
                                           ops[i].writeValue.flags);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

//! cuCtxGetCurrent: one distinct token per device stands for its primary
//! context; the current device's is current (as after cudaSetDevice).
inline char context_tokens[64];
inline CUresult ctx_get_current(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(&context_tokens[current_device]);
  return CUDA_SUCCESS;
}

//! A failing call: remembered for cudaGetLastError, as the runtime does.
inline cudaError_t failed(cudaError_t e) {
  last_error = e;
  return e;
}

}  // namespace fake

extern "C" {

// CUDA's names and strings for the errors the fakes return: messages read as on a GPU.
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorSymbolNotFound: return "cudaErrorSymbolNotFound";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
    default: return "fake error";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorHostMemoryAlreadyRegistered:
      return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered:
      return "pointer does not correspond to a registered memory region";
    default: return "error of a fake CUDA runtime";
  }
}
// What nvcc's host code calls for a program with device code (the conformance
// suite's ERR-2 fault kernel, sluice::cuda's SM copy kernel, its host-function
// gate kernel): registration notes each kernel's name; a launch fails (no
// kernels here), so sluice keeps peer copies on the copy engine, except the
// gate kernel's, which the fake runs (fake::gate_kernel: its stores and its
// wait are host memory's).
void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
// Registered gate kernels' host stubs (their device name contains
// "sluice_host_gate"), and the graph kernels'; registration runs at load
// time, before any launch.
const void* gate_stubs[4] = {};
const void* graph_fill_stub = nullptr;
const void* graph_copy_stub = nullptr;
void __cudaRegisterFunction(void**, const char* host_stub, char* device_name, const char*, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  if (device_name != nullptr && std::strstr(device_name, "sluice_graph_fill") != nullptr)
    graph_fill_stub = host_stub;
  if (device_name != nullptr && std::strstr(device_name, "sluice_graph_copy") != nullptr)
    graph_copy_stub = host_stub;
  if (device_name != nullptr && std::strstr(device_name, "sluice_host_gate") != nullptr)
    for (const void*& g : gate_stubs)
      if (g == nullptr) {
        g = host_stub;
        break;
      }
}
// <<<grid, block, shared, stream>>> pushes its configuration; the kernel's host
// stub pops it and launches with it.
thread_local dim3 pushed_grid, pushed_block;
thread_local size_t pushed_shared = 0;
thread_local CUstream_st* pushed_stream = nullptr;
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, CUstream_st* stream) {
  pushed_grid = grid;
  pushed_block = block;
  pushed_shared = shared;
  pushed_stream = stream;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  *grid = pushed_grid;
  *block = pushed_block;
  *shared = pushed_shared;
  *static_cast<cudaStream_t*>(stream) = pushed_stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* host_stub) {
  *k = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_stub));
  return cudaSuccess;
}
// SLUICE_SIM_GATE_KERNEL=fail: the gate kernel's launches fail too, with
// nothing enqueued (sluice must take the callback and count it).
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3, dim3, void** args, size_t, cudaStream_t s) {
  static const bool gate_fails = [] {
    const char* v = std::getenv("SLUICE_SIM_GATE_KERNEL");
    return v != nullptr && std::strcmp(v, "fail") == 0;
  }();
  fake::kernel_used(reinterpret_cast<const void*>(k), fake::stream_device(s));
  for (const void* g : gate_stubs)
    if (g != nullptr && g == reinterpret_cast<const void*>(k))
      return gate_fails ? fake::failed(cudaErrorLaunchOutOfResources) : fake::gate_kernel(s, args);
  if (k != nullptr && reinterpret_cast<const void*>(k) == graph_fill_stub)
    return fake::graph_kernel(true, s, args);
  if (k != nullptr && reinterpret_cast<const void*>(k) == graph_copy_stub)
    return fake::graph_kernel(false, s, args);
  return fake::failed(cudaErrorNotSupported);
}

// Attributes of no kernel: the fakes run none of sluice's but the gate kernel.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* host_stub) {
  fake::started("cudaFuncGetAttributes");
  fake::kernel_used(host_stub, fake::current_device);
  std::memset(a, 0, sizeof *a);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int d) {
  if (!fake::valid_device(d)) return fake::failed(cudaErrorInvalidDevice);
  *v = attr == cudaDevAttrMultiProcessorCount ? 132
       : attr == cudaDevAttrMaxPitch          ? fake::max_pitch
                                              : 0;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  fake::started("cudaGetLastError");
  const cudaError_t e = fake::last_error;
  fake::last_error = cudaSuccess;
  return e;
}
cudaError_t cudaGetDeviceCount(int* n) {
  fake::started("cudaGetDeviceCount");
  *n = fake::device_count();
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  fake::started("cudaGetDevice");
  *d = fake::current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  fake::started("cudaSetDevice");
  if (!fake::valid_device(d)) return fake::failed(cudaErrorInvalidDevice);
  fake::current_device = d;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* id, int len, int d) {
  if (!fake::valid_device(d)) return fake::failed(cudaErrorInvalidDevice);
  if (len < 13) return fake::failed(cudaErrorInvalidValue);
  std::snprintf(id, static_cast<std::size_t>(len), "0000:%02x:00.0", 0x10 + d);
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (!fake::valid_device(d)) return fake::failed(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::strncpy(p->name, fake::runtime_name(), sizeof p->name - 1);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  fake::started("cudaRuntimeGetVersion");
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  fake::started("cudaDriverGetVersion");
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned int) {
  *d = h;  // one address space
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  *fn = nullptr;
  if (std::strcmp(symbol, "cuStreamWaitValue64") == 0)
    *fn = reinterpret_cast<void*>(&fake::wait_value64);
  else if (std::strcmp(symbol, "cuStreamWriteValue64") == 0)
    *fn = reinterpret_cast<void*>(&fake::write_value64);
  else if (std::strcmp(symbol, "cuStreamBatchMemOp") == 0)
    *fn = reinterpret_cast<void*>(&fake::batch_mem_op);
  else if (std::strcmp(symbol, "cuCtxGetCurrent") == 0)
    *fn = reinterpret_cast<void*>(&fake::ctx_get_current);
  if (status != nullptr)
    *status = *fn != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return *fn != nullptr ? cudaSuccess : fake::failed(cudaErrorSymbolNotFound);
}

}  // extern "C"
