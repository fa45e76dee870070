// The mpi engine's measured thresholds (thresholds.hpp says what each does).
#include "comm/mpi/thresholds.hpp"

#include "environment.hpp"

#include <limits>

namespace sluice::comm::detail::mpi {

// All_reduce of at least this many bytes goes round the ring (ring_all_reduce.cpp).
std::size_t ring_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::integer_from_environment(
          "SLUICE_COMM_RING_BYTES", 65536, 0, std::numeric_limits<int>::max()));
  return bytes;
}

// A collective of at most this many bytes per rank (and an all_gather of any
// size; 0: none of them), on at most small_ranks ranks, goes as
// point-to-point messages (post_small).
std::size_t small_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::integer_from_environment(
          "SLUICE_COMM_SMALL_BYTES", 4096, 0, std::numeric_limits<int>::max()));
  return bytes;
}

}  // namespace sluice::comm::detail::mpi
