// Small collectives (broadcast and all_reduce of a few bytes per rank, and
// all_gather) as sluice's own non-blocking sends and receives, every rank
// with every other, instead of MPI's non-blocking collectives.
#include "comm/impl/communicator_state.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/reduce.hpp"
#include "comm/mpi/thresholds.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mpi/types.hpp"

#include <cstring>
#include <variant>

namespace sluice::comm::detail::mpi {

namespace {

// The small collective m of b completed (finish(), once its stream got
// there): every rank's block from b.scratch into `out`, all_reduce's reduced
// in rank order. So such a collective reads `in` when posted and writes `out`
// when finished, in its stream's order (what lets it start early).
void finish_small(const communicator_state& c, const batch& b, message& m) noexcept {
  const std::size_t bytes = m.count * element_size(m.type);
  const char* all = b.scratch.data();
  if (m.kind == op_kind::all_gather) {
    if (bytes <= small_bytes()) std::memcpy(m.out, all, bytes * static_cast<std::size_t>(c.size));
    return;
  }
  if (m.kind != op_kind::all_reduce) return;
  std::memcpy(m.out, all, bytes);
  for (int r = 1; r < c.size; ++r)
    reduce(m.out, m.out, all + static_cast<std::size_t>(r) * bytes, m.count, m.type, m.op);
}

}  // namespace

void finish_small_collectives(batch& b) noexcept {
  for (auto& m : b.messages) {
    const auto* s = std::get_if<message_state>(&m.transport);
    if (s != nullptr && s->small && m.done) finish_small(*b.comm, b, m);
  }
}

// Small collectives (and all_gather) as non-blocking sends and receives on
// c.ring, every rank with every other (Open MPI's non-blocking collectives
// build a schedule per call: several times the cost of the message at a few
// bytes). One tag, the
// communicator's largest, which the ring's tags never reach: a rank's
// collectives start in their enqueue order (order()), and MPI matches the
// messages of one sender, tag and communicator in the order they were posted.
// all_reduce: every rank's input gathered into b.scratch, then reduced in rank
// order on every rank: the same bits everywhere (COMM-5); an all_gather of at
// most small_bytes() per rank gathered there too (finish_small).
int post_small(communicator_state& c, batch& b, message& m) {
  const int count = static_cast<int>(m.count);
  MPI_Datatype type = type_of(m.type);
  const std::size_t bytes = m.count * element_size(m.type);
  const int tag = c.tag_limit;
  b.requests.clear();
  mpi_state(m).small = true;
  auto post_recv = [&](void* into, int from) {
    b.requests.push_back(MPI_REQUEST_NULL);
    return MPI_Irecv(into, count, type, from, tag, c.ring, &b.requests.back());
  };
  auto post_send = [&](const void* from, int to) {
    b.requests.push_back(MPI_REQUEST_NULL);
    return MPI_Isend(from, count, type, to, tag, c.ring, &b.requests.back());
  };
  // Room for every request first: push_back must not move one MPI holds.
  b.requests.reserve(2 * static_cast<std::size_t>(c.size));
  int code = MPI_SUCCESS;
  switch (m.kind) {
    case op_kind::broadcast:
      if (c.rank != m.peer) return post_recv(m.out, m.peer);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_send(m.out, r);
      return code;
    case op_kind::all_gather:
      if (bytes > small_bytes()) {  // straight into `out`
        char* out = static_cast<char*>(m.out);
        char* own = out + static_cast<std::size_t>(c.rank) * bytes;
        for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
          if (r != c.rank) code = post_recv(out + static_cast<std::size_t>(r) * bytes, r);
        for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
          if (r != c.rank) code = post_send(m.in, r);
        // This rank's block while the messages move (the sends read `in`).
        if (m.in != own) std::memcpy(own, m.in, bytes);
        return code;
      }
      [[fallthrough]];  // a small one through scratch, as all_reduce
    case op_kind::all_reduce: {
      // Every rank's block into b.scratch (finish_small writes `out`).
      b.scratch.resize(bytes * static_cast<std::size_t>(c.size));
      char* all = b.scratch.data();
      char* own = all + static_cast<std::size_t>(c.rank) * bytes;
      std::memcpy(own, m.in, bytes);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_recv(all + static_cast<std::size_t>(r) * bytes, r);
      for (int r = 0; r < c.size && code == MPI_SUCCESS; ++r)
        if (r != c.rank) code = post_send(own, r);
      return code;
    }
    default: return MPI_ERR_OTHER;
  }
}

// Whether message m, its batch's only one and not a piece, goes by
// post_small (when no ring all_reduce takes it first: post()): a broadcast,
// all_reduce or all_gather of at most small_bytes() per rank, or a larger
// all_gather when every rank is on one node, on 2 to small_ranks ranks with
// a ring communicator. A larger one across nodes goes through MPI's
// MPI_Iallgather: over TCP, sluice's messages were slower than that there
// (docs/comm.md, "Across nodes"), where on one node libnbc's was slower.
bool goes_small(const communicator_state& c, const message& m) {
  return m.kind != op_kind::send && m.kind != op_kind::recv && c.size > 1 &&
         c.size <= small_ranks && c.ring != MPI_COMM_NULL && small_bytes() > 0 &&
         (bytes_of(m) <= small_bytes() || (m.kind == op_kind::all_gather && c.one_node));
}

// Whether b goes by post_small through b.scratch: a small all_reduce below
// the ring's size or a small all_gather, neither staged.
bool through_scratch(const communicator_state& c, const batch& b) {
  if (b.messages.size() != 1 || b.pieces != 1) return false;
  const message& m = b.messages.front();
  const std::size_t bytes = bytes_of(m);
  return (m.kind == op_kind::all_gather ||
          (m.kind == op_kind::all_reduce && bytes < ring_bytes())) &&
         bytes <= small_bytes() && goes_small(c, m) && m.stage_in.device == nullptr &&
         m.stage_out.device == nullptr;
}

// The bytes collective m writes at `out`.
std::size_t written_by(const communicator_state& c, const message& m) {
  return m.kind == op_kind::all_gather ? bytes_of(m) * static_cast<std::size_t>(c.size)
                                       : bytes_of(m);
}

}  // namespace sluice::comm::detail::mpi
