// The mpi engine's whole receives: probed before they are posted, and
// received only into a buffer exactly as large as their message; a send of
// another size is taken into scratch and dropped (its pieces one after
// another), and the receive fails.
#include "comm/impl/communicator_state.hpp"
#include "comm/impl/failure.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mpi/types.hpp"
#include "comm/mutation.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <utility>

namespace sluice::comm::detail::mpi {

// The pieces of a send whose receiver refused it (another size): each taken
// into scratch once the one before it arrived; false once all were.
bool transport::drain_pieces(refused_send& d) noexcept {
  for (;;) {
    if (d.request != MPI_REQUEST_NULL) {
      int arrived = 0;
      if (MPI_Test(&d.request, &arrived, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (!arrived) return true;
      ++d.taken;
    }
    if (d.taken == d.pieces) return false;
    try {
      if (d.scratch.size() < d.piece) d.scratch.resize(d.piece);
    } catch (...) {
      return false;  // no memory: the sender's other pieces wait for its timeout
    }
    const int count = static_cast<int>(d.taken + 1 == d.pieces ? d.last : d.piece);
    if (MPI_Irecv(d.scratch.data(), count, MPI_BYTE, d.peer, d.tag, d.comm, &d.request) !=
        MPI_SUCCESS)
      return false;
  }
}

// A whole receive: its message, once there, is received if it is exactly as
// large (MPI_Imrecv into the receive's buffer), else taken into scratch and
// dropped, and the receive fails: MPI never gets a buffer smaller than its
// message (Open MPI 4.1's shared-memory single copy wrote past a truncated
// receive's buffer: docs/results/runs/2026-11-28-openmpi-receive-overrun.md).
// False while it is not there or when it failed (then m.done); `code` an MPI
// error code.
bool transport::receive_probed(batch& b, message& m, int& code) {
  auto& c = *b.comm;
  message_state& s = mpi_state(m);
  if (s.straddled) {  // its send went in pieces: the header tells its size
    int arrived = 0;
    MPI_Status status;
    code = MPI_Test(&s.header_request, &arrived, &status);
    if (code != MPI_SUCCESS) {
      fail_with_peer(b, m, " failed: " + error_text(code));
    } else if (arrived) {
      int words = 0;
      MPI_Get_count(&status, MPI_UINT64_T, &words);
      refuse_header(b, m, words);
    }
    return false;
  }
  int found = 0;
  MPI_Message matched = MPI_MESSAGE_NULL;
  MPI_Status status;
  code = MPI_Improbe(m.peer, m.tag, c.mpi, &found, &matched, &status);
  if (code == MPI_SUCCESS && !found && look_across && c.piece_bytes != 0) {
    // Its send may have gone in pieces (twice the piece size or more; none
    // does when the piece size is 0): then its header comes first on the
    // pieces communicator, with the same match number.
    code = MPI_Improbe(m.peer, m.tag, c.pieces, &found, &matched, &status);
    if (code == MPI_SUCCESS && found) {  // (still probing: poll() comes back here)
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      if (bytes != static_cast<int>(sizeof s.header)) {  // not a header: refused whole
        refuse_matched(b, m, matched, bytes);
        return false;
      }
      s.straddled = true;
      code = MPI_Imrecv(s.header, 2, MPI_UINT64_T, &matched, &s.header_request);
      if (code != MPI_SUCCESS) fail_with_peer(b, m, " failed: " + error_text(code));
      return false;
    }
  }
  if (code != MPI_SUCCESS || !found) {
    if (code != MPI_SUCCESS) fail_with_peer(b, m, " failed: " + error_text(code));
    return false;
  }
  s.probing = false;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  if (static_cast<std::size_t>(bytes) == m.count) {
    void* into = m.out;
    if (mutation::is(mutation::kind::receive_unwritten)) {  // into scratch: its buffer unwritten
      try {
        if (b.scratch.size() < m.count) b.scratch.resize(m.count);
        into = b.scratch.data();
      } catch (...) {
      }
    }
    code = MPI_Imrecv(into, bytes, MPI_BYTE, &matched, &s.request);
    return true;
  }
  refuse_matched(b, m, matched, bytes);
  return false;
}

void transport::refuse_matched(batch& b, message& m, MPI_Message& matched, int bytes) {
  fail_message(b, m, sent_other_size(bytes));
  try {
    refused_send d;
    d.pieces = 1;
    d.scratch.resize(static_cast<std::size_t>(std::max(bytes, 1)));
    if (MPI_Imrecv(d.scratch.data(), bytes, MPI_BYTE, &matched, &d.request) == MPI_SUCCESS)
      refused_.push_back(std::move(d));
  } catch (...) {
    // No memory: the message stays matched and unreceived; its sender's
    // request waits for its own timeout.
  }
}

// The sender's pieces are taken, one after another, into a piece of scratch
// and dropped (drain_pieces), so that they neither hold the sender nor meet
// a later receive.
void transport::refuse_header(batch& b, message& m, int words) {
  const message_state& s = mpi_state(m);
  if (words == 2 && s.header[1] != 0 && s.header[1] <= (1U << 30) && s.header[0] <= INT_MAX) {
    refused_send d;
    d.pieces = (s.header[0] + s.header[1] - 1) / s.header[1];
    d.piece = static_cast<std::size_t>(s.header[1]);
    d.last = static_cast<std::size_t>(s.header[0] - (d.pieces - 1) * s.header[1]);
    d.peer = m.peer;
    d.tag = m.tag;
    d.comm = b.comm->pieces;
    try {
      refused_.push_back(std::move(d));
    } catch (...) {
      // No memory: the sender's pieces wait for its timeout.
    }
  }
  fail_message(b, m,
               words == 2 ? sent_other_size(s.header[0])
                          : ": the matching send's header was not one (" + std::to_string(words) +
                                " words)");
}

void transport::drain_refused(bool stop) {
  for (std::size_t i = 0; i < refused_.size();) {
    if (!stop && drain_pieces(refused_[i])) {
      ++i;
    } else {
      if (refused_[i].request != MPI_REQUEST_NULL)
        cancelled_.requests.push_back(refused_[i].request);
      refused_.erase(refused_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

}  // namespace sluice::comm::detail::mpi
