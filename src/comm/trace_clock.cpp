// The trace clocks of a communicator's ranks, so that `sluice trace report`
// puts the ranks' trace files on one timeline.
#include "comm/trace_clock.hpp"

#include "trace.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>

namespace sluice::comm::detail {

// While a trace is collected on any of its ranks: this process's trace clock
// against that of the communicator's rank 0, for `sluice trace report` to put
// the ranks' files on one timeline (docs/comm.md "Tracing"). Ranks on rank
// 0's host (same host name and boot) share its steady clock: offset 0, exact.
// Others: the best of `rounds` ping-pongs with rank 0, offset = the midpoint
// of the round trip minus rank 0's time, within +- half the round trip.
// Collective over c (under the MPI guard).
void measure_trace_clock(const communicator_state& c) {
  namespace trace = sluice::detail::trace;
  constexpr int rounds = 10;
  constexpr int host_chars = 512;
  trace::rank_info info;
  MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &info.ranks);
  // Rank 0's world rank and host.
  char host[host_chars] = {};
  int reference = info.rank;
  const std::string mine = trace::host_identity();
  mine.copy(host, host_chars - 1);
  if (MPI_Bcast(&reference, 1, MPI_INT, 0, c.mpi) != MPI_SUCCESS ||
      MPI_Bcast(host, host_chars, MPI_CHAR, 0, c.mpi) != MPI_SUCCESS)
    return;
  host[host_chars - 1] = '\0';
  info.reference = reference;
  info.same_host = mine == host;
  std::int64_t best_rtt = -1;
  for (int r = 1; r < c.size; ++r) {
    if (c.rank != 0 && c.rank != r) continue;
    for (int k = 0; k < rounds; ++k) {
      std::int64_t t = 0;
      if (c.rank == 0) {
        if (MPI_Recv(&t, 1, MPI_INT64_T, r, 0, c.mpi, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        t = trace::now_ns();
        if (MPI_Send(&t, 1, MPI_INT64_T, r, 0, c.mpi) != MPI_SUCCESS) return;
      } else {
        const std::int64_t t0 = trace::now_ns();
        if (MPI_Send(&t, 1, MPI_INT64_T, 0, 0, c.mpi) != MPI_SUCCESS ||
            MPI_Recv(&t, 1, MPI_INT64_T, 0, 0, c.mpi, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          return;
        const std::int64_t t1 = trace::now_ns();
        if (best_rtt < 0 || t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          info.measured_offset_ns = t0 + (t1 - t0) / 2 - t;
          info.measured_error_ns = (t1 - t0 + 1) / 2;
        }
      }
    }
  }
  if (c.rank == 0 || info.same_host) {
    info.clock_offset_ns = 0;  // the same clock
    info.clock_error_ns = 0;
  } else {
    info.clock_offset_ns = info.measured_offset_ns;
    info.clock_error_ns = info.measured_error_ns;
  }
  trace::note_rank(info);
}

}  // namespace sluice::comm::detail
