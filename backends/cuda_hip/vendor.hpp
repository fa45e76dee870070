// The vendor API of this build and its errors. The GPU backend (sluice::cuda
// and sluice::hip) is one implementation written against a vendor API traits
// type, `api` (cuda_api.hpp / hip_api.hpp, chosen by the build through
// SLUICE_GPU_API_HEADER and SLUICE_GPU_API). Nothing in backends/cuda_hip/*.cpp
// names a vendor; every difference lives in the traits.
#pragma once

#include SLUICE_GPU_API_HEADER

// Before the alias below, which their inline code would otherwise shadow
// (parameters and locals named `api`: -Wshadow).
#include "backend_rules.hpp"
#include "checks.hpp"
#include "diagnose.hpp"

#include <sstream>
#include <string>
#include <utility>

namespace sluice::gpu {
using api = SLUICE_GPU_API;
}

namespace sluice::detail {

using gpu::api;

//! Throws the sluice::error for a failed vendor call: portable code, vendor
//! code and name, the call, and `context` (operation and devices).
[[noreturn]] void vendor_fail(api::status s, const std::string& context);

template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

//! Throws unless s succeeded. The message parts are formatted only on failure.
template <class... Parts>
inline void check(api::status s, Parts&&... parts) {
  if (!s.ok()) [[unlikely]]
    vendor_fail(s, concat(std::forward<Parts>(parts)...));
}

//! Sets the calling thread's current device for a scope and restores it (XDEV-2).
class scoped_device {
 public:
  explicit scoped_device(int d);
  ~scoped_device();
  scoped_device(const scoped_device&) = delete;
  scoped_device& operator=(const scoped_device&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace sluice::detail
