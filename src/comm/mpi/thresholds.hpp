// The mpi engine's measured thresholds: which collectives go round the ring
// and which as sluice's own point-to-point messages (each read once, from its
// SLUICE_COMM_* variable, with its default). Internal.
#pragma once

#include <cstddef>

namespace sluice::comm::detail::mpi {

//! All_reduce of at least this many bytes goes round the ring (ring_all_reduce.cpp):
//! Open MPI's non-blocking all_reduce is 2-2.5x slower than its blocking one
//! from 1 MiB (docs/results/runs/2026-11-26-comm-host-vm.md).
std::size_t ring_bytes();
//! A collective of at most this many bytes per rank (and an all_gather of
//! any size on one node; 0: none of them), on at most small_ranks ranks, goes as
//! point-to-point messages (small_collectives.cpp): Open MPI's non-blocking
//! collectives build a schedule per call, several times the cost of the
//! message at a few bytes.
std::size_t small_bytes();
constexpr int small_ranks = 16;

}  // namespace sluice::comm::detail::mpi
