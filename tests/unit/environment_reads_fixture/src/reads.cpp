// A source that ctest unit.environment_reads.fixture scans (never compiled):
// the scanner must find exactly the five reads marked "read" and none of the
// rest, which only look like reads (see environment_reads.cpp).
#include "environment.hpp"

#include <cstdlib>
#include <functional>

extern char** environ;  // read

struct input {
  std::function<const char*(const char*)> getenv;
};

int fixture(const input& in) {
  const char* a = std::getenv("SLUICE_FIXTURE_A");                                      // read
  const char* b = ::secure_getenv("SLUICE_FIXTURE_B");                                  // read
  const int c = sluice::detail::integer_from_environment("SLUICE_FIXTURE_C", 0, 0, 1);  // read
  const auto f = &std::getenv;                                                          // read
  // Not reads: a comment that says std::getenv("X"), a string, a member.
  const char* d = in.getenv ? in.getenv("SLUICE_FIXTURE_D") : nullptr;
  const char* e = "std::getenv(\"SLUICE_FIXTURE_E\") and environ";
  /* integer_from_environment("SLUICE_FIXTURE_F", 0, 0, 1) */
  return (a != nullptr) + (b != nullptr) + c + (d != nullptr) + (e != nullptr) + (f != nullptr);
}
