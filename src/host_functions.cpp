#include "host_functions.hpp"

#include <sluice/error.hpp>

#include <cstdio>
#include <exception>

namespace sluice::detail {

std::optional<std::string> run_host_task(host_task& task) noexcept {
  try {
    task.run();
    return std::nullopt;
  } catch (const std::exception& e) {
    try {
      return std::string(e.what());
    } catch (...) {
      return std::string("out of memory");  // short: fits the string without allocating
    }
  } catch (...) {
    return std::string("an exception not derived from std::exception");
  }
}

void throw_host_function_failures(int device, const std::vector<std::string>& failures) {
  std::string message = "sluice::stream: a host function on device " + std::to_string(device) +
                        " threw: " + failures.front();
  if (failures.size() > 1) {
    message += " (and " + std::to_string(failures.size() - 1) + " more host-function failures:";
    for (std::size_t i = 1; i < failures.size(); ++i) message += " [" + failures[i] + "]";
    message += ")";
  }
  throw error(errc::host_function_failed, message, 0, "sluice::stream_ref::host_func");
}

void print_unreported_failures(int device, const std::vector<std::string>& failures) noexcept {
  for (const auto& message : failures)
    std::fprintf(stderr, "sluice: a host function failed on a destroyed stream of device %d: %s\n",
                 device, message.c_str());
  std::fflush(stderr);
}

}  // namespace sluice::detail
