// The MPI requests the engine thread gave up on (an operation that timed out,
// a refused send's pieces, MPI_Finalize): cancelled and kept until MPI
// completes them, never waited for. Both transports' (the nccl engine's size
// exchange goes over MPI). Internal.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace sluice::comm::detail {

struct cancelled_requests {
  std::vector<MPI_Request> requests;  // not yet completed

  //! MPI_Cancel, kept in `requests`; r becomes MPI_REQUEST_NULL.
  void cancel(MPI_Request& r) {
    if (r == MPI_REQUEST_NULL) return;
    MPI_Cancel(&r);
    requests.push_back(r);  // completes later, cancelled or not; never waited for
    r = MPI_REQUEST_NULL;
  }
  //! Lets go of those that completed (of all of them at the engine's stop).
  void test(bool stop) {
    for (std::size_t i = 0; i < requests.size();) {
      int completed = 0;
      MPI_Test(&requests[i], &completed, MPI_STATUS_IGNORE);
      if (completed || stop) {
        requests[i] = requests.back();
        requests.pop_back();
      } else {
        ++i;
      }
    }
  }
  bool empty() const noexcept { return requests.empty(); }
};

}  // namespace sluice::comm::detail
