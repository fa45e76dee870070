// The mpi engine's measured thresholds (thresholds.hpp says what each does).
#include "comm/mpi/thresholds.hpp"

#include "settings.hpp"

namespace sluice::comm::detail::mpi {

// All_reduce of at least this many bytes goes round the ring (ring_all_reduce.cpp).
std::size_t ring_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::settings::comm_ring_bytes());
  return bytes;
}

// A collective of at most this many bytes per rank (and an all_gather of any
// size on one node; 0: none of them), on at most small_ranks ranks, goes as
// point-to-point messages (post_small).
std::size_t small_bytes() {
  static const std::size_t bytes =
      static_cast<std::size_t>(sluice::detail::settings::comm_small_bytes());
  return bytes;
}

}  // namespace sluice::comm::detail::mpi
