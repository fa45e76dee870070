// Which messages of a batch go in pieces and which of its buffers go through
// pinned staging: decided on the enqueuing thread, from the counts and the
// memory's kinds alone, so that every rank decides alike.
#include "comm/staging_plan.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/impl/staging.hpp"
#include "strided.hpp"

#include <algorithm>
#include <cstddef>

namespace sluice::comm::detail {

// Which messages of b go in pieces (mpi engine; every rank decides by the
// count alone, so that a send and its receive, or every rank's collective,
// agree): sends, receives, all_reduce and broadcast of at least two pieces.
void plan_pieces(batch& b) {
  const auto& c = *b.comm;
  b.pieces = 1;
  if (c.kind != engine::mpi || c.piece_bytes == 0) return;
  for (message& m : b.messages) {
    if (m.kind == op_kind::all_gather) continue;
    const std::size_t each =
        m.kind == op_kind::send || m.kind == op_kind::recv ? 1 : element_size(m.type);
    const std::size_t piece = c.piece_bytes / each * each;
    const std::size_t bytes = bytes_of(m);
    if (piece == 0 || bytes / 2 < piece) continue;
    m.piece = piece;
    b.pieces = std::max(b.pieces, pieces_of(m, bytes));
  }
}

// Device buffers go through pinned staging (the mpi engine: an MPI that cannot
// read device memory). Leases the slots and points the message at them.
//
// The nccl engine the other way round: NCCL's kernels read and write memory
// the device can address, which pageable host memory is not: host buffers go
// through pinned staging too, copied by host tasks on the stream (a vendor
// copy from pageable memory would wait for the stream on the calling thread).
// "far" below: the memory the engine cannot use as it is; message::stage's
// "device" is then the user's host buffer. A host buffer wholly inside a
// registered_host_memory range is not far for nccl: the backend registers it
// pinned, portable and mapped, so NCCL's kernels reach it at its own address
// as they reach a staging slot (which is pinned host memory too), and a copy
// into a slot would only add one. The mpi engine never stages host memory.
void stage(batch& b) {
  const int size = b.comm->size;
  const int rank = b.comm->rank;
  const bool nccl = b.comm->kind == engine::nccl;
  auto far = [nccl](bool device_memory, const void* p, std::size_t bytes) {
    if (p == nullptr || bytes == 0) return false;
    if (!nccl) return device_memory;
    return !device_memory && !sluice::detail::inside_registration(p, bytes);
  };
  for (message& m : b.messages) {
    auto lease = [&b, &m](message::stage& st, void* device, std::size_t bytes) {
      const staging_lease l = lease_staging(bytes, b.streams[m.stream]);
      st = message::stage{device, l.data, bytes, l.slot};
      return l.data;
    };
    const std::size_t bytes = bytes_of(m);
    switch (m.kind) {
      case op_kind::send:
        if (far(m.in_device, m.in, bytes)) m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
        break;
      case op_kind::recv:
        if (far(m.out_device, m.out, bytes)) m.out = lease(m.stage_out, m.out, bytes);
        break;
      case op_kind::broadcast:  // one buffer: in to the root, out on the others
        if (far(m.out_device, m.out, bytes)) {
          void* device = m.out;
          message::stage& st = m.peer == rank ? m.stage_in : m.stage_out;
          m.out = lease(st, device, bytes);
          m.in = m.out;
        }
        break;
      case op_kind::all_reduce:
        if (m.in == m.out && far(m.out_device, m.out, bytes)) {  // in place: one slot, in and out
          void* device = m.out;
          m.out = lease(m.stage_out, device, bytes);
          m.stage_in = message::stage{device, m.out, bytes, -1};
          m.in = m.out;
        } else {
          if (far(m.in_device, m.in, bytes))
            m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
          if (far(m.out_device, m.out, bytes)) m.out = lease(m.stage_out, m.out, bytes);
        }
        break;
      case op_kind::all_gather: {
        const std::size_t total = bytes * static_cast<std::size_t>(size);
        const std::size_t own = static_cast<std::size_t>(rank) * bytes;
        const bool in_place = m.in == static_cast<const char*>(m.out) + own;
        if (far(m.out_device, m.out, total)) {
          void* device = m.out;
          m.out = lease(m.stage_out, device, total);
          if (in_place)  // this rank's slot copied into the staged output
            m.stage_in = message::stage{static_cast<char*>(device) + own,
                                        static_cast<char*>(m.out) + own, bytes, -1};
        }
        if (in_place)
          m.in = static_cast<const char*>(m.out) + own;
        else if (far(m.in_device, m.in, bytes))
          m.in = lease(m.stage_in, const_cast<void*>(m.in), bytes);
        break;
      }
    }
  }
}

void release_unused_staging(batch& b) noexcept {
  for (message& m : b.messages) {
    release_staging_unused(m.stage_in.slot);
    release_staging_unused(m.stage_out.slot);
  }
}

}  // namespace sluice::comm::detail
