// The cases of sluice-probe-held-calls, by the family of calls they make: each
// makes what it needs before the hold, holds, runs its calls, and cleans up
// once the hold is gone. probe.cpp runs them in its order.
#pragma once

#include "harness.hpp"

namespace held_calls {

// Streams (stream_cases.cpp).
results stream_create(probe_env& env);  // sets env.create_block
results stream_create_priority(probe_env& env);
results stream_create_destroy(probe_env& env);
results stream_destroy(probe_env& env);
results stream_destroy_busy(probe_env& env);
results stream_recreate(probe_env& env);
results lock_during_create(probe_env& env);  // needs stream_create's block point

// Events (event_cases.cpp).
results event_create(probe_env& env);
results event_create_timing(probe_env& env);
results event_destroy(probe_env& env);
results event_record_wait(probe_env& env);

// Host functions and device work enqueued behind the hold (enqueue_cases.cpp).
results host_func_many_streams(probe_env& env);
results host_func_held_stream(probe_env& env);
results enqueue_held_stream(probe_env& env);

// Allocations, memory pools and IPC handles (memory_cases.cpp).
results host_alloc(probe_env& env);
results host_free(probe_env& env);
results malloc_case(probe_env& env);
results free_case(probe_env& env);
results pool(probe_env& env);
results malloc_async(probe_env& env);
results ipc(probe_env& env);

// Peer access (peer_case.cpp).
results peer(probe_env& env);

}  // namespace held_calls
