// main() of the unit tests built per GPU backend (sluice-trace-tests-<backend>,
// sluice-diagnose-tests-<backend>): they need a device of that backend;
// without one the run exits 77 (ctest: skipped).
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (sluice::device_count() == 0) {
    std::printf("no %s device: these tests need one (skipped)\n", sluice::backend_name());
    return 77;
  }
  return RUN_ALL_TESTS();
}
