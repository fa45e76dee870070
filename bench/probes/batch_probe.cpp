// sluice-probe-batch: 64 pieces of 16 KiB (a halo exchange) moved at once, on
// ONE device, next to the raw calls, in the same run. Between two GPUs that is
// `sluice bench p2p`'s batch row (target: >= 5x faster than 64 raw
// cudaMemcpyPeerAsync calls); on one device the pieces move within its memory,
// so the times are mostly the calls' own costs, which is what batching saves.
//
//   raw_peer_calls  64 x cudaMemcpyPeerAsync(dst, 0, src, 0, 16 KiB) on a raw stream
//   raw_batch       one cudaMemcpyBatchAsync of the 64 pieces on a raw stream
//   sluice_batch    sluice::copy_peer_batch(s, device 0, device 0, 64 pieces): path
//                   "local_sm" (sluice's SM batch kernel) where kernels launch and the
//                   pieces are small enough, else "local" (the vendor's batched copy);
//                   the path is printed after the row
//   sm_batch        sluice's SM batch kernel called directly (what the direct_sm and
//                   local_sm paths of copy_peer_batch launch): one launch per 64 pieces
//
// Each time: host clock from before the first call to the return of the
// stream's synchronize, so enqueue and completion both count; median and
// minimum of --trials after 20 untimed ones. Every row's destination is
// checked against the source after its trials.
#include <sluice/detail/interop.hpp>
#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <cuda_runtime.h>

#include "../../tests/pattern.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "sluice-probe-batch: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 200;
  std::size_t pieces = 64;
  std::size_t piece_bytes = 16 * 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--trials=", 0) == 0) trials = std::max(1, std::atoi(a.c_str() + 9));
    else if (a.rfind("--pieces=", 0) == 0)
      pieces = std::clamp<std::size_t>(std::strtoull(a.c_str() + 9, nullptr, 10), 1, 4096);
    else if (a.rfind("--kib=", 0) == 0)
      piece_bytes = 1024 * std::clamp<std::size_t>(std::strtoull(a.c_str() + 6, nullptr, 10), 1, 65536);
    else {
      std::fprintf(stderr, "usage: sluice-probe-batch [--trials=N] [--pieces=N] [--kib=K]\n");
      return 2;
    }
  }
  if (sluice::device_count() == 0) {
    std::printf("sluice-probe-batch: no cuda device: nothing measured\n");
    return 77;
  }
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("sluice-probe-batch: %s (device 0), %s\n", prop.name, sluice::backend_version().c_str());
  std::printf("%zu pieces of %zu KiB, every other slot of one buffer; median (min) us from the "
              "first call to the end of synchronize, %d trials\n",
              pieces, piece_bytes / 1024, trials);
  const std::size_t stride = 2 * piece_bytes;  // gaps between the pieces
  const std::size_t bytes = pieces * stride;
  // The raw stream outlives the buffers: freeing a buffer looks at every stream
  // that may have used it, the borrow of this one included.
  struct raw_stream {
    cudaStream_t s = nullptr;
    ~raw_stream() {
      if (s != nullptr) (void)cudaStreamDestroy(s);
    }
  } raw_owner;
  sluice::stream s{sluice::device{0}};
  sluice::device_buffer<unsigned char> src{sluice::device{0}, bytes}, dst{sluice::device{0}, bytes};
  {
    sluice::pinned_buffer<unsigned char> host{bytes};
    for (std::size_t i = 0; i < bytes; ++i) host[i] = sluice::test_data::pattern_byte(i, 5);
    sluice::copy(s, src.data(), host.data(), bytes);
    s.synchronize();
  }
  cudaStream_t raw = nullptr;
  ok(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  raw_owner.s = raw;
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<std::size_t> sizes;
  std::vector<sluice::peer_piece> batch;
  for (std::size_t i = 0; i < pieces; ++i) {
    dsts.push_back(dst.data() + i * stride);
    srcs.push_back(src.data() + i * stride);
    sizes.push_back(piece_bytes);
    batch.push_back({dst.data() + i * stride, src.data() + i * stride, piece_bytes});
  }
  // The SM batch kernel is launched on the raw stream, through a sluice stream borrowed on it.
  std::optional<sluice::stream> on_raw{sluice::borrow(sluice::device{0}, raw)};
  const sluice::detail::sm_batch_kernel_shape kernel =
      sluice::detail::sm_batch_kernel_for_probe(*on_raw);
  const unsigned sm_blocks_per_piece = static_cast<unsigned>(
      std::clamp<std::size_t>(piece_bytes / (kernel.threads * kernel.alignment), 1, 16));

  struct row {
    const char* name;
    std::function<void()> run;  // enqueue and wait
    double median = 0, min = 0;
    bool data_ok = false;
  };
  std::vector<row> rows;
  rows.push_back({"raw_peer_calls", [&] {
                    for (std::size_t i = 0; i < pieces; ++i)
                      ok(cudaMemcpyPeerAsync(dsts[i], 0, srcs[i], 0, piece_bytes, raw),
                         "cudaMemcpyPeerAsync");
                    ok(cudaStreamSynchronize(raw), "cudaStreamSynchronize");
                  }});
  rows.push_back({"raw_batch", [&] {
                    cudaMemcpyAttributes attr{};
                    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
                    attr.srcLocHint.type = cudaMemLocationTypeDevice;
                    attr.dstLocHint.type = cudaMemLocationTypeDevice;
                    std::size_t first = 0;
                    ok(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), pieces, &attr,
                                            &first, 1, raw),
                       "cudaMemcpyBatchAsync");
                    ok(cudaStreamSynchronize(raw), "cudaStreamSynchronize");
                  }});
  sluice::copy_path sluice_path = sluice::copy_path::local;
  rows.push_back({"sluice_batch", [&] {
                    sluice_path = sluice::copy_peer_batch(s, sluice::device{0}, sluice::device{0},
                                                          batch.data(), batch.size());
                    s.synchronize();
                  }});
  // The simulated runtime (tests/fake_cudart) launches no kernels: no SM row there.
  const bool kernels = kernel.kernels_launch;
  if (!kernels) std::printf("(this runtime launches no kernels: no sm_batch row)\n");
  if (kernels)
    rows.push_back({"sm_batch", [&] {
                    for (std::size_t i = 0; i < pieces; i += kernel.batch_pieces) {
                      const auto n = static_cast<unsigned>(
                          std::min<std::size_t>(kernel.batch_pieces, pieces - i));
                      ok(static_cast<cudaError_t>(sluice::detail::launch_sm_batch_for_probe(
                             *on_raw, batch.data() + i, n, sm_blocks_per_piece)),
                         "the SM batch kernel's launch");
                    }
                    ok(cudaStreamSynchronize(raw), "cudaStreamSynchronize");
                  }});
  int status = 0;
  for (row& r : rows) {
    ok(cudaMemsetAsync(dst.data(), 0, bytes, raw), "cudaMemsetAsync");
    ok(cudaStreamSynchronize(raw), "cudaStreamSynchronize");
    std::vector<double> us;
    for (int t = 0; t < 20 + trials; ++t) {
      const auto from = std::chrono::steady_clock::now();
      r.run();
      const auto to = std::chrono::steady_clock::now();
      if (t >= 20) us.push_back(std::chrono::duration<double, std::micro>(to - from).count());
    }
    std::sort(us.begin(), us.end());
    r.median = us[us.size() / 2];
    r.min = us.front();
    sluice::pinned_buffer<unsigned char> a{bytes}, b{bytes};
    sluice::copy(s, a.data(), src.data(), bytes);
    sluice::copy(s, b.data(), dst.data(), bytes);
    s.synchronize();
    r.data_ok = true;
    for (std::size_t i = 0; i < pieces && r.data_ok; ++i)
      r.data_ok = std::memcmp(a.data() + i * stride, b.data() + i * stride, piece_bytes) == 0;
    if (!r.data_ok) status = 1;
  }
  const double base = rows[0].median;
  std::printf("%-16s %12s %12s %18s\n", "row", "median_us", "min_us", "raw_calls/row");
  for (const row& r : rows)
    std::printf("%-16s %12.1f %12.1f %18.2f%s%s%s\n", r.name, r.median, r.min, base / r.median,
                r.data_ok ? "" : "  DATA WRONG",
                std::strcmp(r.name, "sluice_batch") == 0 ? "  path " : "",
                std::strcmp(r.name, "sluice_batch") == 0 ? sluice::to_string(sluice_path) : "");
  on_raw.reset();  // before the native stream it borrows (raw_owner, after the buffers)
  return status;
}
