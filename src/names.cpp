// Names of the public enumerations.
#include <sluice/error.hpp>
#include <sluice/peer.hpp>

namespace sluice {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::invalid_device: return "invalid_device";
    case errc::invalid_handle: return "invalid_handle";
    case errc::not_ready: return "not_ready";
    case errc::not_supported: return "not_supported";
    case errc::peer_access_unavailable: return "peer_access_unavailable";
    case errc::out_of_memory: return "out_of_memory";
    case errc::device_fault: return "device_fault";
    case errc::host_function_failed: return "host_function_failed";
    case errc::backend_failure: return "backend_failure";
    case errc::comm_failure: return "comm_failure";
    case errc::capture_violation: return "capture_violation";
  }
  return "unknown";
}

const char* to_string(link_kind k) noexcept {
  switch (k) {
    case link_kind::same_device: return "same_device";
    case link_kind::nvlink: return "nvlink";
    case link_kind::xgmi: return "xgmi";
    case link_kind::pcie: return "pcie";
    case link_kind::host_memory: return "host_memory";
    case link_kind::unknown: return "unknown";
  }
  return "unknown";
}

const char* to_string(copy_path p) noexcept {
  switch (p) {
    case copy_path::local: return "local";
    case copy_path::direct: return "direct";
    case copy_path::staged: return "staged";
    case copy_path::direct_sm: return "direct_sm";
    case copy_path::local_sm: return "local_sm";
  }
  return "unknown";
}

}  // namespace sluice
