// The GPU backend: start-up, errors, devices, the stream-state pool, sluice's
// own threads and the host-mapped words behind flags and host-function gates.
#include "backend_rules.hpp"
#include "engine.hpp"
#include "environment.hpp"
#include "host_functions.hpp"
#include "mapped_word.hpp"
#include "peer_access.hpp"
#include "peer_copy.hpp"
#include "priority.hpp"
#include "stream_state.hpp"
#include "trace.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/version.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sluice {
namespace detail {

// --- errors ------------------------------------------------------------------

void vendor_fail(api::status s, const std::string& context) {
  bool sticky = false;
  const errc code = api::classify(s.code, &sticky);
  // The runtime keeps the error as the thread's last error; a recoverable one
  // must not surface again at an unrelated later call (ERR-3).
  if (!sticky) api::clear_last_error();
  std::string message = context;
  message += ": ";
  message += s.api;
  message += " failed: ";
  message += api::error_string(s.code);
  message += " (";
  message += api::error_name(s.code);
  message += ", ";
  message += std::to_string(static_cast<int>(s.code));
  message += ")";
  if (sticky) message += "; the device context is unusable, restart the process";
  throw error(code, message, static_cast<int>(s.code), s.api, sticky);
}

scoped_device::scoped_device(int d) {
  int current = 0;
  check(api::get_device(&current), "sluice: reading the current device");
  if (current != d) {
    check(api::set_device(d), "sluice: selecting device ", d);
    previous_ = current;
  }
}

scoped_device::~scoped_device() {
  if (previous_ >= 0) (void)api::set_device(previous_);
}

// --- sluice threads -------------------------------------------------------------

void worker_pool::submit(std::function<void()> f) {
  bool spawn = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(std::move(f));
    if (idle_ < static_cast<int>(queue_.size())) {
      spawn = true;
      ++idle_;  // the new thread starts idle
    }
  }
  // A function that blocks must never keep another one from running (HOST-2):
  // every queued function finds an idle thread or gets a new one.
  if (spawn)
    std::thread([this] { thread_main(); }).detach();
  else
    cv_.notify_one();
}

void worker_pool::thread_main() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [this] { return !queue_.empty(); });
    auto f = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    ++running_;
    lock.unlock();
    f();  // never throws: callers wrap their work
    f = nullptr;
    lock.lock();
    ++idle_;
    if (--running_ == 0 && queue_.empty()) idle_cv_.notify_all();
  }
}

bool worker_pool::drain(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(m_);
  return idle_cv_.wait_for(lock, limit, [this] { return queue_.empty() && running_ == 0; });
}

// --- host-mapped words -------------------------------------------------------------

namespace {

struct word_slab {
  static constexpr std::size_t words_per_chunk = 512;  // 4 KiB: one page per pinned allocation
  std::mutex m;
  std::vector<word> free_words;
};

word_slab& slab() {
  static auto* s = new word_slab();  // never destroyed: words may be in use at exit
  return *s;
}

}  // namespace

word allocate_word() {
  auto& s = slab();
  std::lock_guard<std::mutex> lock(s.m);
  if (s.free_words.empty()) {
    (void)engine();  // the runtime's environment before its first call (a flag may come first)
    void* host = nullptr;
    check(api::host_alloc(&host, word_slab::words_per_chunk * sizeof(std::uint64_t)),
          "sluice::flag: allocating host-mapped memory");
    void* device = nullptr;
    check(api::host_device_pointer(&device, host), "sluice::flag: mapping host memory");
    auto* h = static_cast<std::atomic<std::uint64_t>*>(host);
    auto* d = static_cast<std::uint64_t*>(device);
    for (std::size_t i = word_slab::words_per_chunk; i-- > 0;) {
      new (&h[i]) std::atomic<std::uint64_t>(0);
      s.free_words.push_back(word{&h[i], &d[i]});
    }
  }
  const word w = s.free_words.back();
  s.free_words.pop_back();
  // A recycled word keeps its last value (a released flag's 1, say). Every
  // word starts at 0: a new stream's host-function gate reused a flag's word
  // whose value was already past its first ticket, and the stream ran on
  // before its first host function returned (HOST-1; found against the
  // simulated runtime, tests/fake_cudart).
  w.host->store(0, std::memory_order_relaxed);
  return w;
}

void free_word(word w) noexcept {
  auto& s = slab();
  std::lock_guard<std::mutex> lock(s.m);
  s.free_words.push_back(w);  // vector growth failing here ends the process (noexcept)
}

// --- the engine ----------------------------------------------------------------------

void prepare_runtime_environment() noexcept {
  // Before the first runtime call, unless the user chose (see the traits): more
  // hardware queues, and kernels loaded when the context starts rather than at
  // their first launch (which can wait for a held stream).
  if (api::preferred_hardware_queues > 0 && std::getenv(api::hardware_queues_variable) == nullptr)
    setenv(api::hardware_queues_variable, std::to_string(api::preferred_hardware_queues).c_str(),
           0);
  if (*api::module_loading_variable != '\0' && std::getenv(api::module_loading_variable) == nullptr)
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
    d.hardware_queues = integer_from_environment(api::hardware_queues_variable,
                                                 api::default_hardware_queues, 1, 128);
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
    // host functions take the vendor callback (stream.cpp). Where launches are
    // serialized (a tool, CUDA_LAUNCH_BLOCKING) a launch on a held stream
    // would wait for it: the SM copy kernels stay off, copies take the copy
    // engine.
    int multiprocessors = 0;
    const ::sluice::detail::sm_copy::piece nothing{nullptr, nullptr, 0};
    if (!kernel_launches_serialized() &&
        api::multiprocessor_count(&multiprocessors, d.id).ok() && multiprocessors > 0 &&
        api::sm_copy(nullptr, nullptr, 0, d.alloc_stream, 1).ok() &&
        api::sm_copy_batch(&nothing, 1, d.alloc_stream, 1).ok())
      d.sm_blocks = 4U * static_cast<unsigned>(multiprocessors);
    api::clear_last_error();
    (void)api::prepare_gate_kernel(d.alloc_stream);
    api::clear_last_error();
    d.initialized.store(true, std::memory_order_release);
  });
  return d;
}

stream_state* engine_t::new_stream(device_state& d, int native_priority) {
  // The vendor stream first: it may fail (errc::not_ready, stream_pool.hpp).
  const native_stream n = d.natives.take(d, native_priority, "sluice::stream");
  try {
    return adopt(d, n, native_priority, false);
  } catch (...) {
    d.natives.give(n);
    throw;
  }
}

stream_state* engine_t::new_borrowed_stream(device_state& d, api::stream_t native,
                                            int native_priority) {
  // A position event of its own: the vendor stream is the borrower's, not the pool's.
  const api::event_t position = take_event(d);
  try {
    return adopt(d, native_stream{native, position, native_priority, 0}, native_priority, true);
  } catch (...) {
    give_event(d, position);
    throw;
  }
}

stream_state* engine_t::adopt(device_state& d, const native_stream& n, int native_priority,
                              bool borrowed) {
  stream_state* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_m);
    s = free_states;
    if (s != nullptr) free_states = s->pool_next;
  }
  if (s == nullptr) {
    // Pooled, never freed: a stale stream_ref can still read its generation.
    auto fresh = std::make_unique<stream_state>();
    fresh->gate = allocate_word();
    fresh->signal = allocate_word();
    s = fresh.release();
  }
  s->native = n.stream;
  s->position = n.position;
  s->queue = n.queue;
  s->pool_counted = true;
  s->pool_next = nullptr;
  s->open_batch.store(nullptr, std::memory_order_relaxed);
  // A borrowed stream's owner enqueues work sluice does not see: host
  // functions are never batched on it (as after native_handle()).
  s->native_escaped.store(borrowed, std::memory_order_relaxed);
  s->borrowed = borrowed;
  s->device = d.id;
  s->context = d.context;
  s->native_priority = native_priority;
  s->trace.restart();
  s->refs.reset_to_one();  // the owning handle
  try {
    std::lock_guard<std::mutex> lock(d.streams_m);
    d.streams.push_back(s);
  } catch (...) {
    // Back to the free list as it came; the caller keeps n's handles.
    s->native = {};
    s->position = {};
    std::lock_guard<std::mutex> lock(pool_m);
    s->pool_next = free_states;
    free_states = s;
    throw;
  }
  return s;
}

void stream_state::release() noexcept {
  if (refs.drop()) engine().recycle(this);
}

void engine_t::recycle(stream_state* s) noexcept {
  // Nothing is lost: failures nobody asked about are reported here.
  s->failures.print_unreported(s->device);
  auto& d = devices[static_cast<std::size_t>(s->device)];
  {
    std::lock_guard<std::mutex> lock(d.streams_m);
    auto& v = d.streams;
    for (auto& x : v)
      if (x == s) {
        x = v.back();
        v.pop_back();
        break;
      }
  }
  recycle_staging(*s);
  // The vendor stream goes back to the device's pool, its work still running
  // (LIFE-1): nothing is destroyed, so nothing waits (IND-4). A borrowed
  // stream's vendor stream stays its owner's (NAT-2): only the position event
  // goes back.
  if (s->borrowed)
    give_event(d, s->position);
  else
    d.natives.give(
        native_stream{s->native, s->position, s->native_priority, s->queue, 0, s->pool_counted});
  s->native = {};
  s->position = {};
  std::lock_guard<std::mutex> lock(pool_m);
  s->pool_next = free_states;
  free_states = s;
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

void when_streams_pass(const std::vector<stream_state*>& streams,
                       std::function<void(const std::string& failure)> then) noexcept {
  auto& e = engine();
  // Each stream's mark is made here, at the moment it must pass, where that
  // can be done safely: a stream idle now gets none (no work it did not ask
  // for: its ready() stays true), a busy one gets an event recorded now under
  // its enqueue lock (a mark between a host function's signal and its gate
  // wait would pass before the function returned). So a caller that frees
  // and then synchronizes the stream waits for the mark too, and ready()
  // after that synchronize is true: a mark recorded later, on the reaper
  // thread, could land after the user's synchronize and leave ready() false
  // with none of the user's work pending (found by the conformance suite
  // against the simulated runtime, ERR-4's test, about 1 run in 100). Where
  // the lock is taken (the caller may be a host function whose own stream's
  // lock is held by an enqueue that waits for it) or no event can be had, the
  // stream is left to the reaper thread as before: a later mark waits for
  // more work, never less.
  struct item {
    stream_state* s = nullptr;
    api::event_t mark{};
    bool marked = false;  // a mark was recorded here (or the stream was idle: no mark)
  };
  std::vector<item> held;
  try {
    held.reserve(streams.size());
  } catch (...) {
    return;  // no memory: what `then` would release stays allocated
  }
  for (auto* s : streams) {
    s->add_ref();
    held.push_back(item{s});
  }
  for (auto& it : held) {
    stream_state* s = it.s;
    if (!s->enqueue_m.try_lock()) continue;
    try {
      const api::status q = api::stream_query(s->native);
      if (q.ok()) {
        it.marked = true;  // idle: nothing enqueued before this moment is left
      } else if (q.code == api::not_ready) {
        auto& d = e.devices[static_cast<std::size_t>(s->device)];
        const api::event_t ev = e.take_event(d);
        const api::status r = api::event_record(ev, s->native);
        if (r.ok()) {
          it.mark = ev;
          it.marked = true;
        } else {
          e.give_event(d, ev);  // left to the reaper, which reports what fails there
        }
      }
    } catch (...) {
      // No event to be had here: left to the reaper.
    }
    s->enqueue_m.unlock();
  }
  try {
    e.reaper.submit([held, then = std::move(then)] {
      auto& eng = engine();
      std::vector<std::pair<int, api::event_t>> marks;  // (device of the event, event)
      std::string failure;  // the first failure: what failed, on which device, the vendor's words
      bool unloading = false;  // the vendor runtime is unloading (process exit)
      const auto failed = [&failure](const char* what, int device, api::error_t code) {
        if (!failure.empty()) return;
        failure = concat(what, " on device ", device, ": ", api::error_name(code), " (",
                         api::error_string(code), ")");
      };
      for (const auto& it : held) {
        stream_state* s = it.s;
        if (it.marked) continue;  // marked at the call (waited for below), or idle then
        try {
          // Idle now: everything enqueued before the free has run. No mark, so an
          // idle stream gets no work it did not ask for (its ready() stays true).
          const api::status q = api::stream_query(s->native);
          if (q.ok()) continue;
          if (api::means_shutdown(q.code)) {
            unloading = true;  // the process is ending: nothing to free or report
            continue;
          }
          if (q.code != api::not_ready) {
            failed(q.api, s->device, q.code);
            continue;
          }
          auto& d = eng.devices[static_cast<std::size_t>(s->device)];
          const api::event_t ev = eng.take_event(d);
          try {
            marks.emplace_back(s->device, ev);
          } catch (...) {
            eng.give_event(d, ev);
            throw;
          }
          std::lock_guard<spin_mutex> lock(s->enqueue_m);
          const api::status r = api::event_record(ev, s->native);
          if (api::means_shutdown(r.code))
            unloading = true;
          else if (!r.ok())
            failed(r.api, s->device, r.code);
        } catch (const error& x) {
          if (failure.empty()) failure = x.what();
        } catch (...) {
          if (failure.empty()) failure = "out of host memory";
        }
      }
      // Waits for one mark (made at the call or here) and gives its event back.
      const auto wait_mark = [&](int device, api::event_t ev) {
        const api::status st = api::event_synchronize(ev);
        if (api::means_shutdown(st.code))
          unloading = true;
        else if (!st.ok())
          failed(st.api, device, st.code);
        eng.give_event(eng.devices[static_cast<std::size_t>(device)], ev);
      };
      for (const auto& it : held)
        if (it.mark != api::event_t{}) wait_mark(it.s->device, it.mark);
      for (const auto& it : held) it.s->release();
      for (const auto& [device, ev] : marks) wait_mark(device, ev);
      if (!unloading) then(failure);
    });
  } catch (...) {
    // No memory to hand the wait over: what `then` would release stays allocated.
    for (const auto& it : held) {
      if (it.mark != api::event_t{})
        e.give_event(e.devices[static_cast<std::size_t>(it.s->device)], it.mark);
      it.s->release();
    }
  }
}

}  // namespace detail

using detail::engine;

backend_kind backend() noexcept { return gpu::api::kind; }
const char* backend_name() noexcept { return gpu::api::name; }

namespace {

//! The kernel driver's version from the file the traits name; empty if none.
std::string kernel_driver_version() {
  std::ifstream in(gpu::api::kernel_driver_file);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  const std::string marker = gpu::api::kernel_driver_marker;
  std::size_t at = 0;
  if (!marker.empty()) {
    at = line.find(marker);
    if (at == std::string::npos) return {};
    at += marker.size();
  }
  // The first word after the marker that starts with a digit: the H100 machines
  // say "Open Kernel Module for x86_64  580.159.04  Release Build ...".
  std::istringstream words(line.substr(at));
  std::string word;
  while (words >> word)
    if (word[0] >= '0' && word[0] <= '9') return word;
  return {};
}

}  // namespace

std::string backend_version() {
  // The engine first: its start sets the runtime's environment
  // (prepare_runtime_environment: the hardware queue count, eager module
  // loading), which the runtime reads when it starts, before the version
  // calls below can start it. `sluice conformance` asks for this version
  // before anything else: with the version calls first, the variables came too
  // late for the whole process (tests/fake_cudart models the runtime's start).
  const int devices = engine().count;
  int runtime = 0;
  int driver = 0;
  std::string out =
      std::string("sluice ") + gpu::api::name + " backend " SLUICE_VERSION_STRING ": ";
  if (gpu::api::runtime_version(&runtime).ok())
    out += std::string(gpu::api::vendor) + " runtime " + gpu::api::version_string(runtime);
  const auto d = gpu::api::driver_version(&driver);
  if (d.ok() && driver > 0)
    out += ", driver API " + gpu::api::version_string(driver);
  else
    out += ", no driver";
  gpu::api::clear_last_error();
  if (const std::string k = kernel_driver_version(); !k.empty()) out += ", kernel driver " + k;
  out += ", " + std::to_string(devices) + " devices";
  return out;
}

int device_count() { return engine().count; }

device::device(int id) : id_(id) { (void)engine().dev(id); }

device device::current() {
  int d = 0;
  detail::check(gpu::api::get_device(&d), "sluice::device::current");
  return device(d);
}

void device::make_current() const {
  (void)engine().dev(id_);
  detail::check(gpu::api::set_device(id_), "sluice::device::make_current: device ", id_);
}

std::string device::name() const { return engine().dev(id_).name; }

void device::synchronize() const {
  auto& d = engine().dev(id_, "sluice::device::synchronize");
  if (auto* self = detail::current_host_function_stream(); self != nullptr && self->device == d.id)
    detail::fail(errc::invalid_argument, "sluice::device::synchronize",
                 "called from a host function of a stream on device ", id_,
                 ": it would wait for itself");
  const detail::diagnose::synchronize_scope diagnosed(SLUICE_CALL_SITE(), "device::synchronize");
  const detail::scoped_device guard(id_);
  detail::check(gpu::api::device_synchronize(), "sluice::device::synchronize: device ", id_);
}

priority_range stream_priority_range(sluice::device d) {
  return engine().dev(d.id(), "sluice::stream_priority_range").range;
}

int independent_stream_limit(sluice::device d) {
  return engine().dev(d.id(), "sluice::independent_stream_limit").hardware_queues;
}

}  // namespace sluice
