// The host backend: start-up, devices, the stream-state pool, native handles.
#include "backend_rules.hpp"
#include "chaos.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "host_functions.hpp"
#include "mutation.hpp"
#include "peer_access.hpp"
#include "settings.hpp"

#include <sluice/native.hpp>

#include <climits>
#include <cstdio>
#include <exception>

namespace sluice {

namespace detail {

namespace {

struct startup {
  backend* instance = nullptr;
  std::exception_ptr failure;
};

startup start() {
  startup r;
  try {
    const int count = settings::host_devices();
    chaos::configure();
    mutation::configure();
    const unsigned hw = std::thread::hardware_concurrency();
    const int slots = settings::host_slots(hw == 0 ? 1 : static_cast<int>(hw));
    // Never destroyed: detached workers may run until the process ends.
    auto* b = new backend();
    b->device_count = count;
    b->slots = slots;
    for (int i = 0; i < count; ++i) {
      auto d = std::make_unique<device_state>();
      d->id = i;
      d->slots = slots;
      b->devices.push_back(std::move(d));
    }
    peer_access().reset(count);
    r.instance = b;
    trace::start_from_environment();  // SLUICE_TRACE=<path>
  } catch (...) {
    r.failure = std::current_exception();
  }
  return r;
}

thread_local int tls_current_device = 0;

}  // namespace

backend& engine() {
  static const startup s = start();
  if (s.instance == nullptr) std::rethrow_exception(s.failure);
  return *s.instance;
}

stream_state* backend::new_stream(device_state& d, int native) {
  stream_state* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_m_);
    s = free_streams_;
    if (s != nullptr) free_streams_ = s->pool_next;
  }
  if (s == nullptr) s = new stream_state();  // pooled, never freed: stale refs stay readable
  s->pool_next = nullptr;
  s->trace_id = trace::new_stream_id();
  s->dev = &d;
  s->native_priority = native;
  s->level = native - host_priority_range.greatest;
  if (mutation::is(mutation::kind::invert_priorities)) s->level = priority_levels - 1 - s->level;
  s->enqueued.store(0);
  s->completed.store(0);
  s->next_waiter.store(UINT64_MAX);
  s->refs.reset_to_one();  // the owning handle
  {
    std::lock_guard<std::mutex> lock(d.streams_m);
    d.streams.push_back(s);
  }
  d.start_workers();
  return s;
}

void backend::recycle(stream_state* s) noexcept {
  if (s->alias != nullptr) std::exchange(s->alias, nullptr)->release();  // borrowed
  // Nothing is lost: failures nobody asked about are reported here.
  s->failures.print_unreported(s->dev->id);
  {
    std::lock_guard<std::mutex> lock(s->dev->streams_m);
    auto& v = s->dev->streams;
    for (auto& x : v)
      if (x == s) {
        x = v.back();
        v.pop_back();
        break;
      }
  }
  std::lock_guard<std::mutex> lock(pool_m_);
  s->pool_next = free_streams_;
  free_streams_ = s;
}

}  // namespace detail

using detail::engine;

backend_kind backend() noexcept { return backend_kind::host; }
const char* backend_name() noexcept { return "host"; }

std::string backend_version() {
  auto& b = engine();
  std::string version =
      "sluice host backend " SLUICE_VERSION_STRING ": " + std::to_string(b.device_count) +
      (b.device_count == 1 ? " simulated device x " : " simulated devices x ") +
      std::to_string(b.slots) + (b.slots == 1 ? " execution slot" : " execution slots");
  if (const auto seed = detail::chaos::seed.load(std::memory_order_relaxed); seed != 0)
    version += ", chaos mode (SLUICE_HOST_CHAOS=" + std::to_string(seed) + ")";
  return version;
}

int device_count() { return engine().device_count; }

device::device(int id) : id_(id) {
  const int n = device_count();
  if (id < 0 || id >= n)
    detail::fail(errc::invalid_device, "sluice::device", "device id ", id, " is out of range [0, ",
                 n, ") (SLUICE_HOST_DEVICES=", n, ")");
}

device device::current() { return device(detail::tls_current_device); }

void device::make_current() const { detail::tls_current_device = id_; }

std::string device::name() const { return "sluice host device " + std::to_string(id_); }

void device::synchronize() const {
  auto& d = engine().dev(id_);
  const auto* self = detail::current_host_function_stream();
  detail::refuse_device_self_wait(self != nullptr && self->dev == &d, id_);
  detail::refuse_if_device_captures(id_, "sluice::device::synchronize");
  const detail::diagnose::synchronize_scope diagnosed(SLUICE_CALL_SITE(), "device::synchronize");
  // Snapshot every stream's position now; work enqueued later is not waited for.
  std::vector<std::pair<detail::stream_state*, detail::seq_t>> positions;
  {
    std::lock_guard<std::mutex> lock(d.streams_m);
    positions.reserve(d.streams.size());
    for (auto* s : d.streams)
      if (s->try_add_ref()) positions.emplace_back(s, s->enqueued.load(std::memory_order_acquire));
  }
  for (auto& [s, seq] : positions) {
    detail::wait_reached(*s, seq, false);
    s->release();
  }
}

priority_range stream_priority_range(sluice::device) { return detail::host_priority_range; }

int independent_stream_limit(sluice::device) {
  // Waits park the stream, not a slot, and host functions get their own
  // threads: no number of live streams makes one wait for another.
  return INT_MAX;
}

native_stream_t native_handle(stream_ref s) {
  return reinterpret_cast<native_stream_t>(&detail::checked(s, "sluice::native_handle"));
}

}  // namespace sluice
