// The mpi engine posts a message: whole (a send, a collective; a receive
// only once its message is there: receive.cpp), round the ring, in pieces, or
// as a small collective (small_collectives.cpp).
#include "comm/impl/communicator_state.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/ring_all_reduce.hpp"
#include "comm/mpi/thresholds.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mpi/types.hpp"
#include "comm/mutation.hpp"

#include <memory>
#include <utility>

namespace sluice::comm::detail::mpi {

// The first of the ring's tags of the collective-th collective on c.ring: its
// place modulo the window of collectives whose tags differ, times the ring's
// steps; -1 when c has no ring (one rank, no second duplicate, or too few
// tags for two collectives).
int ring_tags(const communicator_state& c, std::uint64_t collective) {
  if (c.size < 2 || c.ring == MPI_COMM_NULL) return -1;
  const int steps = ring_all_reduce::steps_for(c.size);
  const int window = c.tag_limit / steps;
  if (window < 2) return -1;
  return static_cast<int>(collective % static_cast<std::uint64_t>(window)) * steps;
}

// Posts one message of b (or, `piece`, one piece of a collective: never the
// small path, whose finish reads the whole message); an MPI error code,
// MPI_SUCCESS when posted.
int post(communicator_state& c, batch& b, message& m, bool piece) {
  message_state& s = mpi_state(m);
  const std::uint64_t collective = b.collective;  // its place among c's collectives (tags)
  const int count = static_cast<int>(m.count);    // operations.cpp checked it fits
  if (m.kind == op_kind::all_reduce && m.count * element_size(m.type) >= ring_bytes()) {
    const int base = ring_tags(c, collective);
    if (base >= 0) {
      s.ring = std::make_shared<ring_all_reduce>(m, c, base, type_of(m.type));
      return s.ring->start();
    }
  }
  // all_gather at any size on one node: libnbc's took 3-5x the blocking
  // call's time at 1-4 MiB on 2 ranks (this VM, under load); every rank
  // sends its block to every other, as many bytes per rank as a ring.
  if (!piece && b.messages.size() == 1 && goes_small(c, m)) return post_small(c, b, m);
  switch (m.kind) {
    case op_kind::send: return MPI_Isend(m.in, count, MPI_BYTE, m.peer, m.tag, c.mpi, &s.request);
    case op_kind::recv:
      if (mutation::is(mutation::kind::receive_unprobed))
        return MPI_Irecv(m.out, count, MPI_BYTE, m.peer, m.tag, c.mpi, &s.request);
      s.probing = true;  // poll() probes for its message
      return MPI_SUCCESS;
    case op_kind::all_reduce:
      return MPI_Iallreduce(m.in == m.out ? MPI_IN_PLACE : m.in, m.out, count, type_of(m.type),
                            op_of(m.op), c.mpi, &s.request);
    case op_kind::broadcast:
      return MPI_Ibcast(m.out, count, type_of(m.type), m.peer, c.mpi, &s.request);
    case op_kind::all_gather: {
      const void* own = static_cast<const char*>(m.out) +
                        static_cast<std::size_t>(c.rank) * m.count * element_size(m.type);
      return MPI_Iallgather(m.in == own ? MPI_IN_PLACE : m.in, count, type_of(m.type), m.out, count,
                            type_of(m.type), c.mpi, &s.request);
    }
  }
  return MPI_ERR_OTHER;
}

// A broadcast's pieces go from the root to every rank on the ring's
// communicator (when it has one and the tags' window allows): requests per
// piece, the root's one per other rank.
bool broadcast_in_messages(const communicator_state& c, const message& m) {
  return m.kind == op_kind::broadcast && ring_tags(c, 0) >= 0;
}
std::size_t broadcast_requests(const communicator_state& c, const message& m) {
  return c.rank == m.peer ? static_cast<std::size_t>(c.size - 1) : 1;
}

// Pieces (docs/comm.md "Pieces"): the next piece of m, its `posted`; an MPI
// error code. A send or receive goes on c.pieces with its match number as
// the tag (its pieces and header match in the order they were posted); a
// collective's piece is the collective on that part of the buffers.
int post_piece(communicator_state& c, batch& b, message& m) {
  message_state& s = mpi_state(m);
  const byte_range r = piece_range(m, bytes_of(m), s.posted);
  const int length = static_cast<int>(r.length);  // at most the message's, which fits
  int code = MPI_SUCCESS;
  switch (m.kind) {
    case op_kind::send:
      code = MPI_Isend(static_cast<const char*>(m.in) + r.offset, length, MPI_BYTE, m.peer, m.tag,
                       c.pieces, &s.piece_requests[s.posted]);
      break;
    case op_kind::recv:
      code = MPI_Irecv(static_cast<char*>(m.out) + r.offset, length, MPI_BYTE, m.peer, m.tag,
                       c.pieces, &s.piece_requests[s.posted]);
      break;
    default: {
      message part = m;
      part.in = m.in == nullptr ? nullptr : static_cast<const char*>(m.in) + r.offset;
      part.out = static_cast<char*>(m.out) + r.offset;
      part.count = r.length / element_size(m.type);
      part.piece = 0;
      message_state& in_part = mpi_state(part);
      in_part.ring.reset();
      in_part.request = MPI_REQUEST_NULL;
      // On the ring's communicator with the ring's tags of this collective
      // (its place modulo the window): a later collective may start while
      // this one's pieces still go, and MPI's own collectives would then be
      // called in different orders on different ranks. all_reduce round the
      // ring; broadcast from the root to every rank.
      const int tag = ring_tags(c, b.collective);
      if (tag >= 0) {
        MPI_Datatype type = type_of(m.type);
        const int count = static_cast<int>(part.count);
        if (m.kind == op_kind::all_reduce) {
          s.ring = std::make_shared<ring_all_reduce>(part, c, tag, type);
          code = s.ring->start();
        } else {  // this piece's requests: piece_requests[j * per .. (j + 1) * per)
          MPI_Request* next = &s.piece_requests[s.posted * broadcast_requests(c, m)];
          for (int to = 0; to < c.size && code == MPI_SUCCESS; ++to) {
            if (to == c.rank || (c.rank != m.peer && to != m.peer)) continue;
            code = c.rank == m.peer ? MPI_Isend(part.out, count, type, to, tag, c.ring, next++)
                                    : MPI_Irecv(part.out, count, type, m.peer, tag, c.ring, next++);
          }
        }
        break;
      }
      code = post(c, b, part, true);
      s.request = in_part.request;
      s.ring = std::move(in_part.ring);
      break;
    }
  }
  if (code == MPI_SUCCESS) ++s.posted;
  return code;
}

// A message in pieces starts: a send tells its size and piece size (the
// header) and posts its first piece; a receive waits for the header first
// (poll_pieces checks it before posting a piece); a collective posts its
// first piece (every rank cuts the same count the same way).
int start_pieces(communicator_state& c, batch& b, message& m) {
  message_state& s = mpi_state(m);
  s.posted = 0;
  s.completed = 0;
  s.header_checked = m.kind != op_kind::recv;
  if (m.kind == op_kind::send || m.kind == op_kind::recv)
    s.piece_requests.assign(pieces_of(m, bytes_of(m)), MPI_REQUEST_NULL);
  if (broadcast_in_messages(c, m))
    s.piece_requests.assign(pieces_of(m, bytes_of(m)) * broadcast_requests(c, m), MPI_REQUEST_NULL);
  if (m.kind == op_kind::recv)
    return MPI_Irecv(s.header, 2, MPI_UINT64_T, m.peer, m.tag, c.pieces, &s.header_request);
  if (m.kind == op_kind::send) {
    s.header[0] = m.count;
    s.header[1] = m.piece;
    const int code =
        MPI_Isend(s.header, 2, MPI_UINT64_T, m.peer, m.tag, c.pieces, &s.header_request);
    if (code != MPI_SUCCESS) return code;
  }
  return post_piece(c, b, m);
}

int transport::start(communicator_state& c, batch& b, message& m) {
  return m.piece != 0 ? start_pieces(c, b, m) : post(c, b, m);
}

}  // namespace sluice::comm::detail::mpi
