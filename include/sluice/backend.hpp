// sluice/backend.hpp: which backend this program links.
//
// Synopsis
//   enum class backend_kind { host, cuda, hip };
//   backend_kind backend() noexcept;
//   const char*  backend_name() noexcept;      // "host", "cuda", "hip"
//   std::string  backend_version();            // runtime / driver versions, human-readable
#pragma once

#include <string>

namespace sluice {

enum class backend_kind { host, cuda, hip };

//! The backend this program links (exactly one per program).
backend_kind backend() noexcept;
//! "host", "cuda" or "hip".
const char* backend_name() noexcept;
//! Versions of the backend's runtime and driver, e.g. "CUDA runtime 13.0, driver 13.0";
//! for the host backend its configuration ("2 simulated devices x 2 slots").
//! Throws sluice::error if the backend cannot start (e.g. a bad SLUICE_HOST_DEVICES).
std::string backend_version();

}  // namespace sluice
