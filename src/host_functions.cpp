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

namespace {

std::string describe(int device, const stream_failure& f) {
  if (f.code == errc::host_function_failed)
    return "a host function on device " + std::to_string(device) + " threw: " + f.message;
  return f.message;
}

}  // namespace

void stream_failures::add(errc code, std::string message) {
  std::lock_guard<std::mutex> lock(m_);
  list_.push_back(stream_failure{code, std::move(message)});
  if (code == errc::comm_failure) has_comm_.store(true, std::memory_order_release);
  has_.store(true, std::memory_order_release);
}

std::vector<stream_failure> stream_failures::take() {
  std::vector<stream_failure> taken;
  std::lock_guard<std::mutex> lock(m_);
  taken.swap(list_);
  has_.store(false, std::memory_order_relaxed);
  has_comm_.store(false, std::memory_order_relaxed);
  return taken;
}

void stream_failures::rethrow(int device) {
  if (!any()) return;
  std::vector<stream_failure> taken = take();
  if (taken.empty()) return;
  const stream_failure& first = taken.front();
  std::string message = "sluice::stream: " + describe(device, first);
  if (taken.size() > 1) {
    message += " (and " + std::to_string(taken.size() - 1) + " more failures:";
    for (std::size_t i = 1; i < taken.size(); ++i)
      message += " [" + std::string(to_string(taken[i].code)) + ": " +
                 describe(device, taken[i]) + "]";
    message += ")";
  }
  throw error(first.code, message, 0,
              first.code == errc::host_function_failed ? "sluice::stream_ref::host_func"
                                                       : "sluice::comm");
}

void stream_failures::rethrow_comm(int device) {
  if (!has_comm_.load(std::memory_order_acquire)) return;
  rethrow(device);
}

void stream_failures::print_unreported(int device) noexcept {
  if (!any()) return;
  std::vector<stream_failure> taken;
  try {
    taken = take();
  } catch (...) {
    return;
  }
  for (const auto& f : taken)
    std::fprintf(stderr, "sluice: %s failed on a destroyed stream of device %d (%s): %s\n",
                 f.code == errc::host_function_failed ? "a host function" : "an operation", device,
                 to_string(f.code), f.message.c_str());
  std::fflush(stderr);
}

}  // namespace sluice::detail
