// Which way a copy goes, as sluice knows it from its own allocations (internal).
#pragma once

namespace sluice::gpu {

//! The traits map it to the vendor's memcpy kind. `unknown`: at least one side
//! is not sluice memory, so the vendor looks the pointers up (the Default kind).
enum class copy_kind { unknown, host_to_device, device_to_host, device_to_device, host_to_host };

}  // namespace sluice::gpu
