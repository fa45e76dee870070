// A stand-in libcudart.so.13 for measuring sluice's own CPU cost per call on a
// machine without a GPU (tests/fake_cudart/README.md). Every call the CUDA
// backend and sluice-bench-api-overhead make returns success at once; copies
// and fills happen on the calling thread, host functions run inside
// cudaLaunchHostFunc, streams and events are empty objects, device memory is
// host memory. Nothing here is asynchronous: it is for timing the wrapper, not
// for checking semantics.
//
// SLUICE_STUB_EVICT=1: every enqueue-like call (copy, fill, record, wait,
// query, host function) also runs about 2,000 instructions of straight-line
// code (about 9 KiB: the compiler merges the repeated loads) and touches
// 64 KiB of data, roughly what the real driver's ~1-2 us call does to
// the caller's L1 caches, so that sluice's code runs with the caches it would
// find after a real vendor call.
#include "common.hpp"
#include "sim_cupti.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

struct object {
  int device = 0;
};

bool evict_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SLUICE_STUB_EVICT");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

alignas(64) unsigned char scratch[64 * 1024];
std::atomic<unsigned> sink{0};

#define STUB_X1(i) acc += scratch[((i)*64U) % sizeof scratch];
#define STUB_X8(i) \
  STUB_X1(i)       \
  STUB_X1(i + 1)   \
  STUB_X1(i + 2) STUB_X1(i + 3) STUB_X1(i + 4) STUB_X1(i + 5) STUB_X1(i + 6) STUB_X1(i + 7)
#define STUB_X64(i) \
  STUB_X8(i)        \
  STUB_X8(i + 8)    \
  STUB_X8(i + 16) STUB_X8(i + 24) STUB_X8(i + 32) STUB_X8(i + 40) STUB_X8(i + 48) STUB_X8(i + 56)
#define STUB_X512(i) \
  STUB_X64(i)        \
  STUB_X64(i + 64)   \
  STUB_X64(i + 128)  \
  STUB_X64(i + 192) STUB_X64(i + 256) STUB_X64(i + 320) STUB_X64(i + 384) STUB_X64(i + 448)

//! Straight-line code (4096 adds from fixed addresses, which the compiler
//! merges to about 2,000 instructions) reading one byte of every line of the
//! 64 KiB scratch buffer, then a write to each line: evicts the caller's L1
//! data lines and part of its L1 instruction cache.
__attribute__((noinline)) void evict() {
  if (!evict_enabled()) return;
  unsigned acc = sink.load(std::memory_order_relaxed);
  STUB_X512(0)
  STUB_X512(512)
  STUB_X512(1024)
  STUB_X512(1536)
  STUB_X512(2048)
  STUB_X512(2560)
  STUB_X512(3072)
  STUB_X512(3584)
  for (std::size_t i = 0; i < sizeof scratch; i += 64)
    scratch[i] = static_cast<unsigned char>(acc + i);
  sink.store(acc, std::memory_order_relaxed);
}

CUresult wait_value64_impl(CUstream, CUdeviceptr, cuuint64_t, unsigned int) {
  evict();
  return CUDA_SUCCESS;
}

CUresult write_value64_impl(CUstream, CUdeviceptr addr, cuuint64_t value, unsigned int) {
  evict();
  reinterpret_cast<std::atomic<std::uint64_t>*>(addr)->store(value);
  return CUDA_SUCCESS;
}

//! Strided copies: row by row, on the calling thread (no checks: the simulated runtime has them).
void copy_rows(unsigned char* d, size_t dpitch, size_t dplane, const unsigned char* s,
               size_t spitch, size_t splane, cudaExtent e) {
  for (size_t z = 0; z < e.depth; ++z)
    for (size_t y = 0; y < e.height; ++y)
      std::memmove(d + z * dplane + y * dpitch, s + z * splane + y * spitch, e.width);
}
template <class Parms>
cudaError_t copy_3d(const Parms* p) {
  evict();
  const auto at = [](const cudaPitchedPtr& q, const cudaPos& o) {
    return static_cast<unsigned char*>(q.ptr) + o.z * q.pitch * q.ysize + o.y * q.pitch + o.x;
  };
  copy_rows(at(p->dstPtr, p->dstPos), p->dstPtr.pitch, p->dstPtr.pitch * p->dstPtr.ysize,
            at(p->srcPtr, p->srcPos), p->srcPtr.pitch, p->srcPtr.pitch * p->srcPtr.ysize,
            p->extent);
  return cudaSuccess;
}
}  // namespace

extern "C" {

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
  *s = reinterpret_cast<cudaStream_t>(new object{fake::current_device});
  return cudaSuccess;
}
cudaError_t cudaStreamGetDevice(cudaStream_t s, int* d) {
  *d = s == nullptr ? fake::current_device : reinterpret_cast<object*>(s)->device;
  return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t, int* priority) {
  *priority = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamGetFlags(cudaStream_t, unsigned int* flags) {
  *flags = cudaStreamNonBlocking;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<object*>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t) {
  evict();
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) {
  evict();
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* data) {
  evict();
  fn(data);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = reinterpret_cast<cudaEvent_t>(new object{fake::current_device});
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<object*>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) {
  evict();
  return cudaSuccess;
}
// No graphs in this model: the capture sluice would build a vendor graph with
// is refused, as by a runtime without graphs, and sluice replays its recorded
// operations instead (docs/graphs.md).
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  return cudaErrorNotSupported;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  if (g != nullptr) *g = nullptr;
  return cudaErrorIllegalState;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t*, cudaGraph_t, unsigned long long) {
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  if (status != nullptr) *status = cudaStreamCaptureStatusNone;  // the stub never captures
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t, cudaGraphNode_t*, size_t*) {
  return cudaErrorNotSupported;
}
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t, cudaStreamCaptureStatus* status,
                                     unsigned long long*, cudaGraph_t*, const cudaGraphNode_t**,
                                     const cudaGraphEdgeData**, size_t*) {
  if (status != nullptr) *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t*, cudaGraph_t, const cudaGraphNode_t*,
                                       size_t, cudaGraph_t) {
  return cudaErrorNotSupported;
}
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t, cudaGraphNode_t*,
                                                const cudaGraphEdgeData*, size_t, unsigned int) {
  return cudaErrorNotSupported;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) {
  return cudaEventRecord(e, s);
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  evict();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.0F;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps*) {
  *pool = reinterpret_cast<cudaMemPool_t>(new object{fake::current_device});
  return cudaSuccess;
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t, cudaStream_t) {
  return cudaMalloc(p, n);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return cudaMalloc(p, n); }
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void*) {
  std::memset(a, 0, sizeof *a);
  a->type = cudaMemoryTypeUnregistered;
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t) {
  evict();
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t n, cudaStream_t) {
  evict();
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                 size_t count, cudaMemcpyAttributes*, size_t*, size_t,
                                 cudaStream_t) {
  evict();
  for (size_t i = 0; i < count; ++i) std::memcpy(dsts[i], srcs[i], sizes[i]);
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind, cudaStream_t) {
  evict();
  copy_rows(static_cast<unsigned char*>(dst), dpitch, 0, static_cast<const unsigned char*>(src),
            spitch, 0, cudaExtent{width, height, 1});
  return cudaSuccess;
}
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t) { return copy_3d(p); }
cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t) {
  return copy_3d(p);
}
cudaError_t cudaHostRegister(void*, size_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t) {
  evict();
  std::memset(dst, value, n);
  return cudaSuccess;
}

}  // extern "C"

//! sim_cupti.cpp's stream ids (the stub is a CUPTI too where CUPTI's headers
//! are: activity records it has none, the API sluice's source calls it has).
std::uint32_t sim_stream_id(void* h) noexcept {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(h) >> 4);
}

namespace fake {
const char* runtime_name() { return "stub runtime (no GPU)"; }
int device_count() { return 1; }
CUresult wait_value64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) {
  return wait_value64_impl(s, a, v, f);
}
CUresult write_value64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) {
  return write_value64_impl(s, a, v, f);
}
void kernel_used(const void*, int) {}  // nothing loads: every call returns at once
int stream_device(cudaStream_t) { return current_device; }
cudaError_t graph_kernel(bool, cudaStream_t, void**) {
  return failed(cudaErrorNotSupported);  // the stub builds no graphs
}
cudaError_t gate_kernel(cudaStream_t, void** args) {
  // As the stub's stream memory operations: the store at once, the wait passes.
  evict();
  auto* signal = *static_cast<std::atomic<std::uint64_t>**>(args[0]);
  if (signal != nullptr) signal->store(*static_cast<unsigned long long*>(args[1]));
  return cudaSuccess;
}
}  // namespace fake
