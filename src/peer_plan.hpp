// The backend-neutral part of copy_peer (PEER-2): argument checks and the path. Internal.
#pragma once

#include <sluice/peer.hpp>

#include <cstddef>

namespace sluice::detail {

//! Checks a copy_peer ordered on a stream of device `own` (it must be the source's
//! or the destination's device; non-zero sizes need valid, non-overlapping ranges)
//! and returns its path: local on one device, direct when `own` has peer access
//! to the other device, staged otherwise. A range in a sluice allocation must
//! lie in it and be memory of its stated device; memory sluice did not allocate
//! is rejected when `only_sluice_memory` (the host backend, which knows all of
//! its device memory). Throws errc::invalid_argument.
copy_path plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes, bool only_sluice_memory);

//! copy_peer_batch's checks: pieces is null only when count is 0; each piece as
//! plan_copy_peer checks it; no piece's destination overlaps any other piece's
//! source or destination. Returns the path and the total of the bytes.
copy_path plan_copy_peer_batch(int own, device dst_dev, device src_dev, const peer_piece* pieces,
                               std::size_t count, bool only_sluice_memory,
                               std::size_t* total_bytes);

}  // namespace sluice::detail
