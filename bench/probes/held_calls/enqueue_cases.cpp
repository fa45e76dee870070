// sluice-probe-held-calls: host functions and device work enqueued behind the
// hold, on other streams and on the held stream itself (cases.hpp).
#include "cases.hpp"

namespace held_calls {
namespace {

void empty_callback(void*) {}

}  // namespace

//! Host functions pending behind the hold on many streams: each stream (made
//! before the hold) waits on an event recorded behind the hold, then gets a
//! cudaLaunchHostFunc. Found through sluice's IND-4 test on an H200: the
//! 57th such call waited for the held stream.
results host_func_many_streams(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  cudaEvent_t behind{};
  check(cudaEventCreateWithFlags(&behind, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  phase_result r;
  {
    hold h(env);
    check(cudaEventRecord(behind, h.stream()), "cudaEventRecord");
    r = run_calls(h, env, "host_func_many_streams",
                  "cudaStreamWaitEvent(event_behind_the_hold)+cudaLaunchHostFunc(stream_made_"
                  "before_the_hold)",
                  env.opt.count, [&](int i, vendor& v) {
                    if (v.call("cudaStreamWaitEvent",
                               [&] { return cudaStreamWaitEvent(streams[i], behind, 0); }))
                      v.call("cudaLaunchHostFunc", [&] {
                        return cudaLaunchHostFunc(streams[i], empty_callback, nullptr);
                      });
                  });
  }
  destroy(streams);
  (void)cudaEventDestroy(behind);
  return {r};
}

//! Host functions pending behind the hold on the held stream itself.
results host_func_held_stream(probe_env& env) {
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_func_held_stream", "cudaLaunchHostFunc(held)", env.opt.count,
                  [&](int, vendor& v) {
                    v.call("cudaLaunchHostFunc",
                           [&] { return cudaLaunchHostFunc(h.stream(), empty_callback, nullptr); });
                  });
  }
  return {r};
}

//! Device work enqueued behind the hold on the held stream itself, one kind
//! per phase: a fill (cudaMemsetAsync), copies between device and pinned
//! memory and within the device. With CUDA_LAUNCH_BLOCKING=1 set this shows
//! which of them the runtime makes wait for the stream.
results enqueue_held_stream(probe_env& env) {
  constexpr std::size_t bytes = 64 * 1024;
  void* device = nullptr;
  void* device2 = nullptr;
  void* pinned = nullptr;
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  check(cudaMalloc(&device2, bytes), "cudaMalloc");
  check(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  results out;
  const std::pair<const char*, cudaMemcpyKind> copies[] = {
      {"cudaMemcpyAsync(device_to_pinned)", cudaMemcpyDeviceToHost},
      {"cudaMemcpyAsync(pinned_to_device)", cudaMemcpyHostToDevice},
      {"cudaMemcpyAsync(device_to_device)", cudaMemcpyDeviceToDevice}};
  {
    hold h(env);
    out.push_back(run_calls(h, env, "enqueue_held_stream", "cudaMemsetAsync(held)", env.opt.count,
                            [&](int, vendor& v) {
                              v.call("cudaMemsetAsync", [&] {
                                return cudaMemsetAsync(device, 1, bytes, h.stream());
                              });
                            }));
  }
  for (const auto& [name, kind] : copies) {
    hold h(env);
    out.push_back(run_calls(h, env, "enqueue_held_stream", name, env.opt.count, [&](int, vendor& v) {
      v.call("cudaMemcpyAsync", [&, kind = kind] {
        void* dst = kind == cudaMemcpyDeviceToHost ? pinned : device;
        const void* src = kind == cudaMemcpyHostToDevice ? pinned : device2;
        return cudaMemcpyAsync(dst, src, bytes, kind, h.stream());
      });
    }));
  }
  (void)cudaFreeHost(pinned);
  (void)cudaFree(device2);
  (void)cudaFree(device);
  return out;
}

}  // namespace held_calls
