// What every backend does the same way around a host function (HOST-4). Internal.
#pragma once

#include <sluice/detail/host_task.hpp>

#include <optional>
#include <string>
#include <vector>

namespace sluice::detail {

//! Runs the task; the message of what it threw, or nothing when it returned.
std::optional<std::string> run_host_task(host_task& task) noexcept;

//! Throws errc::host_function_failed naming the device and every message
//! (the first, then "and N more host-function failures: [...]"). `failures`
//! must not be empty.
[[noreturn]] void throw_host_function_failures(int device,
                                               const std::vector<std::string>& failures);

//! Nothing is lost: failures that no ready()/synchronize() reported before
//! their stream was destroyed go to stderr, one line each, naming the device.
void print_unreported_failures(int device, const std::vector<std::string>& failures) noexcept;

}  // namespace sluice::detail
