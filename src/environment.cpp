#include "environment.hpp"

#include "checks.hpp"

#include <cerrno>
#include <cstdlib>

namespace sluice::detail {

int integer_from_environment(const char* name, int fallback, int low, int high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high)
    fail(errc::invalid_argument, "sluice (environment)", name, "='", text,
         "' is not an integer in ", low, "..", high);
  return static_cast<int>(value);
}

}  // namespace sluice::detail
