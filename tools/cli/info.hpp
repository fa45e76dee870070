// `sluice info`: what the linked backend sees on this machine.
#pragma once

namespace sluice::tool {

struct info_options {
  bool device_count_only = false;  //!< print only the device count (the dispatcher asks this)
};

//! Prints backend, devices, priority ranges and mappings, stream limits and
//! the link matrix. Throws sluice::error when the backend cannot start.
int run_info(const info_options& options);

}  // namespace sluice::tool
