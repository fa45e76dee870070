// The machine facts that `sluice info` and `sluice conformance` print first:
// which backend, which devices, which build, when.
#pragma once

#include <ctime>
#include <iosfwd>
#include <string>
#include <vector>

namespace sluice::tool {

struct machine_facts {
  std::string sluice_version;             //!< "0.1.0"
  std::string compiler;                   //!< "g++ 12.2.0"
  std::string backend;                    //!< "host"
  std::string backend_version;            //!< sluice::backend_version()
  std::vector<std::string> device_names;  //!< index = device id
  //! Why there is no device, when there is none: "no CUDA device (no CUDA driver)"
  std::string no_device_reason;
  std::string machine;   //!< "Linux 6.1.0 x86_64, 16 CPUs"
  std::time_t when = 0;  //!< when the facts were collected
};

//! Asks the linked backend. Throws sluice::error when the backend cannot start.
machine_facts collect_facts();

//! "2025-11-22 03:04:05 UTC"
std::string utc_date(std::time_t when);
//! "2025-11-22T03:04:05Z" (ISO 8601, for JUnit)
std::string iso_date(std::time_t when);

//! "2: [0] NVIDIA H200, [1] NVIDIA H200"; without a device "none usable: <reason>"
std::string device_list(const machine_facts& facts);

//! The facts as aligned "  key: value" lines.
void print_facts(std::ostream& out, const machine_facts& facts);

}  // namespace sluice::tool
