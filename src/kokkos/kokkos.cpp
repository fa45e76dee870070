// sluice::kokkos (include/sluice/kokkos.hpp): the Kokkos instances of sluice
// streams, the host backend's submission, and the Kokkos Tools callbacks that
// put Kokkos kernels on sluice's timeline.
//
// Tools callbacks: Kokkos calls a registered begin callback before it launches
// a kernel and the end callback after, on the launching thread. sluice
// registers its callbacks when this library is loaded, before main and so
// before Kokkos::initialize: at initialize, Kokkos (4.x) asks the registered
// tool for its settings, and sluice's answer "no global fencing" keeps Kokkos
// from fencing every execution space around every kernel, which it does for a
// tool that does not answer (KOK-4). A kernel launched inside submit() is
// shown on the submitting stream's track, by its name, while a trace is
// collected; otherwise a callback costs a thread-local read and a relaxed load.
// A Kokkos Tools library loaded through KOKKOS_TOOLS_LIBS replaces these
// callbacks (docs/kokkos.md).
#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>
#include <sluice/kokkos.hpp>
#include <sluice/trace.hpp>

#if defined(SLUICE_TEST_MUTATIONS)
#include "test_mutation.hpp"
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::kokkos::detail {

namespace {

thread_local const submit_scope* current_scope = nullptr;

// Kernels begun on this thread and not yet ended, with their trace operation.
thread_local std::vector<std::pair<std::uint64_t, sluice::detail::foreign_op*>> open_kernels;
std::atomic<std::uint64_t> next_kernel_id{1};

void begin_kernel(const char* name, std::uint32_t /*device_id*/, std::uint64_t* kernel_id) {
  *kernel_id = next_kernel_id.fetch_add(1, std::memory_order_relaxed);
  const submit_scope* scope = current_scope;
  if (scope == nullptr || !sluice::tracing()) return;
  try {
    if (sluice::detail::foreign_op* op =
            sluice::detail::begin_foreign_op(scope->stream(), "kernel", name))
      open_kernels.emplace_back(*kernel_id, op);
  } catch (...) {  // a callback must not throw: the trace misses this kernel
  }
}

void end_kernel(std::uint64_t kernel_id) {
  for (auto it = open_kernels.rbegin(); it != open_kernels.rend(); ++it)
    if (it->first == kernel_id) {
      sluice::detail::end_foreign_op(it->second);
      open_kernels.erase(std::next(it).base());
      return;
    }
}

#if KOKKOS_VERSION >= 40000
void answer_tool_settings(const std::uint32_t, Kokkos::Tools::Experimental::ToolSettings* s) {
  s->requires_global_fencing = false;  // sluice's callbacks need no fence (KOK-4)
}
#endif

struct callbacks_registrar {
  callbacks_registrar() {
    // Kokkos::initialize may start the vendor runtime before sluice's first
    // call: its settings first (CUDA: kernels loaded eagerly, docs/kokkos.md).
    sluice::detail::prepare_runtime_environment();
    namespace tools = Kokkos::Tools::Experimental;
    tools::set_begin_parallel_for_callback(begin_kernel);
    tools::set_end_parallel_for_callback(end_kernel);
    tools::set_begin_parallel_reduce_callback(begin_kernel);
    tools::set_end_parallel_reduce_callback(end_kernel);
    tools::set_begin_parallel_scan_callback(begin_kernel);
    tools::set_end_parallel_scan_callback(end_kernel);
#if KOKKOS_VERSION >= 40000
    tools::set_request_tool_settings_callback(answer_tool_settings);
#endif
  }
};
const callbacks_registrar registrar;

}  // namespace

submit_scope::submit_scope(stream_ref s) noexcept : stream_(s), outer_(current_scope) {
  current_scope = this;
}
submit_scope::~submit_scope() { current_scope = outer_; }

#if defined(SLUICE_TEST_MUTATIONS)

namespace mutation = sluice::detail::mutation;

bool submit_is_mutated() noexcept {
  static const bool mutated = [] {
    try {
      mutation::configure();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::abort();  // a test run with a misspelt mutation must not pass
    }
    return mutation::is(mutation::kind::unordered) || mutation::is(mutation::kind::waits) ||
           mutation::is(mutation::kind::global_fence) ||
           mutation::is(mutation::kind::lose_exceptions);
  }();
  return mutated;
}

#endif

#if defined(SLUICE_BACKEND_HOST)

namespace {
// One host execution space instance serves every stream; Kokkos's host
// spaces are not safe to launch on from several threads at once.
std::mutex host_space_m;
}  // namespace

void run_on_host(stream_ref s, void (*call)(void*), void* f) {
  const std::lock_guard<std::mutex> lock(host_space_m);
  const submit_scope scope(s);
  call(f);
}

#if defined(SLUICE_TEST_MUTATIONS)
void mutated_submit(stream_ref s, void (*call)(void*, void*), void* f) {
  // Every mutated form runs f on the calling thread, now; only what it waits
  // for first differs.
  const mutation::kind m = mutation::active();
  switch (m) {
    case mutation::kind::unordered: break;  // nothing: outside the stream's order (KOK-1, KOK-3)
    case mutation::kind::global_fence:      // every stream of the device (KOK-4)
      s.device().synchronize();
      break;
    case mutation::kind::waits:            // the stream's work (KOK-2)
    case mutation::kind::lose_exceptions:  // then drops what f throws (KOK-5)
    default: s.synchronize(); break;
  }
  execution_space exec{};
  const std::lock_guard<std::mutex> lock(host_space_m);
  const submit_scope scope(s);
  try {
    call(f, &exec);
  } catch (...) {
    if (m != mutation::kind::lose_exceptions) throw;
  }
}
#endif

#else

namespace {

struct cached_instance {
  execution_space exec;
};

std::mutex instances_m;
std::unordered_map<native_stream_t, std::unique_ptr<cached_instance>>* instances = nullptr;
// Bumped when Kokkos::finalize drops the instances: every thread's last hit is stale then.
std::atomic<unsigned> instances_epoch{1};

}  // namespace

execution_space instance_of(stream_ref s) {
  const native_stream_t n = sluice::native_handle(s);
  thread_local native_stream_t last_native{};
  thread_local cached_instance* last = nullptr;
  thread_local unsigned last_epoch = 0;
  if (last != nullptr && last_native == n &&
      last_epoch == instances_epoch.load(std::memory_order_acquire))
    return last->exec;
  const std::lock_guard<std::mutex> lock(instances_m);
  if (instances == nullptr) {
    instances = new std::unordered_map<native_stream_t, std::unique_ptr<cached_instance>>();
    // Instances must not outlive Kokkos: dropped at finalize, when the device is idle.
    Kokkos::push_finalize_hook([] {
      const std::lock_guard<std::mutex> l(instances_m);
      instances_epoch.fetch_add(1, std::memory_order_acq_rel);
      delete std::exchange(instances, nullptr);
    });
  }
  auto it = instances->find(n);
  if (it == instances->end()) {
    const int kokkos_device = Kokkos::device_id();
    if (s.device().id() != kokkos_device)
      throw error(errc::invalid_argument,
                  "sluice::kokkos::instance: the stream is on device " +
                      std::to_string(s.device().id()) + ", Kokkos runs on device " +
                      std::to_string(kokkos_device),
                  0, "sluice::kokkos::instance");
    it = instances
             ->emplace(n, std::make_unique<cached_instance>(cached_instance{execution_space(n)}))
             .first;
  }
  last_native = n;
  last = it->second.get();
  last_epoch = instances_epoch.load(std::memory_order_relaxed);
  return last->exec;
}

#if defined(SLUICE_TEST_MUTATIONS)
void mutated_submit(stream_ref s, void (*call)(void*, void*), void* f) {
  const mutation::kind m = mutation::active();
  switch (m) {
    case mutation::kind::unordered: {  // on Kokkos's default instance, not on s (KOK-1, KOK-3)
      execution_space exec{};
      call(f, &exec);
      return;
    }
    case mutation::kind::global_fence:  // every Kokkos instance and stream of the device (KOK-4)
      Kokkos::fence();
      s.device().synchronize();
      break;
    case mutation::kind::waits:  // waits for the stream's work (KOK-2)
      s.synchronize();
      break;
    case mutation::kind::lose_exceptions:
    default: break;
  }
  execution_space exec = instance_of(s);
  const submit_scope scope(s);
  try {
    call(f, &exec);
  } catch (...) {
    if (m != mutation::kind::lose_exceptions) throw;
  }
}
#endif

#endif

}  // namespace sluice::kokkos::detail
