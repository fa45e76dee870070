// fan_out_in: fan-out and fan-in over streams with events.
//
//   producer P: produce the input, record `produced`
//   workers W0, W1, W2: each waits on `produced`, does its own work, records done[w]
//   producer P: waits on done[0..2] (fan-in), then gathers a sample of each result
//
// Each worker copies the input into its own buffer, fills a second buffer with
// its own value and copies that into a third: real sluice work on the device's
// timelines. Timing events at the start and end of each worker's phase, all
// measured from one start event on the same device, give the phases'
// intervals. Two overlap figures are printed:
//   all three at once: the time all three phases were in flight together,
//                      as a percentage of the shortest phase;
//   pairwise minimum:  for each pair, the time both were in flight as a
//                      percentage of the shorter of the two; the smallest pair.
// "In flight" means between the phase's first and last event: a backend that
// runs fewer streams at a time than there are workers (the host backend with
// 2 execution slots per device) interleaves the three, so they are in flight
// together without all executing at the same instant.
#include "example.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

namespace ex = sluice_example;

constexpr std::size_t workers = 3;
constexpr std::size_t sample = 4096;
constexpr unsigned char input_value = 0x5a;

unsigned char worker_value(std::size_t w) { return static_cast<unsigned char>(0x30 + w); }

ex::outcome fan_out_in(const ex::options& o) {
  const std::size_t bytes = o.bytes();
  const sluice::device gpu(0);
  const sluice::stream producer(gpu);
  std::vector<sluice::stream> worker;
  for (std::size_t w = 0; w < workers; ++w) worker.emplace_back(gpu);
  std::printf("device 0 (%s): producer stream P, worker streams W0 W1 W2; %zu MiB per buffer\n",
              gpu.name().c_str(), o.mib);

  sluice::device_buffer<unsigned char> input(gpu, bytes);
  std::vector<sluice::device_buffer<unsigned char>> copied, filled, moved;
  for (std::size_t w = 0; w < workers; ++w) {
    copied.emplace_back(gpu, bytes);
    filled.emplace_back(gpu, bytes);
    moved.emplace_back(gpu, bytes);
  }
  sluice::device_buffer<unsigned char> gathered(gpu, 2 * workers * sample);
  std::vector<ex::memory_range> memory = {{input.data(), bytes},
                                          {gathered.data(), gathered.size()}};
  for (std::size_t w = 0; w < workers; ++w) {
    memory.push_back({copied[w].data(), bytes});
    memory.push_back({filled[w].data(), bytes});
    memory.push_back({moved[w].data(), bytes});
  }
  ex::zero_on_own_stream(gpu, memory);  // set-up, not measured

  sluice::event start = ex::timing_event(gpu);
  sluice::event produced = ex::timing_event(gpu);
  sluice::event gather_begin = ex::timing_event(gpu);
  sluice::event finished = ex::timing_event(gpu);
  std::vector<sluice::event> begin, done;
  for (std::size_t w = 0; w < workers; ++w) {
    begin.push_back(ex::timing_event(gpu));
    done.push_back(ex::timing_event(gpu));
  }

  ex::trace_session trace(o.trace_file);
  start.record(producer);
  {
    const sluice::trace_range range(producer, "produce");
    sluice::fill(producer, input.data(), input_value, bytes);
    produced.record(producer);
  }
  for (std::size_t w = 0; w < workers; ++w) {  // fan-out
    const sluice::stream& s = worker[w];
    s.wait(produced);
    const sluice::trace_range range(s, "worker " + std::to_string(w));
    begin[w].record(s);
    sluice::copy(s, copied[w].data(), input.data(), bytes);
    sluice::fill(s, filled[w].data(), worker_value(w), bytes);
    sluice::copy(s, moved[w].data(), filled[w].data(), bytes);
    done[w].record(s);
  }
  for (std::size_t w = 0; w < workers; ++w) producer.wait(done[w]);  // fan-in
  {
    const sluice::trace_range range(producer, "gather");
    gather_begin.record(producer);
    for (std::size_t w = 0; w < workers; ++w) {
      sluice::copy(producer, gathered.data() + 2 * w * sample, copied[w].data(), sample);
      sluice::copy(producer, gathered.data() + (2 * w + 1) * sample, moved[w].data(), sample);
    }
    finished.record(producer);
  }
  producer.synchronize();
  trace.finish();

  std::vector<ex::interval> phase;
  for (std::size_t w = 0; w < workers; ++w)
    phase.push_back({ex::ms_after(start, begin[w]), ex::ms_after(start, done[w])});
  double shortest = phase[0].length();
  double first_begin = phase[0].begin;
  double last_end = phase[0].end;
  ex::interval_set all = {phase[0]};
  for (std::size_t w = 1; w < workers; ++w) {
    shortest = std::min(shortest, phase[w].length());
    first_begin = std::min(first_begin, phase[w].begin);
    last_end = std::max(last_end, phase[w].end);
    all = ex::intersection(all, {phase[w]});
  }
  const double all_ms = ex::covered(all);
  const double all_percent = shortest > 0 ? 100.0 * all_ms / shortest : 0.0;
  double pair_min = 100.0;
  std::string pair_text;
  for (std::size_t a = 0; a < workers; ++a)
    for (std::size_t b = a + 1; b < workers; ++b) {
      const double both = ex::covered(ex::intersection({phase[a]}, {phase[b]}));
      const double p = ex::percent_of_shorter(both, phase[a].length(), phase[b].length());
      pair_min = std::min(pair_min, p);
      char text[64];
      std::snprintf(text, sizeof text, "%sW%zu x W%zu %.0f%%", pair_text.empty() ? "" : ", ", a, b,
                    p);
      pair_text += text;
    }
  const double produced_ms = ex::ms_after(start, produced);
  std::printf(
      "phases (ms after the start event, from timing events on device 0): produced at "
      "%.2f; W0 %.2f-%.2f, W1 %.2f-%.2f, W2 %.2f-%.2f; gather %.2f-%.2f\n",
      produced_ms, phase[0].begin, phase[0].end, phase[1].begin, phase[1].end, phase[2].begin,
      phase[2].end, ex::ms_after(start, gather_begin), ex::ms_after(start, finished));
  std::printf(
      "fan-out: the workers began %.3f-%.3f ms after `produced`; fan-in: the gather began "
      "%.3f ms after the last worker\n",
      first_begin - produced_ms,
      std::max({phase[0].begin, phase[1].begin, phase[2].begin}) - produced_ms,
      ex::ms_after(start, gather_begin) - last_end);
  std::printf(
      "overlap of the three workers (W0 %.1f ms, W1 %.1f ms, W2 %.1f ms): all three in "
      "flight at once %.0f%% of the shortest phase (%.1f ms); pairwise minimum %.0f%% of "
      "the shorter phase (%s)\n",
      phase[0].length(), phase[1].length(), phase[2].length(), all_percent, all_ms, pair_min,
      pair_text.c_str());

  sluice::pinned_buffer<unsigned char> back(gathered.size());
  sluice::copy(producer, back.data(), gathered.data(), gathered.size());
  producer.synchronize();
  bool ok = true;
  for (std::size_t w = 0; w < workers; ++w)
    for (std::size_t j = 0; j < sample; ++j) {
      const unsigned char got_copy = back[2 * w * sample + j];
      const unsigned char got_fill = back[(2 * w + 1) * sample + j];
      if (got_copy != input_value || got_fill != worker_value(w)) {
        std::printf("check: worker %zu: byte %zu is 0x%02x / 0x%02x, expected 0x%02x / 0x%02x\n", w,
                    j, got_copy, got_fill, input_value, worker_value(w));
        ok = false;
        break;
      }
    }
  for (std::size_t w = 0; w < workers; ++w)
    ok = ex::check_bytes(producer, moved[w].data(), bytes, worker_value(w), "worker result") && ok;
  return {ok, all_percent};
}

}  // namespace

int main(int argc, char** argv) {
  return ex::run(argc, argv,
                 {"sluice-example-fan-out-in",
                  "fan-out from a producer stream to three worker streams and fan-in back, with "
                  "events",
                  1, 32},
                 fan_out_in);
}
