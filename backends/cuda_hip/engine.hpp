// The GPU backend's engine: the devices (each set up at first use), the pool
// of stream states, and sluice's own threads. Calls that need a current device
// set it for their own duration and restore it (XDEV-2, scoped_device); hot
// paths (record, wait, copy, ready) need none. Defined in engine.cpp
// (start-up, devices) and stream_states.cpp (the pool of stream states).
#pragma once

#include "host_func/host_holds.hpp"
#include "stream_pool.hpp"
#include "vendor.hpp"
#include "worker_pool.hpp"

#include <sluice/stream.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::detail {

struct stream_state;
struct staging_set;

//! Per-device state, set up at first use of the device.
struct device_state {
  int id = 0;
  std::once_flag ready;
  std::string name;
  priority_range range{0, 0};
  int hardware_queues = 1;
  api::pool_t pool{};
  api::context_t context{};  // the vendor context of this device (CUDA: its primary context)
  // Blocks of the SM copy kernel for a full-size launch (4 per multiprocessor);
  // 0 when the kernel cannot run here (no code for this device, or a runtime
  // without kernels): peer copies then always use the copy engine.
  unsigned sm_blocks = 0;
  // The largest pitch the vendor's strided copies take here (api::max_pitch; 0 if unknown:
  // strided copies then go row by row).
  std::size_t max_pitch = 0;
  api::stream_t
      alloc_stream{};  // synchronous device_buffer allocations and their frees; never waits
  std::atomic<bool> initialized{false};  // the fields above are set (end of engine_t::dev's once)

  // Vendor streams made ahead of need: no sluice call creates one while the
  // device may be busy (IND-4, stream_pool.hpp).
  stream_pool natives;

  // What waits for the host on this device: which host functions may take the
  // word watcher's signal (host_func/host_holds.hpp).
  host_holds holds;

  std::mutex
      streams_m;  // live streams of the device (frees of synchronous allocations wait on them)
  std::vector<stream_state*> streams;

  std::mutex events_m;  // pooled non-timing events for internal waits
  std::vector<api::event_t> events;
};

struct engine_t {
  engine_t();
  int count = 0;
  std::unique_ptr<device_state[]> devices;

  //! errc::invalid_device unless 0 <= id < count; sets the device up at first use.
  device_state& dev(int id, const char* api_name = "sluice::device");

  stream_state* new_stream(device_state& d, int native_priority);
  //! A stream on a vendor stream that its owner made and destroys (sluice::borrow).
  stream_state* new_borrowed_stream(device_state& d, api::stream_t native, int native_priority);
  void recycle(stream_state* s) noexcept;
  //! A state from the free list set up for the vendor stream n.
  stream_state* adopt(device_state& d, const native_stream& n, int native_priority, bool borrowed);

  api::event_t take_event(device_state& d);
  void give_event(device_state& d, api::event_t e) noexcept;

  std::mutex pool_m;
  stream_state* free_states = nullptr;

  // User host functions run on the word watcher's runners (host_func/word_watch.hpp),
  // or, where their stream shares a hardware queue, here after the vendor's
  // callback handed them over (host_func/batch.cpp).
  worker_pool host_functions;
  worker_pool reaper;  // blocking vendor frees and destroys

  std::mutex peer_m;  // enable_peer_access (the flags: src/peer_access.hpp)

  std::mutex staging_m;
  std::vector<staging_set*> staging_free;  // staging sets of recycled streams
};

engine_t& engine();
//! The engine once engine() has made it, else nullptr; never makes it. For
//! what the engine's own construction may reach (SLUICE_TRACE starts a trace
//! from engine_t's constructor: engine() there would wait for itself).
engine_t* engine_if_started() noexcept;

}  // namespace sluice::detail
