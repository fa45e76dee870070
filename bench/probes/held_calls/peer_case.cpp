// sluice-probe-held-calls: peer access enabled and disabled while one stream
// is held (cases.hpp).
#include "cases.hpp"

namespace held_calls {

//! Peer access from the probe's device to another, enabled and disabled.
results peer(probe_env& env) {
  if (env.devices < 2) return {skipped("peer", "one device")};
  const int d = env.opt.device;
  const int other = d == 0 ? 1 : 0;
  fresh_context(env, {d, other});
  int can = 0;
  check(cudaDeviceCanAccessPeer(&can, d, other), "cudaDeviceCanAccessPeer");
  if (can == 0)
    return {skipped(
        "peer", "device " + std::to_string(d) + " cannot access device " + std::to_string(other))};
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "peer",
                  "cudaDeviceCanAccessPeer+cudaDeviceEnablePeerAccess+cudaDeviceDisablePeerAccess("
                  "device_" +
                      std::to_string(d) + "_to_" + std::to_string(other) + ")",
                  env.opt.count, [&](int, vendor& v) {
                    int ok = 0;
                    v.call("cudaDeviceCanAccessPeer",
                           [&] { return cudaDeviceCanAccessPeer(&ok, d, other); });
                    if (v.call("cudaDeviceEnablePeerAccess",
                               [&] { return cudaDeviceEnablePeerAccess(other, 0); }))
                      v.call("cudaDeviceDisablePeerAccess",
                             [&] { return cudaDeviceDisablePeerAccess(other); });
                  });
  }
  return {r};
}

}  // namespace held_calls
