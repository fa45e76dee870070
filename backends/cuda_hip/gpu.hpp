// The GPU backend (sluice::cuda and sluice::hip), all of its internal state:
// one implementation written against a vendor API traits type, `api`
// (cuda_api.hpp / hip_api.hpp; docs/design.md has the long form). The backend's
// own files include only the headers they use; this one is for code outside
// the backend that reaches into it (tests/unit/staging_test.cpp).
//
//   vendor.hpp           the vendor API of this build, its errors, scoped_device
//   engine.hpp           devices, the stream-state pool, sluice's threads
//   stream_pool.hpp      vendor streams made ahead of need (IND-4)
//   mapped_word.hpp      host-mapped words behind flags and host-function gates
//   stream_state.hpp     a stream: its state, handles, host functions (host_func/)
//   event_state.hpp      an event
//   flag_state.hpp       a flag
//   memory_state.hpp     a device or pinned allocation
//   peer_copy.hpp        the SM copy kernel's limits, the staged pipeline
//   trace/gpu_trace.hpp  what streams and events keep for the tracer; traced_op
//   enqueue_scope.hpp    around each enqueue: batch end, current device, traced_op
//   trace/tracer.hpp     the tracer inside, with trace/trace_clock.hpp (trace/
//                        only; not included here)
#pragma once

#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "event_state.hpp"
#include "flag_state.hpp"
#include "mapped_word.hpp"
#include "memory_state.hpp"
#include "peer_copy.hpp"
#include "stream_pool.hpp"
#include "stream_state.hpp"
#include "trace/gpu_trace.hpp"
#include "vendor.hpp"
