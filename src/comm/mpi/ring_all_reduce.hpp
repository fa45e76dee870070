// The mpi engine's all_reduce of large buffers: a ring of non-blocking sends
// and receives that the engine thread drives. Internal.
#pragma once

#include <sluice/comm.hpp>

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace sluice::comm::detail {
struct communicator_state;
struct message;
}  // namespace sluice::comm::detail

namespace sluice::comm::detail::mpi {

//! A large all_reduce as a ring of non-blocking sends and receives (ring_all_reduce.cpp):
//! 2(size - 1) steps, each a send to the next rank and a receive from the
//! previous one, on the communicator's second duplicate with tags
//! tag_base .. tag_base + steps() - 1. Every rank gets the same result: each
//! chunk is reduced once, in ring order, then passed on.
class ring_all_reduce {
 public:
  //! Copies in to out (when not in place); MPI is called from start() on,
  //! on c.ring.
  ring_all_reduce(const message& m, const communicator_state& c, int tag_base, MPI_Datatype type);
  int start();           // an MPI error code
  int test(bool& done);  // an MPI error code; done: the result is in out
  void cancel(std::vector<MPI_Request>& cancelled);  // a timed-out one
  static int steps_for(int size) noexcept { return 2 * (size - 1); }
  int steps() const noexcept { return steps_for(size_); }

 private:
  std::size_t chunk_begin(int i) const noexcept;
  std::size_t chunk_count(int i) const noexcept;
  int post_step();
  const char* in_;
  char* out_;
  std::size_t count_, element_;
  datatype type_;
  reduce_op op_;
  int rank_, size_;
  MPI_Comm comm_;
  int tag_base_;
  MPI_Datatype mpi_type_;
  std::vector<char> scratch_;  // the chunk received in a reduce-scatter step
  int step_ = 0;
  int recv_chunk_ = 0;
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

}  // namespace sluice::comm::detail::mpi
