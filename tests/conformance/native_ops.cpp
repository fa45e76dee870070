// The vendor calls of native_ops.hpp, one branch per backend.
#include "native_ops.hpp"

#include <sluice/error.hpp>
#include <sluice/memory.hpp>

#include <stdexcept>
#include <string>

namespace sluice::conformance {

// The vendor's own capture through CUDA's runtime calls: on CUDA, and on HIP's
// NVIDIA platform, where HIP 5.2 declares its graph calls for nvcc only.
#if defined(SLUICE_BACKEND_CUDA) || \
    (defined(SLUICE_BACKEND_HIP) && defined(__HIP_PLATFORM_NVIDIA__))
int native_begin_capture(native_stream_t s) {
  return static_cast<int>(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
}
int native_end_capture(native_stream_t s) {
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s, &g);
  if (g != nullptr) (void)cudaGraphDestroy(g);
  (void)cudaGetLastError();
  return static_cast<int>(e);
}
#endif

#if defined(SLUICE_BACKEND_CUDA)
void native_fill(sluice::device d, native_stream_t s, void* p, unsigned char v, std::size_t n) {
  int current = 0;
  (void)cudaGetDevice(&current);
  (void)cudaSetDevice(d.id());
  const cudaError_t e = cudaMemsetAsync(p, v, n, s);
  (void)cudaSetDevice(current);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cudaMemsetAsync: ") + cudaGetErrorName(e));
}
std::vector<native_stream_t> default_native_streams() {
  return {nullptr, cudaStreamLegacy, cudaStreamPerThread};
}
int native_synchronize(native_stream_t s) {
  const cudaError_t e = cudaStreamSynchronize(s);
  (void)cudaGetLastError();  // a refused call is the caller's to judge, not the next call's
  return static_cast<int>(e);
}
void native_priority_range(sluice::device d, int* least, int* greatest) {
  int current = 0;
  (void)cudaGetDevice(&current);
  (void)cudaSetDevice(d.id());
  const cudaError_t e = cudaDeviceGetStreamPriorityRange(least, greatest);
  (void)cudaSetDevice(current);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cudaDeviceGetStreamPriorityRange: ") +
                             cudaGetErrorName(e));
}
#elif defined(SLUICE_BACKEND_HIP)
void native_fill(sluice::device d, native_stream_t s, void* p, unsigned char v, std::size_t n) {
  int current = 0;
  (void)hipGetDevice(&current);
  (void)hipSetDevice(d.id());
  const hipError_t e = hipMemsetAsync(p, v, n, s);
  (void)hipSetDevice(current);
  if (e != hipSuccess)
    throw std::runtime_error(std::string("hipMemsetAsync: ") + hipGetErrorName(e));
}
std::vector<native_stream_t> default_native_streams() { return {nullptr, hipStreamPerThread}; }
#if !defined(__HIP_PLATFORM_NVIDIA__)  // there: CUDA's calls, above
int native_begin_capture(native_stream_t s) {
  return static_cast<int>(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
}
int native_end_capture(native_stream_t s) {
  hipGraph_t g = nullptr;
  const hipError_t e = hipStreamEndCapture(s, &g);
  if (g != nullptr) (void)hipGraphDestroy(g);
  (void)hipGetLastError();
  return static_cast<int>(e);
}
#endif
int native_synchronize(native_stream_t s) {
  const hipError_t e = hipStreamSynchronize(s);
  (void)hipGetLastError();
  return static_cast<int>(e);
}
void native_priority_range(sluice::device d, int* least, int* greatest) {
  int current = 0;
  (void)hipGetDevice(&current);
  (void)hipSetDevice(d.id());
  const hipError_t e = hipDeviceGetStreamPriorityRange(least, greatest);
  (void)hipSetDevice(current);
  if (e != hipSuccess)
    throw std::runtime_error(std::string("hipDeviceGetStreamPriorityRange: ") + hipGetErrorName(e));
}
#else
void native_fill(sluice::device d, native_stream_t s, void* p, unsigned char v, std::size_t n) {
  sluice::fill(sluice::borrow(d, s), p, v, n);
}
std::vector<native_stream_t> default_native_streams() { return {nullptr}; }
int native_synchronize(native_stream_t) { return 0; }
int native_begin_capture(native_stream_t) { return -1; }
int native_end_capture(native_stream_t) { return -1; }
void native_priority_range(sluice::device, int* least, int* greatest) {
  *least = 1;  // docs/semantics.md: the host backend has three levels, like HIP on AMD
  *greatest = -1;
}
#endif

}  // namespace sluice::conformance
