// nccl's events of a batch, pooled per device (event_pool.cpp). Internal.
#pragma once

#include <sluice/device.hpp>
#include <sluice/event.hpp>

namespace sluice::comm::detail {

//! nccl: events that mark where a stream got (its arrival, its NCCL calls
//! done), instead of stream memory writes of flags: two stream memory
//! operations around each NCCL kernel cost about 8 us of device time per
//! operation on 2x H100, an event record next to nothing. Per device, reused
//! once ready (an event never recorded is ready).
sluice::event* lease_event(sluice::device d);
//! Back to the pool if ready, else left alone (never reused).
void return_event(sluice::event* e) noexcept;

//! Whether e completed; true when asking failed (its stream failed: the
//! failure reaches it by its own way).
bool event_ready(sluice::event* e) noexcept;

}  // namespace sluice::comm::detail
