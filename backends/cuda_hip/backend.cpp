// The GPU backend's identity (include/sluice/backend.hpp): which backend this
// is, and the versions of sluice, the vendor's runtime and driver.
#include "engine.hpp"
#include "vendor.hpp"

#include <sluice/backend.hpp>
#include <sluice/version.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace sluice {

using detail::engine;

backend_kind backend() noexcept { return gpu::api::kind; }
const char* backend_name() noexcept { return gpu::api::name; }

namespace {

//! The kernel driver's version from the file the traits name; empty if none.
std::string kernel_driver_version() {
  std::ifstream in(gpu::api::kernel_driver_file);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  const std::string marker = gpu::api::kernel_driver_marker;
  std::size_t at = 0;
  if (!marker.empty()) {
    at = line.find(marker);
    if (at == std::string::npos) return {};
    at += marker.size();
  }
  // The first word after the marker that starts with a digit: the H100 machines
  // say "Open Kernel Module for x86_64  580.159.04  Release Build ...".
  std::istringstream words(line.substr(at));
  std::string word;
  while (words >> word)
    if (word[0] >= '0' && word[0] <= '9') return word;
  return {};
}

}  // namespace

std::string backend_version() {
  // The engine first: its start sets the runtime's environment
  // (prepare_runtime_environment: the hardware queue count, eager module
  // loading), which the runtime reads when it starts, before the version
  // calls below can start it. `sluice conformance` asks for this version
  // before anything else: with the version calls first, the variables came too
  // late for the whole process (tests/fake_cudart models the runtime's start).
  const int devices = engine().count;
  int runtime = 0;
  int driver = 0;
  std::string out =
      std::string("sluice ") + gpu::api::name + " backend " SLUICE_VERSION_STRING ": ";
  if (gpu::api::runtime_version(&runtime).ok())
    out += std::string(gpu::api::vendor) + " runtime " + gpu::api::version_string(runtime);
  const auto d = gpu::api::driver_version(&driver);
  if (d.ok() && driver > 0)
    out += ", driver API " + gpu::api::version_string(driver);
  else
    out += ", no driver";
  gpu::api::clear_last_error();
  if (const std::string k = kernel_driver_version(); !k.empty()) out += ", kernel driver " + k;
  out += ", " + std::to_string(devices) + " devices";
  return out;
}

}  // namespace sluice
