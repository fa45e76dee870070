// dual_pipe: the forward pass of one model chunk overlapped with the backward
// pass of another, on two streams of one device (the DualPipe pattern).
//
//   stream F (normal priority): forward of chunk 1   fill input, then one copy per layer
//   stream B (high priority):   backward of chunk 0  fill output gradient, one copy per layer
//   B waits on F's "forward done" event, then the update reads both results.
//
// The fills and copies stand in for the layers' kernels: they are real sluice
// work that the backend runs on the device's timelines. Timing events around
// each phase, all measured from one start event (same device, so elapsed()
// applies), give the two phases' intervals; the overlap is the time both ran
// divided by the shorter phase.
#include "example.hpp"

#include <cstdio>
#include <optional>
#include <vector>

namespace {

namespace ex = sluice_example;

constexpr std::size_t layers = 4;

ex::outcome dual_pipe(const ex::options& o) {
  const std::size_t bytes = o.bytes();
  const sluice::device gpu(0);
  const sluice::stream fwd(gpu, {sluice::priority::normal, std::nullopt});
  const sluice::stream bwd(gpu, {sluice::priority::high, std::nullopt});
  std::printf(
      "device 0 (%s): stream F (forward) priority %s (native %d), "
      "stream B (backward) priority %s (native %d); %zu layers, %zu MiB per buffer\n",
      gpu.name().c_str(), ex::to_string(fwd.priority()), fwd.native_priority(),
      ex::to_string(bwd.priority()), bwd.native_priority(), layers, o.mib);

  // act[l]: chunk 1's activations entering layer l; grad[l]: chunk 0's gradient
  // leaving layer l (backward runs from grad[layers] down to grad[0]).
  std::vector<sluice::device_buffer<unsigned char>> act;
  std::vector<sluice::device_buffer<unsigned char>> grad;
  for (std::size_t l = 0; l <= layers; ++l) {
    act.emplace_back(gpu, bytes);
    grad.emplace_back(gpu, bytes);
  }
  sluice::device_buffer<unsigned char> update(gpu, bytes);

  std::vector<ex::memory_range> memory = {{update.data(), bytes}};
  for (std::size_t l = 0; l <= layers; ++l) {
    memory.push_back({act[l].data(), bytes});
    memory.push_back({grad[l].data(), bytes});
  }
  ex::zero_on_own_stream(gpu, memory);  // set-up, not measured

  sluice::event start = ex::timing_event(gpu);
  sluice::event f_begin = ex::timing_event(gpu);
  sluice::event f_end = ex::timing_event(gpu);
  sluice::event b_begin = ex::timing_event(gpu);
  sluice::event b_end = ex::timing_event(gpu);
  sluice::event met = ex::timing_event(gpu);

  ex::trace_session trace(o.trace_file);
  start.record(fwd);
  bwd.wait(start);  // B's timestamps come after the common start
  {
    const sluice::trace_range range(fwd, "forward, chunk 1");
    f_begin.record(fwd);
    sluice::fill(fwd, act[0].data(), 0x11, bytes);  // chunk 1's input arrives
    for (std::size_t l = 0; l < layers; ++l)
      sluice::copy(fwd, act[l + 1].data(), act[l].data(), bytes);
    f_end.record(fwd);
  }
  {
    const sluice::trace_range range(bwd, "backward, chunk 0");
    b_begin.record(bwd);
    sluice::fill(bwd, grad[layers].data(), 0x22, bytes);  // chunk 0's loss gradient
    for (std::size_t l = layers; l > 0; --l)
      sluice::copy(bwd, grad[l - 1].data(), grad[l].data(), bytes);
    b_end.record(bwd);
  }
  // The two pipes meet: the update needs chunk 1's forward output and chunk 0's
  // input gradient, so B waits for F's event (F never waits for B).
  bwd.wait(f_end);
  {
    const sluice::trace_range range(bwd, "meet: update");
    sluice::copy(bwd, update.data(), act[layers].data(), bytes / 2);
    sluice::copy(bwd, update.data() + bytes / 2, grad[0].data(), bytes - bytes / 2);
    met.record(bwd);
  }
  bwd.synchronize();
  fwd.synchronize();
  trace.finish();

  const ex::interval f{ex::ms_after(start, f_begin), ex::ms_after(start, f_end)};
  const ex::interval b{ex::ms_after(start, b_begin), ex::ms_after(start, b_end)};
  const double both = ex::covered(ex::intersection({f}, {b}));
  const double overlap = ex::percent_of_shorter(both, f.length(), b.length());
  std::printf(
      "phases (ms after the start event, from timing events on device 0): "
      "forward %.2f-%.2f, backward %.2f-%.2f, update done at %.2f\n",
      f.begin, f.end, b.begin, b.end, ex::ms_after(start, met));
  std::printf(
      "overlap of forward (stream F) and backward (stream B): %.0f%% of the shorter phase "
      "(forward %.1f ms, backward %.1f ms, both at once %.1f ms)\n",
      overlap, f.length(), b.length(), both);

  bool ok = ex::check_bytes(bwd, act[layers].data(), bytes, 0x11, "forward output");
  ok = ex::check_bytes(bwd, grad[0].data(), bytes, 0x22, "backward output") && ok;
  ok = ex::check_bytes(bwd, update.data(), bytes / 2, 0x11, "update, forward half") && ok;
  ok = ex::check_bytes(bwd, update.data() + bytes / 2, bytes - bytes / 2, 0x22,
                       "update, backward half") &&
       ok;
  return {ok, overlap};
}

}  // namespace

int main(int argc, char** argv) {
  return ex::run(argc, argv,
                 {"sluice-example-dual-pipe",
                  "forward of chunk 1 (stream F) overlapped with backward of chunk 0 (stream B, "
                  "high priority) on one device; B waits on F's event at the end",
                  1, 32},
                 dual_pipe);
}
