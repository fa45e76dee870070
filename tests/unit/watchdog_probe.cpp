// A program whose one test outlasts the conformance watchdog
// (tests/conformance/watchdog.hpp): ctest unit.watchdog runs it with a 1 s
// limit and expects exit 124 and the test named on stderr.
#include "watchdog.hpp"

#include <gtest/gtest.h>

#include <chrono>

TEST(WatchdogProbe, RunsLongerThanTheLimit) {
  // 5 s of host time, measured (busy): the watchdog must stop the process first.
  const auto from = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - from < std::chrono::seconds(5)) {
  }
  ADD_FAILURE() << "the watchdog did not stop the run";
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  sluice::conformance::install_watchdog();
  return RUN_ALL_TESTS();
}
