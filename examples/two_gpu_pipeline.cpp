// two_gpu_pipeline: a two-device pipeline with sluice::copy_peer.
//
//   device 0, stream P: produce chunk i into src[i % 2]                  record produced[i]
//   device 1, stream T: wait produced[i]; copy_peer src -> dst[i % 2]   record moved[i]
//   device 1, stream K: wait moved[i]; consume dst[i % 2]                record consumed[i]
//
// P waits on moved[i-2] before it overwrites a source buffer T may still read,
// and T waits on consumed[i-2] before it overwrites a destination buffer K may
// still read, so with two buffers per side device 0 produces chunk i+1 while
// device 1 consumes chunk i-1 and the peer copy of chunk i runs in between.
// The first two produces and the last two consumes overlap nothing, so with N
// chunks of equal cost the best possible overlap is about (N-2)/N.
// Peer access is enabled when sluice::link() says it is possible; copy_peer
// works either way and reports the path it took.
//
// Timing: events of two devices cannot be compared with elapsed(), so each
// phase is stamped by host functions enqueued at its start and end on its own
// stream (std::chrono::steady_clock, one clock for both devices). A host
// function runs after the work before it and holds the work after it, so the
// stamps bound the phase; they add the latency of starting a host function.
#include "example.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

namespace {

namespace ex = sluice_example;

using clock_type = std::chrono::steady_clock;

constexpr std::size_t chunks = 16;
constexpr std::size_t sample = 4096;

unsigned char chunk_value(std::size_t i) { return static_cast<unsigned char>(0x60 + i); }

//! Enqueues a host function on s that stores the time it runs in *t.
void stamp(sluice::stream_ref s, clock_type::time_point* t) {
  s.host_func([t] { *t = clock_type::now(); });
}

ex::outcome two_gpu_pipeline(const ex::options& o) {
  const std::size_t bytes = o.bytes();
  const sluice::device d0(0);
  const sluice::device d1(1);
  const sluice::link_info l = sluice::link(d1, d0);
  std::printf("devices: 0 (%s) produces, 1 (%s) consumes; link 1 -> 0: %s, peer access %s\n",
              d0.name().c_str(), d1.name().c_str(), sluice::to_string(l.kind),
              l.peer_access_possible ? "possible" : "not possible");
  if (l.peer_access_possible) {
    try {
      sluice::enable_peer_access(d1, d0);  // T runs on device 1 and reads device 0's memory
      sluice::enable_peer_access(d0, d1);
      std::printf("peer access enabled both ways\n");
    } catch (const sluice::error& e) {
      if (e.code() != sluice::errc::peer_access_unavailable) throw;
      std::printf("peer access could not be enabled (%s): copy_peer stages through the host\n",
                  e.what());
    }
  }
  const sluice::stream p(d0);  // producer
  const sluice::stream t(d1);  // peer copies
  const sluice::stream k(d1);  // consumer
  std::printf("%zu chunks of %zu MiB, two buffers on each device\n", chunks, o.mib);

  sluice::device_buffer<unsigned char> src[2] = {{d0, bytes}, {d0, bytes}};
  sluice::device_buffer<unsigned char> dst[2] = {{d1, bytes}, {d1, bytes}};
  sluice::device_buffer<unsigned char> produce_work(d0, bytes);
  sluice::device_buffer<unsigned char> consume_work(d1, bytes);
  sluice::device_buffer<unsigned char> result(d1, chunks * sample);
  // Set-up, not measured.
  ex::zero_on_own_stream(
      d0, {{src[0].data(), bytes}, {src[1].data(), bytes}, {produce_work.data(), bytes}});
  ex::zero_on_own_stream(d1, {{dst[0].data(), bytes},
                              {dst[1].data(), bytes},
                              {consume_work.data(), bytes},
                              {result.data(), result.size()}});

  std::vector<sluice::event> produced, moved, consumed;
  for (std::size_t i = 0; i < chunks; ++i) {
    produced.emplace_back(d0);
    moved.emplace_back(d1);
    consumed.emplace_back(d1);
  }
  clock_type::time_point start;
  std::vector<clock_type::time_point> p_begin(chunks), p_end(chunks), k_begin(chunks),
      k_end(chunks);
  std::map<sluice::copy_path, std::size_t> paths;

  ex::trace_session trace(o.trace_file);
  stamp(p, &start);
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t b = i % 2;
    {
      if (i >= 2) p.wait(moved[i - 2]);  // T has read this source buffer
      const sluice::trace_range range(p, "produce chunk " + std::to_string(i));
      stamp(p, &p_begin[i]);
      sluice::fill(p, produce_work.data(), chunk_value(i), bytes);
      sluice::copy(p, src[b].data(), produce_work.data(), bytes);
      stamp(p, &p_end[i]);
      produced[i].record(p);
    }
    {
      t.wait(produced[i]);
      if (i >= 2) t.wait(consumed[i - 2]);  // K has read this destination buffer
      const sluice::trace_range range(t, "copy_peer chunk " + std::to_string(i));
      ++paths[sluice::copy_peer(t, dst[b].data(), d1, src[b].data(), d0, bytes)];
      moved[i].record(t);
    }
    {
      k.wait(moved[i]);
      const sluice::trace_range range(k, "consume chunk " + std::to_string(i));
      stamp(k, &k_begin[i]);
      sluice::copy(k, consume_work.data(), dst[b].data(), bytes);
      sluice::fill(k, dst[b].data(), 0, bytes);  // "consumed": the buffer is cleared for reuse
      sluice::copy(k, result.data() + i * sample, consume_work.data(), sample);
      stamp(k, &k_end[i]);
      consumed[i].record(k);
    }
  }
  k.synchronize();
  t.synchronize();
  p.synchronize();
  trace.finish();

  std::printf("copy_peer paths:");
  for (const auto& [path, n] : paths) std::printf(" %s x%zu", sluice::to_string(path), n);
  std::printf("\n");

  auto ms = [&](clock_type::time_point x) {
    return std::chrono::duration<double, std::milli>(x - start).count();
  };
  ex::interval_set producer_busy, consumer_busy;
  for (std::size_t i = 0; i < chunks; ++i) {
    producer_busy.push_back({ms(p_begin[i]), ms(p_end[i])});
    consumer_busy.push_back({ms(k_begin[i]), ms(k_end[i])});
  }
  const auto [producer_ms, consumer_ms, both, overlap] =
      ex::overlap_of(producer_busy, consumer_busy);
  std::printf(
      "span (host steady_clock stamps from host functions on each stream): first "
      "produce began %.2f ms, last consume ended %.2f ms after the start stamp\n",
      producer_busy.front().begin, consumer_busy.back().end);
  std::printf(
      "overlap of the producer (device 0, stream P) and the consumer (device 1, stream K): "
      "%.0f%% of the shorter busy time (producer busy %.1f ms, consumer busy %.1f ms, both "
      "at once %.1f ms; %zu chunks, best possible about %.0f%%; host-clock stamps, not device "
      "events)\n",
      overlap, producer_ms, consumer_ms, both, chunks,
      100.0 * static_cast<double>(chunks - 2) / static_cast<double>(chunks));

  bool ok =
      ex::check_chunk_samples(k, result.data(), chunks, sample, chunk_value, "device 1's chunk");
  ok = ex::check_bytes(k, consume_work.data(), bytes, chunk_value(chunks - 1),
                       "last chunk on device 1") &&
       ok;
  return {ok, overlap};
}

}  // namespace

int main(int argc, char** argv) {
  return ex::run(argc, argv,
                 {"sluice-example-two-gpu-pipeline",
                  "device 0 produces chunks, copy_peer moves them to device 1, which consumes "
                  "them; pipelined with events",
                  2, 16},
                 two_gpu_pipeline);
}
