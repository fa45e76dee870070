// sluice-probe-held-calls: the cases that make and destroy streams while one
// stream is held, and whether a blocked stream creation holds a lock other
// threads need (cases.hpp).
#include "cases.hpp"

namespace held_calls {

results stream_create(probe_env& env) {
  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "stream_create", "cudaStreamCreateWithFlags(NonBlocking)", env.opt.count,
                  create_stream_into(made));
  }
  destroy(made);
  if (!r.blocks.empty()) env.create_block = r.blocks.front().call;
  return {r};
}

results stream_create_priority(probe_env& env) {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "stream_create_priority",
        "cudaStreamCreateWithPriority(NonBlocking,greatest=" + std::to_string(greatest) + ")",
        env.opt.count, [&](int, vendor& v) {
          cudaStream_t s{};
          if (v.call("cudaStreamCreateWithPriority", [&] {
                return cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest);
              }))
            made.push_back(s);
        });
  }
  destroy(made);
  return {r};
}

results stream_create_destroy(probe_env& env) {
  hold h(env);
  return {run_calls(h, env, "stream_create_destroy", "cudaStreamCreateWithFlags+cudaStreamDestroy",
                    env.opt.count, [](int, vendor& v) {
                      cudaStream_t s{};
                      if (v.call("cudaStreamCreateWithFlags", [&] {
                            return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                          }))
                        v.call("cudaStreamDestroy", [&] { return cudaStreamDestroy(s); });
                    })};
}

results stream_destroy(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "stream_destroy", "cudaStreamDestroy(made_before_the_hold)",
                  env.opt.count, destroy_stream_of(streams));
  }
  destroy(streams);
  return {r};
}

//! Streams made before the hold; each, in its turn, waits on an event recorded
//! behind the hold (recorded again behind each renewed hold) and is destroyed
//! with that wait pending.
results stream_destroy_busy(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  cudaEvent_t gate{};
  check(cudaEventCreateWithFlags(&gate, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  phase_result r;
  {
    hold h(env, [&gate](cudaStream_t held) {
      check(cudaEventRecord(gate, held), "cudaEventRecord(behind the hold)");
    });
    r = run_calls(h, env, "stream_destroy_busy",
                  "cudaStreamWaitEvent(event_behind_the_hold)+cudaStreamDestroy", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaStreamWaitEvent",
                               [&] { return cudaStreamWaitEvent(streams[i], gate, 0); }) &&
                        v.call("cudaStreamDestroy", [&] { return cudaStreamDestroy(streams[i]); }))
                      streams[i] = nullptr;
                  });
  }
  destroy(streams);
  (void)cudaEventDestroy(gate);
  return {r};
}
//! Under one hold: 64 streams made, all 64 destroyed, 64 made again. Does the
//! second making block again where the first did (does the driver shrink)?
results stream_recreate(probe_env& env) {
  constexpr int n = 64;
  std::vector<cudaStream_t> first, second;
  results out;
  {
    hold h(env);
    out.push_back(run_calls(h, env, "stream_recreate.create",
                            "cudaStreamCreateWithFlags(NonBlocking)", n,
                            create_stream_into(first)));
    out.push_back(run_calls(h, env, "stream_recreate.destroy", "cudaStreamDestroy(all_of_them)",
                            static_cast<int>(first.size()), destroy_stream_of(first)));
    out.push_back(run_calls(h, env, "stream_recreate.create_again",
                            "cudaStreamCreateWithFlags(NonBlocking)", n,
                            create_stream_into(second)));
  }
  destroy(first);
  destroy(second);
  return out;
}

namespace {

//! Thread A makes the stream that blocked in stream_create (the ones before it
//! made under the same hold); 200 ms later thread B makes 8 calls of one kind
//! on an unrelated stream, under the watchdog. If B blocks, a lock that A holds
//! while it waits is driver-wide. The hold is released at B's first block
//! point (which frees A too) or after B's calls.
phase_result other_thread_while_create_blocks(const probe_env& env, const std::string& kind,
                                              int blocking_create) {
  cudaStream_t unrelated{};
  check(cudaStreamCreateWithFlags(&unrelated, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t event{};
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  void* buffer = nullptr;
  check(cudaMalloc(&buffer, mib), "cudaMalloc");
  std::string calls;
  iteration_fn call_b;
  if (kind == "event_record") {
    calls = "cudaEventRecord(unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaEventRecord", [&] { return cudaEventRecord(event, unrelated); });
    };
  } else if (kind == "stream_query") {
    calls = "cudaStreamQuery(unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaStreamQuery", [&] {
        const cudaError_t q = cudaStreamQuery(unrelated);
        return q == cudaErrorNotReady ? cudaSuccess : q;
      });
    };
  } else {
    calls = "cudaMemsetAsync(1MiB,unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaMemsetAsync", [&] { return cudaMemsetAsync(buffer, 0, mib, unrelated); });
    };
  }

  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    const phase_result before = run_calls(h, env, "lock_during_create.setup", "",
                                          blocking_create - 1, create_stream_into(made));
    std::atomic<bool> a_returned{false};
    clock_type::time_point a_end{};
    cudaStream_t a_stream{};
    cudaError_t a_error = cudaSuccess;
    const auto a_start = clock_type::now();
    std::thread a([&] {
      check(cudaSetDevice(env.opt.device), "cudaSetDevice(thread A)");
      a_error = cudaStreamCreateWithFlags(&a_stream, cudaStreamNonBlocking);
      a_end = clock_type::now();
      a_returned.store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const bool a_blocked = !a_returned.load();
    r = run_calls(h, env, "lock_during_create." + kind, calls, 8, call_b, true);
    h.release();
    const auto released = h.released_at();
    while (!a_returned.load()) {
      if (clock_type::now() - released > release_limit)
        give_up(exit_not_returned, "case=lock_during_create." + kind +
                                       " thread A's cudaStreamCreateWithFlags had not returned "
                                       "10 s after the release: giving up");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    a.join();
    if (a_error == cudaSuccess) made.push_back(a_stream);
    r.notes += " thread_a_create=#" + std::to_string(blocking_create);
    r.notes += " setup_blocked_at=" + joined(before, ",", "none", [](const block_point& b) {
                 return std::to_string(b.call);
               });
    r.notes += std::string(" thread_a_blocked_when_b_started=") + (a_blocked ? "yes" : "NO");
    const double after = ms_between(released, a_end);
    r.notes += after >= 0 ? " thread_a_returned_after_release_ms=" + fmt("%.2f", after)
                          : " thread_a_returned_before_release_after_ms=" +
                                fmt("%.1f", ms_between(a_start, a_end));
    if (a_error != cudaSuccess)
      r.notes += std::string(" thread_a_error=") + cudaGetErrorName(a_error);
  }
  destroy(made);
  (void)cudaStreamDestroy(unrelated);
  (void)cudaEventDestroy(event);
  (void)cudaFree(buffer);
  return r;
}

}  // namespace

results lock_during_create(probe_env& env) {
  if (env.create_block == 0)
    return {skipped("lock_during_create", "stream_create found no block point")};
  results out;
  for (const char* kind : {"event_record", "stream_query", "memset_async"}) {
    if (!out.empty()) fresh_context(env, {env.opt.device});  // (main made the first one)
    out.push_back(other_thread_while_create_blocks(env, kind, env.create_block));
  }
  return out;
}

}  // namespace held_calls
