// The mpi engine's reductions on the host (the ring's chunks, a small
// all_reduce's inputs). Internal.
#pragma once

#include <sluice/comm.hpp>

#include <cstddef>

namespace sluice::comm::detail::mpi {

//! out[i] = a[i] op b[i] for n elements of t (out may be a).
void reduce(void* out, const void* a, const void* b, std::size_t n, datatype t,
            reduce_op op) noexcept;

}  // namespace sluice::comm::detail::mpi
