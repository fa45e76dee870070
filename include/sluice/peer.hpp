// sluice/peer.hpp: links between devices, peer access, peer copies.
//
// Synopsis
//   enum class link_kind { same_device, nvlink, xgmi, pcie, host_memory, unknown };
//   struct link_info { link_kind kind; bool peer_access_possible; bool native_atomics;
//                      int performance_rank; };
//   link_info link(device from, device to);
//   void enable_peer_access(device from, device to);   // idempotent, thread-safe
//   bool peer_access_enabled(device from, device to);
//   enum class copy_path { local, direct, staged, direct_sm, local_sm };
//   copy_path copy_peer(stream_ref, void* dst, device dst_dev, const void* src,
//                       device src_dev, std::size_t bytes);
//   struct peer_piece { void* dst; const void* src; std::size_t bytes; };
//   copy_path copy_peer_batch(stream_ref, device dst_dev, device src_dev,
//                             const peer_piece* pieces, std::size_t count);
//   copy_path copy_peer(stream_ref, pitched_ptr dst, device dst_dev, const_pitched_ptr src,
//                       device src_dev, extent e);                     // strided
//   struct strided_piece { pitched_ptr dst; const_pitched_ptr src; extent shape; };
//   copy_path copy_peer_batch(stream_ref, device dst_dev, device src_dev,
//                             const strided_piece* pieces, std::size_t count);
#pragma once

#include <sluice/device.hpp>
#include <sluice/memory.hpp>
#include <sluice/stream.hpp>

#include <cstddef>
#include <vector>

namespace sluice {

enum class link_kind { same_device, nvlink, xgmi, pcie, host_memory, unknown };
const char* to_string(link_kind k) noexcept;

struct link_info {
  link_kind kind;
  bool peer_access_possible;
  bool native_atomics;
  int performance_rank;  //!< vendor's relative rank, 0 = best; -1 if unknown
};

//! How `from` reaches `to`. link(a, a).kind == same_device (PEER-4).
link_info link(sluice::device from, sluice::device to);

//! Lets `from` access memory of `to`. Idempotent and thread-safe (PEER-1).
//! errc::invalid_argument when from == to; errc::peer_access_unavailable when
//! the link does not allow it.
void enable_peer_access(sluice::device from, sluice::device to);
bool peer_access_enabled(sluice::device from, sluice::device to);

enum class copy_path {
  local,      //!< both sides on one device
  direct,     //!< device to device over the link by a copy engine (peer access enabled)
  staged,     //!< through host memory (no peer access)
  direct_sm,  //!< device to device over the link by sluice's SM copy kernel (small copies)
  local_sm    //!< both sides on one device, by sluice's SM copy kernel (a batch of small pieces)
};
const char* to_string(copy_path p) noexcept;

//! Copies `bytes` from src (memory of src_dev) to dst (memory of dst_dev),
//! ordered on s only (PEER-3); s must belong to src_dev or dst_dev. Works with
//! and without peer access and returns the path it used (PEER-2). A zero-byte
//! copy is a no-op that reports the path it would have used.
copy_path copy_peer(stream_ref s, void* dst, sluice::device dst_dev, const void* src,
                    sluice::device src_dev, std::size_t bytes);

//! One piece of a batched peer copy: `bytes` from src to dst.
struct peer_piece {
  void* dst;
  const void* src;
  std::size_t bytes;
};

//! Copies every piece from memory of src_dev to memory of dst_dev as ONE
//! operation on s (a halo exchange in one call): ordered on s only, after the
//! work before it and before the work after it; the pieces among themselves
//! run in no particular order. Every piece is checked as copy_peer checks its
//! range, and no piece may write where another piece reads or writes
//! (errc::invalid_argument, nothing enqueued). Returns the path, the same for
//! every piece. count == 0 (or only zero-byte pieces) is a no-op.
copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const peer_piece* pieces, std::size_t count);
inline copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                                 const std::vector<peer_piece>& pieces) {
  return copy_peer_batch(s, dst_dev, src_dev, pieces.data(), pieces.size());
}

//! The strided copy_peer: the extent e from src (memory of src_dev) to dst
//! (memory of dst_dev), with copy()'s strided checks and copy_peer's rules
//! (PEER-2, PEER-3, PEER-5): ordered on s only, with or without peer access,
//! bytes between rows and planes untouched; returns the path it used. A zero
//! extent is a no-op that reports the path it would have used.
copy_path copy_peer(stream_ref s, pitched_ptr dst, sluice::device dst_dev, const_pitched_ptr src,
                    sluice::device src_dev, extent e);

//! One piece of a batched strided peer copy: the extent `shape` from src to dst.
struct strided_piece {
  pitched_ptr dst;
  const_pitched_ptr src;
  extent shape;
};

//! copy_peer_batch of strided pieces (the faces of a halo exchange in one
//! call): one operation on s, as the contiguous form; each piece checked as
//! the strided copy_peer checks it; no piece may write a byte that another
//! piece reads or writes (bytes, not footprints: the faces of one halo may
//! interleave). Returns the path, the same for every piece; count == 0 (or
//! only zero extents) is a no-op.
copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                          const strided_piece* pieces, std::size_t count);
inline copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                                 const std::vector<strided_piece>& pieces) {
  return copy_peer_batch(s, dst_dev, src_dev, pieces.data(), pieces.size());
}
//! A null piece list: the contiguous form (nullptr would fit both forms).
inline copy_path copy_peer_batch(stream_ref s, sluice::device dst_dev, sluice::device src_dev,
                                 std::nullptr_t, std::size_t count) {
  return copy_peer_batch(s, dst_dev, src_dev, static_cast<const peer_piece*>(nullptr), count);
}

}  // namespace sluice
