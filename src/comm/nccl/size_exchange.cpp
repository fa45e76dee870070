// The nccl engine's size exchange over MPI: NCCL carries the data, the
// engine thread tells each receive its send's size before the receive's
// stream goes on (a receive must be exactly as large as its send).
#include "comm/impl/failure.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/types.hpp"
#include "comm/nccl/transport.hpp"

#include <mpi.h>

namespace sluice::comm::detail::nccl {

void post_size_exchange(batch& b) {
  b.sizes_posted = true;
  for (auto& m : b.messages) {
    const int code = post_sizes(*b.comm, m);
    if (code != MPI_SUCCESS) {
      fail_message(b, m, " could not start: " + mpi::error_text(code));
      fail_batch(b, b.failure);
      break;
    }
  }
}

// The nccl engine: NCCL carries the data (its calls are on the streams
// already); the engine exchanges what NCCL cannot check, the size of each
// send: the sender's `size_sent` tells it to the receiver, whose
// `size_received` learns it into peer_bytes (one way: a send does not wait
// for its receiver).
int post_sizes(communicator_state& c, message& m) {
  message_state& s = nccl_state(m);
  s.own_bytes = m.count;
  s.size_told = m.kind != op_kind::send;
  s.size_learned = m.kind != op_kind::recv;
  if (m.kind == op_kind::send)
    return MPI_Isend(&s.own_bytes, 1, MPI_UINT64_T, m.peer, m.tag, c.mpi, &s.size_sent);
  if (m.kind == op_kind::recv)
    return MPI_Irecv(&s.peer_bytes, 1, MPI_UINT64_T, m.peer, m.tag, c.mpi, &s.size_received);
  return MPI_SUCCESS;
}

bool sizes_known(message& m, int& code) {
  message_state& s = nccl_state(m);
  code = MPI_SUCCESS;
  int completed = 0;
  if (!s.size_told) {
    code = MPI_Test(&s.size_sent, &completed, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) return false;
    s.size_told = completed != 0;
  }
  if (s.size_told && !s.size_learned) {
    code = MPI_Test(&s.size_received, &completed, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) return false;
    s.size_learned = completed != 0;
  }
  return s.size_told && s.size_learned;
}

void early_verdict(batch& b) {
  if (!b.gated || !b.failure.empty()) return;
  for (auto& m : b.messages) {
    int code = MPI_SUCCESS;
    // A failure or another size is left for poll (poll.cpp), once started.
    if (!sizes_known(m, code) ||
        (m.kind == op_kind::recv && nccl_state(m).peer_bytes != nccl_state(m).own_bytes))
      return;
  }
  b.verdict_given = true;
  b.lease.flag->store(b.lease.value);
}

}  // namespace sluice::comm::detail::nccl
