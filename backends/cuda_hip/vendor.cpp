// The errors of vendor calls and the scoped current device (vendor.hpp).
#include "vendor.hpp"

#include <string>

namespace sluice::detail {

void vendor_fail(api::status s, const std::string& context) {
  bool sticky = false;
  const errc code = api::classify(s.code, &sticky);
  // The runtime keeps the error as the thread's last error; a recoverable one
  // must not surface again at an unrelated later call (ERR-3).
  if (!sticky) api::clear_last_error();
  std::string message = context;
  message += ": ";
  message += s.api;
  message += " failed: ";
  message += api::error_string(s.code);
  message += " (";
  message += api::error_name(s.code);
  message += ", ";
  message += std::to_string(static_cast<int>(s.code));
  message += ")";
  if (sticky) message += "; the device context is unusable, restart the process";
  throw error(code, message, static_cast<int>(s.code), s.api, sticky);
}

scoped_device::scoped_device(int d) {
  int current = 0;
  check(api::get_device(&current), "sluice: reading the current device");
  if (current != d) {
    check(api::set_device(d), "sluice: selecting device ", d);
    previous_ = current;
  }
}

scoped_device::~scoped_device() {
  if (previous_ >= 0) (void)api::set_device(previous_);
}

}  // namespace sluice::detail
