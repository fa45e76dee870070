// Devices on the GPU backend (include/sluice/device.hpp): their count,
// handles, the current device, device::synchronize, and the per-device answers
// of stream.hpp (priority range, independent stream limit).
#include "backend_rules.hpp"
#include "diagnose.hpp"
#include "engine.hpp"
#include "graph.hpp"
#include "stream_state.hpp"
#include "vendor.hpp"

#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <string>

namespace sluice {

using detail::engine;

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
  detail::refuse_if_device_captures(d.id, "sluice::device::synchronize");
  const auto* self = detail::current_host_function_stream();
  detail::refuse_device_self_wait(self != nullptr && self->device == d.id, id_);
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
