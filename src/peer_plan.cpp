#include "peer_plan.hpp"

#include "checks.hpp"
#include "range_map.hpp"

namespace sluice::detail {

namespace {

//! One end of the copy: sluice memory must be device memory of `device`; other
//! memory is rejected when the backend knows all device memory (host).
void check_end(const range_lookup& l, std::size_t bytes, int device, bool only_sluice_memory,
               const char* what) {
  constexpr const char* api = "sluice::copy_peer";
  check_no_overrun(l, bytes, api, what);
  if (l.owner == nullptr) {
    if (only_sluice_memory)
      fail(errc::invalid_argument, api, what, " is not device memory (expected memory of device ",
           device, ")");
    return;
  }
  if (l.device < 0)
    fail(errc::invalid_argument, api, what, " is pinned host memory, not memory of device ",
         device);
  if (l.device != device)
    fail(errc::invalid_argument, api, what, " is memory of device ", l.device, ", not of device ",
         device);
}

}  // namespace

copy_path plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes, bool only_sluice_memory) {
  constexpr const char* api = "sluice::copy_peer";
  if (own != dst_dev.id() && own != src_dev.id())
    fail(errc::invalid_argument, api, "the stream is on device ", own, ", neither the source (",
         src_dev.id(), ") nor the destination (", dst_dev.id(), ")");
  copy_path path = copy_path::local;
  if (dst_dev != src_dev) {
    const int other = own == src_dev.id() ? dst_dev.id() : src_dev.id();
    path = peer_access_enabled(device(own), device(other)) ? copy_path::direct : copy_path::staged;
  }
  if (bytes > 0) {
    check_copy_ranges(dst, src, bytes, api);
    const auto [d, from] = allocations().find(dst, src, bytes);
    check_end(d, bytes, dst_dev.id(), only_sluice_memory, "dst");
    check_end(from, bytes, src_dev.id(), only_sluice_memory, "src");
  }
  return path;
}

}  // namespace sluice::detail
