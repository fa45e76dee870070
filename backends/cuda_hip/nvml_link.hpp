// The kind of a peer link on NVIDIA GPUs, from NVML: the CUDA runtime does not
// say whether a peer link is NVLink or PCIe, nvmlDeviceGetP2PStatus with the
// NVLink index does. Used by the traits of the two NVIDIA platforms
// (cuda_api.hpp, and hip_api.hpp on HIP's NVIDIA platform). NVML is the
// driver's library, loaded at run time (libnvidia-ml.so.1), so sluice links and
// starts without it; without it the link is unknown. Devices are matched by PCI
// bus id, which CUDA_VISIBLE_DEVICES does not change.
#pragma once

#include <sluice/peer.hpp>

#include <dlfcn.h>

namespace sluice::gpu::nvml {

//! The few NVML entry points link_between needs, found with dlopen/dlsym once.
struct library {
  using init_fn = int (*)();
  using by_bus_id_fn = int (*)(const char*, void**);
  using p2p_status_fn = int (*)(void*, void*, int, int*);
  bool ok = false;
  by_bus_id_fn by_bus_id = nullptr;
  p2p_status_fn p2p_status = nullptr;
  static const library& get() noexcept {
    static const library n = [] {
      library r;
      void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) return r;
      const auto init = reinterpret_cast<init_fn>(dlsym(lib, "nvmlInit_v2"));
      r.by_bus_id = reinterpret_cast<by_bus_id_fn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
      r.p2p_status = reinterpret_cast<p2p_status_fn>(dlsym(lib, "nvmlDeviceGetP2PStatus"));
      r.ok = init != nullptr && r.by_bus_id != nullptr && r.p2p_status != nullptr && init() == 0;
      return r;  // the library stays loaded: NVML handles live as long as the process
    }();
    return n;
  }
};

//! The link between the devices with these PCI bus ids (as the runtime's
//! DeviceGetPCIBusId writes them); unknown without NVML or for an unknown id.
inline link_kind link_between(const char* bus_a, const char* bus_b) noexcept {
  const library& n = library::get();
  if (!n.ok) return link_kind::unknown;
  void* a = nullptr;
  void* b = nullptr;
  if (n.by_bus_id(bus_a, &a) != 0 || n.by_bus_id(bus_b, &b) != 0) return link_kind::unknown;
  int status = -1;
  constexpr int caps_index_nvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
  if (n.p2p_status(a, b, caps_index_nvlink, &status) != 0) return link_kind::unknown;
  return status == 0 /* NVML_P2P_STATUS_OK */ ? link_kind::nvlink : link_kind::pcie;
}

}  // namespace sluice::gpu::nvml
