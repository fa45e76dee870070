// The backend programs sluice-<backend> next to the dispatcher: which were
// built, how many devices each reports (`info --device-count`, in a child
// process), and which one a command runs (docs/tool.md).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace sluice::tool {

//! No backend program to run, or none that can run: exit status 2.
struct dispatch_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

//! <directory>/sluice-<backend>.
std::string program_of(const std::string& directory, const std::string& backend);
bool is_built(const std::string& directory, const std::string& backend);

//! Runs `sluice-<backend> info --device-count` and returns what it printed,
//! or nothing when it failed (no driver, no device, a crash, no answer).
std::optional<int> device_count(const std::string& program);

//! The backend a command runs on, and why ("chosen by --backend").
struct backend_choice {
  std::string backend;
  std::string reason;
};

//! The first GPU backend built that has a device, else host. Throws
//! dispatch_error when no backend program is next to the dispatcher.
backend_choice default_backend(const std::string& directory);

//! `requested` (from `source`: "--backend", "SLUICE_BACKEND"), which must be
//! known and built; throws dispatch_error otherwise.
backend_choice chosen_backend(const std::string& directory, const std::string& requested,
                              const char* source);

//! `sluice backends`: each backend, built or not, its devices, and the default.
int list_backends(const std::string& directory, const std::optional<backend_choice>& requested);

}  // namespace sluice::tool
