// The vendor's own calls on a native stream, for the NAT rules: work that
// sluice does not see. On the host backend the native API is sluice itself (a
// host stream has no other), so "native" work goes through a second borrow.
#pragma once

#include <sluice/device.hpp>
#include <sluice/native.hpp>

#include <cstddef>
#include <vector>

namespace sluice::conformance {

//! Fills n bytes at p with v on the native stream s of device d, through the
//! vendor's API (cudaMemsetAsync, hipMemsetAsync); returns at once.
void native_fill(sluice::device d, native_stream_t s, void* p, unsigned char v, std::size_t n);

//! Synchronizes the native stream s through the vendor's API
//! (cudaStreamSynchronize, hipStreamSynchronize): the vendor's error code (0:
//! none). On the host backend there is no such call: always 0.
int native_synchronize(native_stream_t s);

//! Begins and ends the vendor's own stream capture of the native stream s
//! (relaxed mode; the graph is destroyed at the end): a library's capture of a
//! stream that sluice borrowed. The vendor's error code (0: none); -1 on the
//! host backend, which has no vendor capture.
int native_begin_capture(native_stream_t s);
int native_end_capture(native_stream_t s);

//! The device's stream priority range as the vendor's own query gives it
//! (cudaDeviceGetStreamPriorityRange, hipDeviceGetStreamPriorityRange); the
//! host backend's documented range (least 1, greatest -1) there.
void native_priority_range(sluice::device d, int* least, int* greatest);

//! The native streams that synchronize implicitly with others: the null
//! stream and the vendor's default streams (CUDA: legacy and per-thread).
std::vector<native_stream_t> default_native_streams();

}  // namespace sluice::conformance
