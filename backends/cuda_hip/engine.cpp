// The GPU backend's engine (engine.hpp): start-up, each device's set-up at
// its first use, and the device's pool of internal events.
#include "engine.hpp"

#include "host_func/chosen_path.hpp"
#include "peer_access.hpp"
#include "priority.hpp"
#include "settings.hpp"
#include "trace.hpp"

#include <sluice/detail/interop.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::detail {

void prepare_runtime_environment() noexcept {
  // Before the first runtime call, unless the user chose (see the traits): more
  // hardware queues, and kernels loaded when the context starts rather than at
  // their first launch (which can wait for a held stream). settings.cpp
  // declares the traits' variables: value() finds them and does not throw.
  if (api::preferred_hardware_queues > 0 &&
      settings::value(api::hardware_queues_variable) == nullptr)
    setenv(api::hardware_queues_variable, std::to_string(api::preferred_hardware_queues).c_str(),
           0);
  if (*api::module_loading_variable != '\0' &&
      settings::value(api::module_loading_variable) == nullptr)
    setenv(api::module_loading_variable, api::preferred_module_loading, 0);
}

engine_t::engine_t() {
  prepare_runtime_environment();
  int n = 0;
  const api::status s = api::get_device_count(&n);
  if (!s.ok()) {
    if (!api::means_no_device(s.code)) vendor_fail(s, "sluice: counting devices");
    api::clear_last_error();
    n = 0;  // no driver or no device: a valid machine with zero devices
  }
  count = n;
  devices = std::make_unique<device_state[]>(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) devices[static_cast<std::size_t>(i)].id = i;
  peer_access().reset(n);
  trace::start_from_environment();  // SLUICE_TRACE=<path>
}

namespace {
struct startup {
  engine_t* instance = nullptr;
  std::exception_ptr failure;
};
std::atomic<engine_t*> started_engine{nullptr};
}  // namespace

engine_t* engine_if_started() noexcept { return started_engine.load(std::memory_order_acquire); }

engine_t& engine() {
  // Never destroyed: sluice threads and vendor callbacks may run until the process ends.
  static const startup s = [] {
    startup r;
    try {
      r.instance = new engine_t();
      started_engine.store(r.instance, std::memory_order_release);
      // At exit, before the vendor runtime unloads (it registered its own exit
      // work when engine_t() first called it, so this runs first): let the
      // frees that buffers destroyed at the end of main handed to the reaper
      // finish, rather than run into the unloading runtime (a segfault at exit
      // on 2x H200). Bounded: a free may wait for a stream that never ends.
      std::atexit([] { (void)engine().reaper.drain(std::chrono::seconds(2)); });
    } catch (...) {
      r.failure = std::current_exception();
    }
    return r;
  }();
  if (s.instance == nullptr) std::rethrow_exception(s.failure);
  return *s.instance;
}

device_state& engine_t::dev(int id, const char* api_name) {
  if (id < 0 || id >= count) [[unlikely]] {
    if (count == 0)
      fail(errc::invalid_device, api_name, "device id ", id, " is out of range: no ", api::vendor,
           " device is usable on this machine");
    fail(errc::invalid_device, api_name, "device id ", id, " is out of range [0, ", count, ")");
  }
  device_state& d = devices[static_cast<std::size_t>(id)];
  std::call_once(d.ready, [&d] {
    const scoped_device guard(d.id);
    check(api::device_name(d.id, &d.name), "sluice::device: querying device ", d.id);
    check(api::priority_range(&d.range.least, &d.range.greatest),
          "sluice::device: querying the priority range of device ", d.id);
    d.hardware_queues =
        settings::integer(api::hardware_queues_variable, api::default_hardware_queues);
    check(api::pool_create(&d.pool, d.id), "sluice::device: creating the memory pool of device ",
          d.id);
    // The stream pool first, while nothing of sluice's runs on the device: the
    // priorities that sluice::priority names (IND-4, stream_pool.hpp).
    std::vector<int> levels;
    for (const priority p : {priority::normal, priority::high, priority::low}) {
      stream_options o;
      o.priority = p;
      const int native = effective_native_priority(o, d.range, api::default_priority);
      if (std::find(levels.begin(), levels.end(), native) == levels.end()) levels.push_back(native);
    }
    d.natives.fill(d, levels);
    d.alloc_stream =
        d.natives.take_for_life(d, d.range.least, "sluice::device: an internal stream");
    // The device's context is current here (the stream was made in it): copies
    // compare the calling thread's against it (api::device_is_current).
    d.context = api::current_context();
    // Every kernel of sluice's, launched once with nothing to do while nothing
    // of sluice's runs on the device: a runtime that loads a kernel at its
    // first launch (CUDA's lazy loading, the default unless
    // CUDA_MODULE_LOADING=EAGER reached the runtime before it started) may
    // wait there for every stream of the device, held ones too, and the
    // launch then never returns. Each kernel on its own: lazy loading loads a
    // module's kernels one at a time. Where the SM copy kernels cannot run,
    // small peer copies stay on the copy engine; where the gate kernel cannot,
    // host functions take the vendor callback (host_func/enqueue.cpp). Where launches are
    // serialized (a tool, CUDA_LAUNCH_BLOCKING) a launch on a held stream
    // would wait for it: the SM copy kernels stay off, copies take the copy
    // engine.
    int multiprocessors = 0;
    const ::sluice::detail::sm_copy::piece nothing{nullptr, nullptr, 0};
    const ::sluice::detail::sm_copy::strided_piece no_rows{nullptr, nullptr, 0, 0, 0,
                                                           0,       0,       0, 0, 1};
    if (!kernel_launches_serialized() && api::multiprocessor_count(&multiprocessors, d.id).ok() &&
        multiprocessors > 0 && api::sm_copy(nullptr, nullptr, 0, d.alloc_stream, 1).ok() &&
        api::sm_copy_batch(&nothing, 1, d.alloc_stream, 1).ok() &&
        api::sm_copy_strided(&no_rows, 1, d.alloc_stream, 1).ok())
      d.sm_blocks = 4U * static_cast<unsigned>(multiprocessors);
    api::clear_last_error();
    if (!api::max_pitch(&d.max_pitch, d.id).ok()) d.max_pitch = 0;
    api::clear_last_error();
    (void)api::prepare_gate_kernel(d.alloc_stream);
    api::clear_last_error();
    d.initialized.store(true, std::memory_order_release);
  });
  return d;
}

api::event_t engine_t::take_event(device_state& d) {
  {
    std::lock_guard<std::mutex> lock(d.events_m);
    if (!d.events.empty()) {
      const api::event_t e = d.events.back();
      d.events.pop_back();
      return e;
    }
  }
  api::event_t e{};
  const scoped_device guard(d.id);
  check(api::event_create(&e, false, false), "sluice: creating an internal event on device ", d.id);
  return e;
}

void engine_t::give_event(device_state& d, api::event_t e) noexcept {
  try {
    std::lock_guard<std::mutex> lock(d.events_m);
    d.events.push_back(e);  // waits already issued on e keep what they captured (EVT-2)
  } catch (...) {
    (void)api::event_destroy(e);
  }
}

}  // namespace sluice::detail
