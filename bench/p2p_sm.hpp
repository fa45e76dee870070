// The raw SM copy kernel of sluice-bench-p2p-<backend> (p2p_sm.cu).
#pragma once

#include <sluice/native.hpp>

#include <cstddef>

//! Copies `bytes` (a multiple of 16, both ends 16-byte aligned) with a
//! grid-stride kernel of 16-byte vectors on s; the vendor's error code of the
//! launch (0: launched).
int raw_sm_copy(void* dst, const void* src, std::size_t bytes, sluice::native_stream_t s,
                int multiprocessors);
