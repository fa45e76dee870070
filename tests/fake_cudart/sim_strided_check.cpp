// ctest sim.model.strided: the simulated runtime's strided copies and host registration
// (sim_strided.cpp) against the checks and results CUDA documents for them, without sluice:
// exact bytes moved and the bytes between rows and planes untouched (2-D, 3-D with positions,
// 3-D peer), cudaErrorInvalidPitchValue for a width above a pitch or a pitch above the
// maximum, cudaErrorInvalidValue for too few rows per plane and null pointers, a zero extent
// as a success, registration overlaps and unregistering a pointer that starts no range; copies,
// fills and 2-D footprints that start inside pinned host memory and run past its end refused
// (cudaErrorInvalidValue), one that starts in pageable memory taken.
// Exit 0: every check held; 1: one failed (each named on stderr); 2: not the simulated runtime.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "sim.model.strided: FAILED: %s\n", what);
    ++failures;
  }
}

//! Whether out holds in's region (w x h x d at the pitches and rows given) and `fill` elsewhere.
bool region_is(const std::vector<unsigned char>& out, std::size_t out_pitch, std::size_t out_rows,
               const std::vector<unsigned char>& in, std::size_t in_pitch, std::size_t in_rows,
               std::size_t w, std::size_t h, std::size_t d, unsigned char fill) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t x = i % out_pitch, y = (i / out_pitch) % out_rows,
                      z = i / (out_pitch * out_rows);
    const bool inside = x < w && y < h && z < d;
    const unsigned char want = inside ? in[z * in_pitch * in_rows + y * in_pitch + x] : fill;
    if (out[i] != want) return false;
  }
  return true;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
      std::strstr(prop.name, "simulated") == nullptr) {
    std::fprintf(stderr, "sim.model.strided: not running against the simulated runtime\n");
    return 2;
  }
  cudaStream_t s{};
  cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0);
  std::vector<unsigned char> host(64 * 8 * 3), back(64 * 8 * 3, 0xEE);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 13 + 5);
  void* dev = nullptr;
  cudaMalloc(&dev, 64 * 8 * 3);
  cudaMemsetAsync(dev, 0xAA, 64 * 8 * 3, s);

  // 2-D: 5 rows of 20 bytes, host pitch 64 to device pitch 48, and back to pitch 64.
  expect(cudaMemcpy2DAsync(dev, 48, host.data(), 64, 20, 5, cudaMemcpyDefault, s) == cudaSuccess,
         "a 2-D copy to the device");
  expect(cudaMemcpy2DAsync(back.data(), 64, dev, 48, 20, 5, cudaMemcpyDefault, s) == cudaSuccess,
         "a 2-D copy back");
  cudaStreamSynchronize(s);
  expect(region_is(back, 64, 8 * 3, host, 64, 8 * 3, 20, 5, 1, 0xEE),
         "a 2-D copy moves its rows and nothing between them");

  // 3-D with positions: 3 planes of 4 rows of 10 bytes from (2, 1, 0) of a 64 x 8 host array.
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{host.data(), 64, 64, 8};
  p.srcPos = cudaPos{2, 1, 0};
  p.dstPtr = cudaPitchedPtr{dev, 32, 32, 6};
  p.extent = cudaExtent{10, 4, 3};
  p.kind = cudaMemcpyDefault;
  expect(cudaMemcpy3DAsync(&p, s) == cudaSuccess, "a 3-D copy to the device");
  std::vector<unsigned char> plane(32 * 6 * 3, 0x11);
  cudaMemcpy3DParms q{};
  q.srcPtr = cudaPitchedPtr{dev, 32, 32, 6};
  q.dstPtr = cudaPitchedPtr{plane.data(), 32, 32, 6};
  q.extent = cudaExtent{10, 4, 3};
  expect(cudaMemcpy3DAsync(&q, s) == cudaSuccess, "a 3-D copy back");
  cudaStreamSynchronize(s);
  const std::vector<unsigned char> shifted(host.begin() + 64 + 2, host.end());
  expect(region_is(plane, 32, 6, shifted, 64, 8, 10, 4, 3, 0x11),
         "a 3-D copy from a position moves its planes and nothing between them");

  // The checks.
  expect(cudaMemcpy2DAsync(dev, 8, host.data(), 64, 20, 5, cudaMemcpyDefault, s) ==
             cudaErrorInvalidPitchValue,
         "a width above the destination's pitch is cudaErrorInvalidPitchValue");
  expect(cudaGetLastError() == cudaErrorInvalidPitchValue, "the error is the last error");
  expect(cudaMemcpy2DAsync(dev, 48, host.data(), std::size_t{1} << 31, 20, 1, cudaMemcpyDefault,
                           s) == cudaErrorInvalidPitchValue,
         "a pitch above cudaDevAttrMaxPitch is cudaErrorInvalidPitchValue");
  int max_pitch = 0;
  cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, 0);
  expect(max_pitch == 2147483647, "cudaDevAttrMaxPitch reads 2^31 - 1");
  cudaMemcpy3DParms r = p;
  r.srcPtr.ysize = 3;  // fewer rows per plane than the extent's 4
  expect(cudaMemcpy3DAsync(&r, s) == cudaErrorInvalidValue,
         "too few rows per plane for a 3-D copy is cudaErrorInvalidValue");
  r = p;
  r.dstPtr.ptr = nullptr;
  expect(cudaMemcpy3DAsync(&r, s) == cudaErrorInvalidValue,
         "a null pointer is cudaErrorInvalidValue");
  r.extent = cudaExtent{10, 0, 3};
  expect(cudaMemcpy3DAsync(&r, s) == cudaSuccess, "a zero extent is a success");
  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = cudaPitchedPtr{dev, 32, 32, 6};
  peer.dstPtr = cudaPitchedPtr{plane.data(), 32, 32, 6};
  peer.extent = cudaExtent{10, 4, 1};
  peer.srcDevice = 0;
  peer.dstDevice = 64;
  expect(cudaMemcpy3DPeerAsync(&peer, s) == cudaErrorInvalidDevice,
         "a 3-D peer copy naming no device is cudaErrorInvalidDevice");
  (void)cudaGetLastError();

  // Registration.
  std::vector<unsigned char> mine(8192);
  expect(cudaHostRegister(mine.data(), 4096, cudaHostRegisterPortable) == cudaSuccess,
         "registering a range");
  cudaPointerAttributes a{};
  cudaPointerGetAttributes(&a, mine.data() + 100);
  expect(a.type == cudaMemoryTypeHost, "a registered range is host memory the runtime knows");
  expect(cudaHostRegister(mine.data() + 4000, 200, 0) == cudaErrorHostMemoryAlreadyRegistered,
         "a range meeting a registered one is cudaErrorHostMemoryAlreadyRegistered");
  expect(cudaHostRegister(nullptr, 10, 0) == cudaErrorInvalidValue, "a null range");
  expect(cudaHostUnregister(mine.data() + 1) == cudaErrorHostMemoryNotRegistered,
         "unregistering a pointer that starts no range");
  // A range that starts inside a registration must end in it (seen on an H200: sim.cpp).
  expect(cudaMemcpyAsync(dev, mine.data() + 3000, 1096, cudaMemcpyDefault, s) == cudaSuccess,
         "a copy wholly inside a registration");
  expect(
      cudaMemcpyAsync(dev, mine.data() + 4000, 200, cudaMemcpyDefault, s) == cudaErrorInvalidValue,
      "a copy from inside a registration past its end is cudaErrorInvalidValue");
  expect(
      cudaMemcpyAsync(mine.data() + 4000, dev, 200, cudaMemcpyDefault, s) == cudaErrorInvalidValue,
      "a copy into a registration past its end is cudaErrorInvalidValue");
  expect(cudaMemsetAsync(mine.data() + 4000, 0, 200, s) == cudaErrorInvalidValue,
         "a fill from inside a registration past its end is cudaErrorInvalidValue");
  expect(cudaMemcpy2DAsync(dev, 64, mine.data() + 3968, 64, 32, 3, cudaMemcpyDefault, s) ==
             cudaErrorInvalidValue,
         "a 2-D footprint from inside a registration past its end is cudaErrorInvalidValue");
  expect(cudaMemcpy2DAsync(dev, 64, mine.data() + 3840, 64, 32, 3, cudaMemcpyDefault, s) ==
             cudaSuccess,
         "a 2-D footprint wholly inside a registration");
  void* pinned = nullptr;
  cudaMallocHost(&pinned, 256);
  expect(cudaMemcpyAsync(dev, pinned, 512, cudaMemcpyDefault, s) == cudaErrorInvalidValue,
         "a copy past the end of cudaMallocHost memory is cudaErrorInvalidValue");
  (void)cudaGetLastError();
  cudaStreamSynchronize(s);
  cudaFreeHost(pinned);
  expect(cudaHostUnregister(mine.data()) == cudaSuccess, "unregistering the range");
  cudaPointerGetAttributes(&a, mine.data() + 100);
  expect(a.type == cudaMemoryTypeUnregistered, "an unregistered range is pageable again");
  // Starting in memory the runtime does not know: pageable wherever it ends.
  cudaHostRegister(mine.data() + 4096, 4096, 0);
  expect(cudaMemcpyAsync(dev, mine.data() + 3900, 1000, cudaMemcpyDefault, s) == cudaSuccess,
         "a copy from pageable memory into a registration is pageable");
  cudaHostUnregister(mine.data() + 4096);
  (void)cudaGetLastError();
  cudaFree(dev);
  cudaStreamDestroy(s);
  return failures == 0 ? 0 : 1;
}
