// copy_compute: copy/compute overlap with pinned memory and a copy stream.
//
// The input lies in pinned host memory, in N chunks. Stream C uploads chunk
// i+1 into one of two device buffers while stream K computes on chunk i in the
// other:
//
//   C: [wait K done with chunk i-2]  copy chunk i -> in[i % 2]   record copied[i]
//   K: [wait copied[i]]              compute on in[i % 2]         record computed[i]
//
// K waits on C's event per chunk; C waits on K's event from two chunks before
// it overwrites a buffer K may still read. The "compute" is a device copy and a
// fill of the chunk's size (real sluice work on the device's timeline) plus a
// 4 KiB sample of the chunk into a result buffer, which the data check reads.
//
// Timing events around each copy and each compute give the busy intervals of
// each stream (all measured from one start event on the same device); the
// overlap is the time both streams were busy divided by the shorter stream's
// busy time. The first upload and the last compute cannot overlap anything, so
// with N chunks of equal cost the best possible is about (N-1)/N.
#include "example.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace {

namespace ex = sluice_example;

constexpr std::size_t chunks = 16;
constexpr std::size_t sample = 4096;  // bytes of each chunk kept in the result

unsigned char chunk_value(std::size_t i) { return static_cast<unsigned char>(0x40 + i); }

ex::outcome copy_compute(const ex::options& o) {
  const std::size_t bytes = o.bytes();
  const sluice::device gpu(0);
  const sluice::stream c(gpu);  // copies
  const sluice::stream k(gpu);  // compute
  std::printf(
      "device 0 (%s): stream C uploads, stream K computes; %zu chunks of %zu MiB, "
      "double-buffered\n",
      gpu.name().c_str(), chunks, o.mib);

  sluice::pinned_buffer<unsigned char> host(chunks * bytes);
  for (std::size_t i = 0; i < chunks; ++i)
    std::memset(host.data() + i * bytes, chunk_value(i), bytes);
  sluice::device_buffer<unsigned char> in[2] = {{gpu, bytes}, {gpu, bytes}};
  sluice::device_buffer<unsigned char> work(gpu, bytes);
  sluice::device_buffer<unsigned char> scratch(gpu, bytes);
  sluice::device_buffer<unsigned char> result(gpu, chunks * sample);
  ex::zero_on_own_stream(gpu, {{in[0].data(), bytes},
                               {in[1].data(), bytes},
                               {work.data(), bytes},
                               {scratch.data(), bytes},
                               {result.data(), result.size()}});  // set-up, not measured

  sluice::event start = ex::timing_event(gpu);
  std::vector<sluice::event> c_begin, copied, k_begin, computed;
  for (std::size_t i = 0; i < chunks; ++i) {
    c_begin.push_back(ex::timing_event(gpu));
    copied.push_back(ex::timing_event(gpu));
    k_begin.push_back(ex::timing_event(gpu));
    computed.push_back(ex::timing_event(gpu));
  }

  ex::trace_session trace(o.trace_file);
  start.record(c);
  k.wait(start);
  for (std::size_t i = 0; i < chunks; ++i) {
    unsigned char* slot = in[i % 2].data();
    {
      if (i >= 2) c.wait(computed[i - 2]);  // K is done reading this buffer
      const sluice::trace_range range(c, "upload chunk " + std::to_string(i));
      c_begin[i].record(c);
      sluice::copy(c, slot, host.data() + i * bytes, bytes);
      copied[i].record(c);
    }
    {
      k.wait(copied[i]);
      const sluice::trace_range range(k, "compute chunk " + std::to_string(i));
      k_begin[i].record(k);
      sluice::copy(k, work.data(), slot, bytes);
      sluice::fill(k, scratch.data(), static_cast<unsigned char>(~chunk_value(i)), bytes);
      sluice::copy(k, result.data() + i * sample, slot, sample);
      computed[i].record(k);
    }
  }
  k.synchronize();
  c.synchronize();
  trace.finish();

  ex::interval_set copy_busy, compute_busy;
  for (std::size_t i = 0; i < chunks; ++i) {
    copy_busy.push_back({ex::ms_after(start, c_begin[i]), ex::ms_after(start, copied[i])});
    compute_busy.push_back({ex::ms_after(start, k_begin[i]), ex::ms_after(start, computed[i])});
  }
  const auto [copy_ms, compute_ms, both, overlap] = ex::overlap_of(copy_busy, compute_busy);
  std::printf(
      "span (timing events on device 0): first upload began %.2f ms, last compute ended "
      "%.2f ms after the start event\n",
      copy_busy.front().begin, compute_busy.back().end);
  std::printf(
      "overlap of the copy stream (C) and the compute stream (K): %.0f%% of the shorter "
      "busy time (uploads busy %.1f ms, compute busy %.1f ms, both at once %.1f ms; "
      "%zu chunks, best possible about %.0f%%)\n",
      overlap, copy_ms, compute_ms, both, chunks,
      100.0 * static_cast<double>(chunks - 1) / static_cast<double>(chunks));

  // The samples of every chunk, in order, and the last chunk's compute results.
  bool ok =
      ex::check_chunk_samples(k, result.data(), chunks, sample, chunk_value, "result of chunk");
  ok = ex::check_bytes(k, work.data(), bytes, chunk_value(chunks - 1), "last chunk's copy") && ok;
  ok = ex::check_bytes(k, scratch.data(), bytes,
                       static_cast<unsigned char>(~chunk_value(chunks - 1)), "last chunk's fill") &&
       ok;
  return {ok, overlap};
}

}  // namespace

int main(int argc, char** argv) {
  return ex::run(argc, argv,
                 {"sluice-example-copy-compute",
                  "uploads from pinned memory on a copy stream (C) overlapped with compute on "
                  "another stream (K), chunk by chunk; K waits on C's event per chunk",
                  1, 16},
                 copy_compute);
}
