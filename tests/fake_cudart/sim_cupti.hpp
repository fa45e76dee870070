// The simulated runtime's CUPTI (sim_cupti.cpp): what sim.cpp tells
// it. A program that names the simulated runtime as its CUPTI library
// (SLUICE_CUPTI_LIBRARY=<its libcudart.so.N>) gets activity records of the
// model's copies, fills and test kernels (sluice_sim_user_kernel), stamped on
// the host's realtime clock (as CUPTI's are), and external-correlation records
// for the runtime calls made while an external id is pushed, each with the
// runtime API record it names (only while the runtime API kind is enabled:
// CUPTI ties external ids to API records), and the subscriber's callbacks at
// the runtime calls it enabled them for (cuptiEnableCallback).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sim_cupti {

enum class activity { kernel, copy, copy_peer, fill };

//! The runtime calls' CUPTI callback ids (cupti_runtime_cbid.h; sim_cupti.cpp
//! checks them against it: this header is also built without CUPTI's).
namespace cbid {
constexpr int memcpy_async = 41;
constexpr int memset_async = 51;
constexpr int event_record = 135;
constexpr int stream_wait_event = 147;
constexpr int memcpy_peer_async = 161;
constexpr int launch_kernel = 211;
constexpr int launch_host_func = 284;
constexpr int memcpy_batch_async = 509;
}  // namespace cbid

//! A runtime call that may enqueue work, `cbid` its CUPTI runtime callback id
//! (cupti_runtime_cbid.h): its correlation id (0 while nothing is recorded).
std::uint32_t api_call(int cbid) noexcept;
//! The timestamp of the activities (ns).
std::uint64_t now() noexcept;
//! Device work of the call `correlation` ran on stream `stream` from start to end.
void ran(activity what, std::uint32_t correlation, std::uint32_t stream, int device,
         std::uint64_t start, std::uint64_t end, std::uint64_t bytes, const char* name) noexcept;

}  // namespace sim_cupti

//! sim.cpp: the id of a stream handle (CUPTI's stream id).
std::uint32_t sim_stream_id(void* stream) noexcept;
