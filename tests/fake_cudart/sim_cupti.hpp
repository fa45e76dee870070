// The simulated runtime's CUPTI (sim_cupti.cpp, issue 21): what sim.cpp tells
// it. A program that names the simulated runtime as its CUPTI library
// (SLUICE_CUPTI_LIBRARY=<its libcudart.so.N>) gets activity records of the
// model's copies, fills and test kernels (sluice_sim_user_kernel), stamped on
// the host's realtime clock (as CUPTI's are), and external-correlation records
// for the runtime calls made while an external id is pushed, each with the
// runtime API record it names (only while the runtime API kind is enabled:
// CUPTI ties external ids to API records).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sim_cupti {

enum class activity { kernel, copy, copy_peer, fill };

//! A runtime call that may enqueue work: its correlation id (0 while nothing is recorded).
std::uint32_t api_call() noexcept;
//! The timestamp of the activities (ns).
std::uint64_t now() noexcept;
//! Device work of the call `correlation` ran on stream `stream` from start to end.
void ran(activity what, std::uint32_t correlation, std::uint32_t stream, int device,
         std::uint64_t start, std::uint64_t end, std::uint64_t bytes, const char* name) noexcept;

}  // namespace sim_cupti

//! sim.cpp: the id of a stream handle (CUPTI's stream id).
std::uint32_t sim_stream_id(void* stream) noexcept;
