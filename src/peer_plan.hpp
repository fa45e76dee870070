// The backend-neutral part of copy_peer (PEER-2): argument checks and the path. Internal.
#pragma once

#include <sluice/peer.hpp>

#include <cstddef>

namespace sluice::detail {

//! Checks a copy_peer ordered on a stream of device `own` (it must be the source's
//! or the destination's device; non-zero sizes need valid, non-overlapping ranges)
//! and returns its path: local on one device, direct when `own` has peer access
//! to the other device, staged otherwise. Throws errc::invalid_argument.
copy_path plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes);

}  // namespace sluice::detail
