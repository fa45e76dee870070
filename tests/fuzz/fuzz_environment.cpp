// libFuzzer target: the environment-variable parser (src/environment.cpp,
// integer_from_environment). The input's first 8 bytes choose the range
// [low, high] and the fallback; the rest (up to its first NUL) is the
// variable's value. Whatever the value, the parser returns the fallback for an
// empty value, an integer in [low, high] that is exactly the value's decimal
// text otherwise, or throws errc::invalid_argument naming the variable; it
// never crashes, leaks or reads past the value (run under ASan + UBSan).
//
//   clang++ -fsanitize=fuzzer,address,undefined ... (tests/fuzz/CMakeLists.txt)
//   fuzz_environment -max_total_time=60 [corpus dir]
#include "environment.hpp"

#include <sluice/error.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr const char* variable = "SLUICE_FUZZ_VALUE";

[[noreturn]] void broken(const char* what, const std::string& value) {
  std::fprintf(stderr, "fuzz_environment: %s (value '%s')\n", what, value.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::int32_t a = 0, b = 0;
  if (size >= 8) {
    std::memcpy(&a, data, 4);
    std::memcpy(&b, data + 4, 4);
    data += 8;
    size -= 8;
  } else {
    a = 1;
    b = 64;
  }
  const int low = a < b ? a : b;
  const int high = a < b ? b : a;
  const int fallback = low - (low > INT32_MIN ? 1 : 0);
  const std::string value(reinterpret_cast<const char*>(data),
                          strnlen(reinterpret_cast<const char*>(data), size));
  // putenv on a buffer of our own: setenv would keep every old value (glibc).
  static std::string entry;
  entry = std::string(variable) + "=" + value;
  if (::putenv(entry.data()) != 0) return 0;
  try {
    const int got = sluice::detail::integer_from_environment(variable, fallback, low, high);
    if (value.empty()) {
      if (got != fallback) broken("an empty value did not give the fallback", value);
      return 0;
    }
    if (got < low || got > high) broken("a value out of range was accepted", value);
    char* end = nullptr;
    errno = 0;
    const long expected = std::strtol(value.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || end == value.c_str() || expected != got)
      broken("the value returned is not the value's integer", value);
  } catch (const sluice::error& e) {
    if (e.code() != sluice::errc::invalid_argument) broken("not invalid_argument", value);
    if (std::strstr(e.what(), variable) == nullptr) broken("the message lacks the name", value);
    if (value.empty()) broken("an empty value was rejected", value);
  }
  return 0;
}
