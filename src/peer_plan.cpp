#include "peer_plan.hpp"

#include "checks.hpp"

namespace sluice::detail {

copy_path plan_copy_peer(int own, void* dst, device dst_dev, const void* src, device src_dev,
                         std::size_t bytes) {
  constexpr const char* api = "sluice::copy_peer";
  if (own != dst_dev.id() && own != src_dev.id())
    fail(errc::invalid_argument, api, "the stream is on device ", own, ", neither the source (",
         src_dev.id(), ") nor the destination (", dst_dev.id(), ")");
  copy_path path = copy_path::local;
  if (dst_dev != src_dev) {
    const int other = own == src_dev.id() ? dst_dev.id() : src_dev.id();
    path = peer_access_enabled(device(own), device(other)) ? copy_path::direct : copy_path::staged;
  }
  if (bytes > 0) check_copy_ranges(dst, src, bytes, api);
  return path;
}

}  // namespace sluice::detail
