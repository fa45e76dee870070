// sluice-probe-held-calls: allocations (pinned, device, from pools, stream
// ordered) and IPC handles while one stream is held (cases.hpp).
#include "cases.hpp"

namespace held_calls {

results host_alloc(probe_env& env) {
  std::vector<void*> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_alloc", "cudaHostAlloc(4KiB,Mapped|Portable)", env.opt.count,
                  [&](int, vendor& v) {
                    void* p = nullptr;
                    if (v.call("cudaHostAlloc", [&] {
                          return cudaHostAlloc(&p, 4096,
                                               cudaHostAllocMapped | cudaHostAllocPortable);
                        }))
                      made.push_back(p);
                  });
  }
  free_host(made);
  return {r};
}

results host_free(probe_env& env) {
  std::vector<void*> blocks(static_cast<std::size_t>(env.opt.count));
  for (auto& p : blocks)
    check(cudaHostAlloc(&p, 4096, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_free", "cudaFreeHost(4KiB_made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaFreeHost", [&] { return cudaFreeHost(blocks[i]); }))
                      blocks[i] = nullptr;
                  });
  }
  free_host(blocks);
  return {r};
}

results malloc_case(probe_env& env) {
  std::vector<void*> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "malloc", "cudaMalloc(1MiB)", env.opt.count, [&](int, vendor& v) {
      void* p = nullptr;
      if (v.call("cudaMalloc", [&] { return cudaMalloc(&p, mib); })) made.push_back(p);
    });
  }
  free_device(made);
  return {r};
}

results free_case(probe_env& env) {
  std::vector<void*> blocks = make_device_blocks(env.opt.count, mib);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "free", "cudaFree(1MiB_made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaFree", [&] { return cudaFree(blocks[i]); }))
                      blocks[i] = nullptr;
                  });
  }
  free_device(blocks);
  return {r};
}

//! A memory pool made, used once on a stream that is not held, and destroyed,
//! per call.
results pool(probe_env& env) {
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = env.opt.device;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "pool",
                  "cudaMemPoolCreate+cudaMallocFromPoolAsync(1MiB,other_stream)+cudaFreeAsync+"
                  "cudaMemPoolDestroy",
                  env.opt.count, [&](int, vendor& v) {
                    cudaMemPool_t p{};
                    if (!v.call("cudaMemPoolCreate", [&] { return cudaMemPoolCreate(&p, &props); }))
                      return;
                    void* block = nullptr;
                    if (v.call("cudaMallocFromPoolAsync",
                               [&] { return cudaMallocFromPoolAsync(&block, mib, p, s); }))
                      v.call("cudaFreeAsync", [&] { return cudaFreeAsync(block, s); });
                    v.call("cudaMemPoolDestroy", [&] { return cudaMemPoolDestroy(p); });
                  });
  }
  (void)cudaStreamDestroy(s);
  return {r};
}

results malloc_async(probe_env& env) {
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "malloc_async", "cudaMallocAsync(1MiB,other_stream)+cudaFreeAsync",
                  env.opt.count, [&](int, vendor& v) {
                    void* block = nullptr;
                    if (v.call("cudaMallocAsync", [&] { return cudaMallocAsync(&block, mib, s); }))
                      v.call("cudaFreeAsync", [&] { return cudaFreeAsync(block, s); });
                  });
  }
  (void)cudaStreamDestroy(s);
  return {r};
}

//! IPC handles of a cudaMalloc block and of an interprocess event, each made
//! before the hold (a new block and event per call).
results ipc(probe_env& env) {
  std::vector<void*> blocks = make_device_blocks(env.opt.count, mib);
  std::vector<cudaEvent_t> events =
      make_events(env.opt.count, cudaEventInterprocess | cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "ipc", "cudaIpcGetMemHandle(1MiB)+cudaIpcGetEventHandle(Interprocess)",
        env.opt.count, [&](int i, vendor& v) {
          cudaIpcMemHandle_t mh{};
          cudaIpcEventHandle_t eh{};
          v.call("cudaIpcGetMemHandle", [&] { return cudaIpcGetMemHandle(&mh, blocks[i]); });
          v.call("cudaIpcGetEventHandle", [&] { return cudaIpcGetEventHandle(&eh, events[i]); });
        });
  }
  free_device(blocks);
  destroy(events);
  return {r};
}

}  // namespace held_calls
