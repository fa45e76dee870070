#include "checks.hpp"

#include <sluice/memory.hpp>

#include <limits>

namespace sluice::detail {

std::size_t checked_bytes(std::size_t count, std::size_t element_size, const char* operation) {
  if (element_size != 0 && count > std::numeric_limits<std::size_t>::max() / element_size)
    fail(errc::invalid_argument, operation, count, " elements of ", element_size,
         " bytes overflow the size type");
  return count * element_size;
}

void throw_moved_from(const char* operation) {
  fail(errc::invalid_handle, operation, "the buffer is empty (moved from)");
}

void check_pointer_range(const void* p, std::size_t bytes, const char* api, const char* what) {
  if (bytes == 0) return;
  if (p == nullptr)
    fail(errc::invalid_argument, api, what, " is null but the size is ", bytes, " bytes");
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  if (bytes - 1 > std::numeric_limits<std::uintptr_t>::max() - begin)
    fail(errc::invalid_argument, api, what, " + ", bytes, " bytes overflows the address space");
}

void check_no_overlap(const void* a, const void* b, std::size_t bytes, const char* api) {
  if (bytes == 0) return;
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  if (x < y + bytes && y < x + bytes)
    fail(errc::invalid_argument, api, "source and destination ranges of ", bytes, " bytes overlap");
}

void fail_copy_devices(int stream_device, int dst_device, int src_device, const char* api) {
  const bool dst_elsewhere = dst_device >= 0 && dst_device != stream_device;
  fail(errc::invalid_argument, api, dst_elsewhere ? "dst" : "src", " is memory of device ",
       dst_elsewhere ? dst_device : src_device, " and the stream is of device ", stream_device,
       ": copy stays on its stream's device; between devices use sluice::copy_peer");
}

void fail_copy_ranges(const void* dst, const void* src, std::size_t bytes, const char* api) {
  // The same checks one by one, for the message of the first that fails.
  check_pointer_range(dst, bytes, api, "dst");
  check_pointer_range(src, bytes, api, "src");
  check_no_overlap(dst, src, bytes, api);
  fail(errc::invalid_argument, api, "invalid ranges");  // not reached: one of the checks threw
}

}  // namespace sluice::detail
