// Kokkos kernels on a native stream that this program creates and owns:
// a parallel_for and a parallel_reduce on Kokkos::Cuda(stream) or
// Kokkos::HIP(stream), fenced on that instance only; the sum is checked and
// the instance must report the stream it was given. On a Kokkos without a
// device backend the same runs on the default (host) instance.
// Exit 0: passed; 1: failed; 77: no device here (skipped).
#include <Kokkos_Core.hpp>

#include <cstdio>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#define SMOKE_BACKEND "cuda"
using native_stream = cudaStream_t;
static bool has_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) std::printf("cudaGetDeviceCount: %s\n", cudaGetErrorString(status));
  return status == cudaSuccess && count > 0;
}
static native_stream make_stream() {
  cudaStream_t stream = nullptr;
  return cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess ? stream : nullptr;
}
static void destroy_stream(native_stream stream) { cudaStreamDestroy(stream); }
static Kokkos::Cuda instance_on(native_stream stream) { return Kokkos::Cuda(stream); }
static native_stream stream_of(const Kokkos::Cuda& exec) { return exec.cuda_stream(); }
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#define SMOKE_BACKEND "hip"
using native_stream = hipStream_t;
static bool has_device() {
  int count = 0;
  const hipError_t status = hipGetDeviceCount(&count);
  if (status != hipSuccess) std::printf("hipGetDeviceCount: %s\n", hipGetErrorString(status));
  return status == hipSuccess && count > 0;
}
static native_stream make_stream() {
  hipStream_t stream = nullptr;
  return hipStreamCreateWithFlags(&stream, hipStreamNonBlocking) == hipSuccess ? stream : nullptr;
}
static void destroy_stream(native_stream stream) { (void)hipStreamDestroy(stream); }
static Kokkos::HIP instance_on(native_stream stream) { return Kokkos::HIP(stream); }
static native_stream stream_of(const Kokkos::HIP& exec) { return exec.hip_stream(); }
#else
#define SMOKE_BACKEND "host"
#endif

namespace {

// Fills x[i] = i on `exec`, then sums it there; fences `exec` only.
template <class Exec>
bool fill_and_sum(const Exec& exec, int n) {
  Kokkos::View<double*, typename Exec::memory_space> x(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "x"), n);
  Kokkos::parallel_for(
      "sluice_smoke_fill", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(int i) { x(i) = static_cast<double>(i); });
  double sum = 0;
  Kokkos::parallel_reduce(
      "sluice_smoke_sum", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(int i, double& partial) { partial += x(i); }, sum);
  exec.fence("sluice_smoke: after the sum");
  const double expected = 0.5 * static_cast<double>(n) * static_cast<double>(n - 1);
  std::printf("sum %.0f, expected %.0f\n", sum, expected);
  return sum == expected;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("kokkos-smoke: Kokkos %d.%d.%d, backend %s\n", KOKKOS_VERSION_MAJOR,
              KOKKOS_VERSION_MINOR, KOKKOS_VERSION_PATCH, SMOKE_BACKEND);
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  if (!has_device()) {
    std::printf("kokkos-smoke: SKIPPED, no device\n");
    return 77;
  }
#endif
  bool ok = true;
  Kokkos::initialize(argc, argv);
  {
    const int n = 1 << 20;
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
    const native_stream stream = make_stream();
    if (stream == nullptr) {
      std::printf("kokkos-smoke: could not create a stream\n");
      ok = false;
    } else {
      {
        const auto exec = instance_on(stream);
        const bool same = stream_of(exec) == stream;
        std::printf("instance on the given stream: %s\n", same ? "yes" : "NO");
        ok = fill_and_sum(exec, n) && same;
      }  // the instance (and the views) go before the stream they borrow
      destroy_stream(stream);
    }
#else
    ok = fill_and_sum(Kokkos::DefaultExecutionSpace(), n);
#endif
  }
  Kokkos::finalize();
  std::printf("kokkos-smoke: %s\n", ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}
