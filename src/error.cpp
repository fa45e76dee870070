#include <sluice/error.hpp>

#include <utility>

namespace sluice {

error::error(errc code, const std::string& message, int native_code, const char* api, bool sticky)
    : std::runtime_error(message),
      code_(code),
      native_code_(native_code),
      api_(api != nullptr ? api : ""),
      sticky_(sticky) {}

}  // namespace sluice
