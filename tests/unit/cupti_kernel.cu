// A kernel the test launches itself on a sluice stream's native handle (not
// through sluice): cupti_test.cpp.
#include <cuda_runtime.h>

__global__ void sluice_test_scale(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 2.0f;
}

bool launch_user_kernel(void* stream, float* p, int n) {
  sluice_test_scale<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(p, n);
  return cudaGetLastError() == cudaSuccess;
}
