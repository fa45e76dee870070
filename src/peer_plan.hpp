// copy_peer's whole plan (PEER-2), backend-neutral: the argument checks, the
// path and, for sluice's SM copy kernel, the launch shape. The backend says
// what its device can do (peer_limits) and runs the plan; nothing here calls
// back into the backend. Internal.
#pragma once

#include "strided.hpp"

#include <sluice/peer.hpp>

#include <cstddef>
#include <vector>

namespace sluice::detail {

//! What the planner needs from the backend about the stream's device.
struct peer_limits {
  //! Memory sluice did not allocate is rejected (the host backend knows all of
  //! its device memory); else it is the vendor's to check.
  bool only_sluice_memory = false;
  //! Single copies over the link of at most these many bytes, aligned, run as
  //! the SM copy kernel: `push` on the source's stream, `pull` on the
  //! destination's (0: never).
  std::size_t sm_push_max = 0;
  std::size_t sm_pull_max = 0;
  //! copy_peer_batch: every piece at most this many bytes, aligned (0: never).
  std::size_t sm_batch_max = 0;
  //! Blocks of a full-size launch on the stream's device; 0: the kernel cannot run.
  unsigned sm_blocks = 0;
  std::size_t sm_alignment = 16;    //!< both ends of an SM copy
  std::size_t sm_block_bytes = 1;   //!< bytes one block moves per step
  std::size_t sm_batch_pieces = 1;  //!< pieces per launch of the batch kernel
  //! Strided copy_peer over the link that is not one run after normalizing,
  //! of at most these many bytes, both ends and every step aligned: the SM
  //! copy kernel (0: never). A strided copy that is one run follows the
  //! contiguous limits; strided batch pieces follow sm_batch_max, aligned so.
  std::size_t sm_strided_max = 0;
  //! Strided SM copies: the kernel moves units of 16, 8 or 4 bytes, the largest
  //! that the ends, the steps and the width allow, so they need only this alignment.
  std::size_t sm_strided_alignment = 4;
  //! Strided copies whose rows are at most this many bytes wide go to the SM
  //! kernel at any size (the copy engine moves such rows one by one); 0: by size only.
  std::size_t sm_strided_narrow_row = 0;
};

//! What to enqueue.
struct copy_plan {
  copy_path path = copy_path::local;
  //! direct_sm single copy: blocks of its launch. direct_sm / local_sm batch:
  //! the blocks per piece of each launch come from sm_batch_blocks().
  unsigned sm_blocks = 0;
  std::size_t bytes = 0;  //!< the copy's bytes (a batch: all pieces')
};

//! copy_peer on a stream of device `own` (the source's or the destination's;
//! non-zero sizes need valid, non-overlapping ranges): local on one device,
//! direct when `own` has peer access to the other device (peer_access.hpp),
//! direct_sm for small aligned copies within the limits, staged otherwise. A
//! range in a sluice allocation must lie in it and be memory of its stated
//! device. Throws errc::invalid_argument.
copy_plan plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes, const peer_limits& limits);

//! copy_peer_batch: pieces is null only when count is 0; each piece as
//! plan_copy_peer checks it; no piece's destination overlaps any other
//! piece's source or destination. direct_sm / local_sm when every piece is
//! within sm_batch_max and aligned.
copy_plan plan_copy_peer_batch(int own, device dst_dev, device src_dev, const peer_piece* pieces,
                               std::size_t count, const peer_limits& limits);

//! The strided copy_peer's plan: the path (as plan_copy_peer chooses it; the
//! SM kernel per sm_strided_max) and the checked, normalized shape
//! (plan_strided_copy's checks, then each end memory of its stated device).
struct strided_peer_plan {
  copy_plan copy;
  strided_plan shape;
};
strided_peer_plan plan_copy_peer(int own, pitched_ptr dst, device dst_dev, const_pitched_ptr src,
                                 device src_dev, extent e, const peer_limits& limits);

//! copy_peer_batch of strided pieces: each piece as the strided plan_copy_peer
//! checks it; no piece writes a byte another piece reads or writes (exactly:
//! two y faces of one array share a footprint, not a byte). `pieces` holds the non-empty
//! pieces; copy.bytes is the bytes they move. Where the strided SM kernel takes some pieces
//! but not all, those come first (sm_pieces of them) and go by the kernel, the rest by the copy
//! engine, and copy.path is the copy engine's (local or direct); where it takes all, the path
//! is local_sm or direct_sm and sm_pieces is every piece.
struct strided_batch_plan {
  copy_plan copy;
  std::vector<strided_plan> pieces;
  std::size_t sm_pieces = 0;
};
strided_batch_plan plan_copy_peer_batch(int own, device dst_dev, device src_dev,
                                        const strided_piece* pieces, std::size_t count,
                                        const peer_limits& limits);

//! The strided SM kernel takes this shape: on a device where it runs, the ends, steps and width
//! aligned to sm_strided_alignment, and at most max_bytes or of rows at most
//! sm_strided_narrow_row wide (its units counted in 32 bits).
bool sm_strided_takes(const strided_plan& p, std::size_t max_bytes, const peer_limits& l) noexcept;

//! Blocks per piece of one batch launch of `pieces` pieces whose largest is
//! `largest` bytes: what the largest needs, the device's blocks shared out.
unsigned sm_batch_blocks(std::size_t largest, unsigned pieces, const peer_limits& limits) noexcept;

}  // namespace sluice::detail
