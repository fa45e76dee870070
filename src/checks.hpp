// Backend-neutral argument checks and error construction (internal).
// Every check runs before anything is enqueued (ERR-4).
#pragma once

#include <sluice/error.hpp>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace sluice::detail {

//! Builds the message from the streamable parts and throws sluice::error.
//! `api` is the sluice operation ("sluice::copy") or the failing vendor call.
template <class... Parts>
[[noreturn]] void fail(errc code, const char* api, Parts&&... parts) {
  std::ostringstream out;
  out << api << ": ";
  (out << ... << std::forward<Parts>(parts));
  throw error(code, out.str(), 0, api, false);
}

//! errc::invalid_argument for a null pointer with a non-zero size, or a range
//! whose end does not fit in the address space. `what` names the argument.
void check_pointer_range(const void* p, std::size_t bytes, const char* api, const char* what);

//! errc::invalid_argument when [a, a+bytes) and [b, b+bytes) overlap.
void check_no_overlap(const void* a, const void* b, std::size_t bytes, const char* api);

//! Throws the error check_copy_devices found (out of line: the cold path).
[[noreturn]] void fail_copy_devices(int stream_device, int dst_device, int src_device,
                                    const char* api);

//! `copy` stays on its stream's device: each side is host memory (-1) or
//! memory of that device, else errc::invalid_argument, before anything is
//! enqueued. The vendors differ there (CUDA rejects pool memory of a device
//! other than the current one; the host backend would copy), and between
//! devices copy_peer moves the bytes and reports the path it took.
inline void check_copy_devices(int stream_device, int dst_device, int src_device,
                               const char* api) {
  if ((dst_device >= 0 && dst_device != stream_device) ||
      (src_device >= 0 && src_device != stream_device)) [[unlikely]]
    fail_copy_devices(stream_device, dst_device, src_device, api);
}

//! Throws the error check_copy_ranges found (out of line: the cold path).
[[noreturn]] void fail_copy_ranges(const void* dst, const void* src, std::size_t bytes,
                                   const char* api);

//! The checks of every copy: both ranges valid (check_pointer_range) and not
//! overlapping. Inline, and without a call on success: every copy pays it.
inline void check_copy_ranges(const void* dst, const void* src, std::size_t bytes,
                              const char* api) {
  if (bytes == 0) return;
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  const std::uintptr_t last = bytes - 1;
  const bool ok = d != 0 && s != 0 && last <= UINTPTR_MAX - d && last <= UINTPTR_MAX - s &&
                  !(d < s + bytes && s < d + bytes);
  if (!ok) [[unlikely]]
    fail_copy_ranges(dst, src, bytes, api);
}

}  // namespace sluice::detail
